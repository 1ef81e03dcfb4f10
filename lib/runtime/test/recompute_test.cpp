// Activation recomputation run for real (docs/step-program.md, RECOMPUTE): ranks as
// threads, float64, a few SGD steps with momentum; every plan with --recompute full must
// give the parameters of one rank that recomputes nothing, to 1e-9 (the
// recomputed forward draws the same dropout masks, keyed by sample and layer, and BatchNorm's
// running statistics are updated once).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "burst/cost/analytic.h"
#include "burst/cost/network.h"
#include "burst/graph/zoo.h"
#include "burst/plan/plan.h"
#include "burst/planner/parallel_shape.h"
#include "burst/program/step_program.h"
#include "in_process_communicator.h"
#include "threaded_training.h"

// Its own namespace: a unity build compiles it with the other runtime tests.
namespace burst::runtime::recompute_test {
namespace {

using testing::InProcessWorld;
using testing::tiny_gpt2;

constexpr int kSteps = 4;
constexpr int64_t kBatch = 8;

ExecutorOptions float64_options(cost::Recompute recompute) {
  ExecutorOptions options = testing::sgd_with_momentum(11, 0.05);
  options.dtype = torch::kFloat64;
  options.program.recompute = recompute;
  return options;
}

// The largest relative parameter difference of `plan` under `recompute` from one rank
// without recomputation; the plan's program must recompute something.
double error_against_one_rank(const graph::Graph& graph, const plan::Plan& plan, cost::Recompute recompute) {
  const ExecutorOptions options = float64_options(recompute);
  EXPECT_GT(testing::checked_op_count(graph, plan, options.program, program::OpKind::Recompute), 0);
  InProcessWorld one(1, std::chrono::seconds(60));
  const auto expected = testing::train_threads(graph, plan::plan_data_parallel(graph, 1, kBatch), kSteps, one,
                                               float64_options(cost::Recompute::None),
                                               testing::random_batches(graph, kBatch))
                            .first;
  InProcessWorld world(plan.devices, std::chrono::seconds(60));
  const auto actual =
      testing::train_threads(graph, plan, kSteps, world, options, testing::random_batches(graph, kBatch)).first;
  return testing::largest_relative_error(expected, actual);
}

TEST(RecomputeRuntime, Gpt2DataParallelWithFullRecomputationEqualsOneRank) {
  const plan::Plan plan = plan::plan_data_parallel(tiny_gpt2(), 2, kBatch);
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), plan, cost::Recompute::Full), 1e-9);
}

TEST(RecomputeRuntime, Gpt2ThreeDPlanWithFullRecomputationEqualsOneRank) {
  // Tensor parallel 2 x 2 pipeline stages x 1 group, micro-batches of 4 (2 of them), 1F1B:
  // the 3-D search's plan layout (planner::plan_shape), recomputed unit by unit.
  const cost::AnalyticCostModel cost(cost::catalog_device("a100"));
  const cost::NetworkModel network(cluster::builtin_cluster("cpu", 4));
  const plan::PlanContext context{tiny_gpt2(), cost, network};
  const plan::Plan plan = planner::plan_shape(context, kBatch, planner::ParallelShape{2, 2, 1, 4});
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), plan, cost::Recompute::Full), 1e-9);
}

TEST(RecomputeRuntime, CnnWithBatchNormAndFullRecomputationEqualsOneRank) {
  const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  const plan::Plan plan = plan::plan_data_parallel(graph, 2, kBatch);
  EXPECT_LT(error_against_one_rank(graph, plan, cost::Recompute::Full), 1e-9);
}

// bf16 mixed precision (autocast, fp32 master weights): a plan against one rank at bf16. The
// two compute the same products on the same samples but round at different places (16-bit
// activations cross ranks as float32, so a consumer on another rank reads exact copies and
// computes its element-wise ops in float32 where one rank computes them in bf16), so they
// agree to a floor, not bitwise. The floor is printed, bounded, and must stay below what bf16
// itself changes: one bf16 rank against one fp32 rank.
testing::Parameters one_rank(const graph::Graph& graph, cost::Precision precision) {
  ExecutorOptions options = testing::sgd_with_momentum(11, 0.05);
  options.program.precision = precision;
  InProcessWorld one(1, std::chrono::seconds(60));
  return testing::train_threads(graph, plan::plan_data_parallel(graph, 1, kBatch), kSteps, one, options,
                                testing::random_batches(graph, kBatch))
      .first;
}

double bf16_error(const graph::Graph& graph, const plan::Plan& plan) {
  ExecutorOptions options = testing::sgd_with_momentum(11, 0.05);
  options.program.precision = cost::Precision::Bf16;
  const testing::Parameters expected = one_rank(graph, cost::Precision::Bf16);
  const double precision_gap = testing::largest_relative_error(one_rank(graph, cost::Precision::Fp32), expected);
  InProcessWorld world(plan.devices, std::chrono::seconds(60));
  const auto actual =
      testing::train_threads(graph, plan, kSteps, world, options, testing::random_batches(graph, kBatch)).first;
  std::string worst;
  const double error = testing::largest_relative_error(expected, actual, &worst);
  std::cout << "  bf16, " << plan.devices << " ranks: largest relative parameter error " << error << " (" << worst
            << "); one bf16 rank against one fp32 rank: " << precision_gap << "\n";
  EXPECT_LT(error, precision_gap);
  return error;
}

TEST(MixedPrecisionRuntime, Gpt2Bf16DataParallelEqualsOneBf16Rank) {
  EXPECT_LT(bf16_error(tiny_gpt2(), plan::plan_data_parallel(tiny_gpt2(), 2, kBatch)), 1e-2);
}

TEST(MixedPrecisionRuntime, Gpt2Bf16ThreeDPlanEqualsOneBf16RankToAFloor) {
  const cost::AnalyticCostModel cost(cost::catalog_device("a100"));
  const cost::NetworkModel network(cluster::builtin_cluster("cpu", 4));
  const plan::PlanContext context{tiny_gpt2(), cost, network};
  const plan::Plan plan = planner::plan_shape(context, kBatch, planner::ParallelShape{2, 2, 1, 4});
  EXPECT_LT(bf16_error(tiny_gpt2(), plan), 5e-2);
}

}  // namespace
}  // namespace burst::runtime::recompute_test
