// Gradient clipping by the global norm (gradient_norm.h) in the executor: ranks as threads,
// float64. The norm is over every parameter of the model, however the plan places, splits
// and shards it, so clipping on any plan gives one rank's parameters to 1e-9, and one rank's
// clipped step is its unclipped step scaled by clip / (norm + 1e-6), as torch's
// clip_grad_norm_ makes it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "burst/cost/analytic.h"
#include "burst/cost/network.h"
#include "burst/plan/plan.h"
#include "burst/planner/parallel_shape.h"
#include "hand_plan.h"
#include "in_process_communicator.h"
#include "threaded_training.h"

// Its own namespace: a unity build compiles it with the other runtime tests.
namespace burst::runtime::clip_test {
namespace {

using testing::InProcessWorld;
using testing::tiny_gpt2;

constexpr int kSteps = 4;
constexpr int64_t kBatch = 8;
// Below every step's norm (GPT-2's is about 2-4 here): every step is clipped.
constexpr double kClip = 0.3;

ExecutorOptions options(double clip, int zero_stage = 0, double momentum = 0.9) {
  ExecutorOptions o;
  o.seed = 13;
  o.optimizer = OptimizerOptions{job::Optimizer::Sgd, 0.1, momentum, 0.0, {}};
  o.dtype = torch::kFloat64;
  o.program.clip_grad_norm = clip;
  o.program.zero_stage = zero_stage;
  return o;
}

std::pair<testing::Parameters, std::vector<StepResult>> train(const plan::Plan& plan, const ExecutorOptions& o,
                                                              int steps = kSteps) {
  InProcessWorld world(plan.devices, std::chrono::seconds(60));
  return testing::train_threads(tiny_gpt2(), plan, steps, world, o, testing::random_batches(tiny_gpt2(), kBatch));
}

plan::Plan one_rank() { return plan::plan_data_parallel(tiny_gpt2(), 1, kBatch); }

// Tensor parallel 2 x 2 pipeline stages x 2 replicas, 2 micro-batches, 1F1B: parts hold
// slices and copies, the tied embedding's weight lives on both stages, and under ZeRO each
// part's buckets are sharded over its 2 replicas.
plan::Plan three_d_plan() {
  const cost::AnalyticCostModel cost(cost::catalog_device("a100"));
  const cost::NetworkModel network(cluster::builtin_cluster("cpu", 8));
  const plan::PlanContext context{tiny_gpt2(), cost, network};
  return planner::plan_shape(context, kBatch, planner::ParallelShape{2, 2, 2, 2});
}

// The blocks on ranks 0-1 (5 + 3 samples), everything else on rank 2 alone: layers on one
// rank, layers on two with uneven shares, re-shards between them.
plan::Plan burst_like_plan() {
  using plan::testing::shard;
  std::vector<std::vector<cost::Shard>> shards;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(tiny_gpt2().size()); ++id) {
    const bool block = tiny_gpt2().layer(id).name.rfind("transformer.h.", 0) == 0;
    shards.push_back(block ? std::vector<cost::Shard>{shard(0, 0, 5), shard(1, 5, 8)}
                           : std::vector<cost::Shard>{shard(2, 0, kBatch)});
  }
  return plan::testing::hand_plan(tiny_gpt2(), 3, kBatch, shards);
}

TEST(ClipGradNormRuntime, OneRankStepIsTheUnclippedStepScaledByClipOverNorm) {
  // Plain SGD, one step: w1 = w0 - lr g unclipped, so g = (w0 - w1) / lr and its norm is
  // sqrt(sum g^2) over every parameter; clipped to c, w1' = w0 - lr g c / (norm + 1e-6).
  const testing::Parameters start = train(one_rank(), options(0, 0, 0.0), 0).first;
  const testing::Parameters unclipped = train(one_rank(), options(0, 0, 0.0), 1).first;
  double squares = 0;
  for (const auto& [name, w0] : start) squares += ((w0 - unclipped.at(name)) / 0.1).square().sum().item<double>();
  const double norm = std::sqrt(squares);
  ASSERT_GT(norm, 4 * kClip);
  const auto [clipped, results] = train(one_rank(), options(kClip, 0, 0.0), 1);
  EXPECT_NEAR(results[0].gradient_norm, norm, 1e-9 * norm);
  testing::Parameters expected;
  const double factor = kClip / (norm + 1e-6);
  for (const auto& [name, w0] : start) expected.emplace(name, w0 - (w0 - unclipped.at(name)) * factor);
  EXPECT_LT(testing::largest_relative_error(expected, clipped), 1e-12);
  // Without clipping the norm is not computed.
  EXPECT_TRUE(std::isnan(train(one_rank(), options(0, 0, 0.0), 1).second[0].gradient_norm));
}

TEST(ClipGradNormRuntime, ANormAboveTheClipLeavesTheStepAsItIs) {
  const testing::Parameters unclipped = train(one_rank(), options(0)).first;
  EXPECT_LT(testing::largest_relative_error(unclipped, train(one_rank(), options(1e6)).first), 1e-15);
}

TEST(ClipGradNormRuntime, DataParallelBurstTensorPipelineAndZeroPlansEqualOneRank) {
  const auto [expected, expected_results] = train(one_rank(), options(kClip));
  EXPECT_GT(testing::largest_relative_error(expected, train(one_rank(), options(0)).first), 1e-4);  // it clips
  struct Case {
    const char* name;
    plan::Plan plan;
    int zero_stage;
  };
  const std::vector<Case> cases{{"data parallel, 2 ranks", plan::plan_data_parallel(tiny_gpt2(), 2, kBatch), 0},
                                {"uneven burst-style, 3 ranks", burst_like_plan(), 0},
                                {"3-D (tensor, pipeline, data), 8 ranks", three_d_plan(), 0},
                                {"3-D under ZeRO 1", three_d_plan(), 1},
                                {"data parallel, 4 ranks, ZeRO 2", plan::plan_data_parallel(tiny_gpt2(), 4, kBatch), 2}};
  for (const Case& c : cases) {
    const program::ProgramOptions program = options(kClip, c.zero_stage).program;
    EXPECT_EQ(testing::checked_op_count(tiny_gpt2(), c.plan, program, program::OpKind::ClipGradNorm), c.plan.devices)
        << c.name;
    const auto [actual, results] = train(c.plan, options(kClip, c.zero_stage));
    std::string worst;
    const double error = testing::largest_relative_error(expected, actual, &worst);
    std::cout << "  " << c.name << ": largest relative error " << error << " (" << worst << ")\n";
    EXPECT_LT(error, 1e-9) << c.name;
    for (const StepResult& result : results) {  // every rank: the last step's global norm
      EXPECT_NEAR(result.gradient_norm, expected_results[0].gradient_norm, 1e-9 * expected_results[0].gradient_norm)
          << c.name;
    }
  }
}

}  // namespace
}  // namespace burst::runtime::clip_test
