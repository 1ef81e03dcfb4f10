// ZeRO stages 1 and 2 run for real (gradient_buckets.h): ranks as threads, float64. Each
// plan with --zero 1 or 2 must give the parameters of one rank without ZeRO, to 1e-9: the
// buckets' gradients are reduce-scattered, each member's optimizer updates its shard of the
// flat weights element by element (SGD with momentum and weight decay, Adam), and the
// updated shards are all-gathered. A checkpoint holds the optimizer state whole, as an
// unsharded run's, and resumes under another plan or stage.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "burst/cost/analytic.h"
#include "burst/cost/network.h"
#include "burst/graph/zoo.h"
#include "burst/plan/plan.h"
#include "burst/planner/parallel_shape.h"
#include "burst/program/step_program.h"
#include "in_process_communicator.h"
#include "threaded_training.h"

// Its own namespace: a unity build compiles it with the other runtime tests.
namespace burst::runtime::zero_test {
namespace {

using testing::InProcessWorld;
using testing::tiny_gpt2;

constexpr int kSteps = 4;
constexpr int64_t kBatch = 8;

ExecutorOptions float64_options(const std::string& optimizer, int zero_stage) {
  ExecutorOptions options = testing::sgd_with_momentum(11, 0.05);
  if (optimizer == "adam") options.optimizer = OptimizerOptions{job::Optimizer::Adam, 0.01, 0.0, 0.01, {}};
  if (optimizer == "sgd+decay") options.optimizer.weight_decay = 0.01;
  options.dtype = torch::kFloat64;
  options.program.zero_stage = zero_stage;
  return options;
}

const graph::Graph& fmnist_cnn() {
  static const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  return graph;
}

testing::Parameters train(const graph::Graph& graph, const plan::Plan& plan, const ExecutorOptions& options,
                          int steps = kSteps, const testing::RankHooks& hooks = {}) {
  InProcessWorld world(plan.devices, std::chrono::seconds(60));
  return testing::train_threads(graph, plan, steps, world, options, testing::random_batches(graph, kBatch), true, true,
                                hooks)
      .first;
}

// The largest relative parameter difference of `plan` under `zero_stage` from one rank
// without ZeRO; the plan's program must reduce-scatter something.
double error_against_one_rank(const graph::Graph& graph, const plan::Plan& plan, const std::string& optimizer,
                              int zero_stage, cost::Recompute recompute = cost::Recompute::None) {
  ExecutorOptions options = float64_options(optimizer, zero_stage);
  options.program.recompute = recompute;
  EXPECT_GT(testing::checked_op_count(graph, plan, options.program, program::OpKind::ReduceScatter), 0);
  const testing::Parameters expected =
      train(graph, plan::plan_data_parallel(graph, 1, kBatch), float64_options(optimizer, 0));
  std::string worst;
  const double error = testing::largest_relative_error(expected, train(graph, plan, options), &worst);
  std::cout << "  ZeRO " << zero_stage << ", " << optimizer << ", " << plan.devices << " ranks: largest relative error "
            << error << " (" << worst << ")\n";
  return error;
}

TEST(ZeroRuntime, Gpt2TwoReplicasZero1EqualsOneRank) {
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), plan::plan_data_parallel(tiny_gpt2(), 2, kBatch), "sgd+decay", 1),
            1e-9);
}

// Adam on GPT-2 is compared with the same plan unsharded, not with one rank: the key part of
// an attention's in_proj_bias has a gradient that is zero but for rounding (softmax does not
// change when every score of a row moves by the same amount), and Adam divides that noise
// by its own magnitude, so any two orders of summation (one rank, two ranks, with or without
// ZeRO) disagree there by about 1e-3 of the bias. Sharded and unsharded runs sum the same
// gradients in the same order and update element by element: they agree to rounding.
TEST(ZeroRuntime, Gpt2Zero1And2AdamEqualTheSamePlanUnsharded) {
  const plan::Plan plan = plan::plan_data_parallel(tiny_gpt2(), 2, kBatch);
  const testing::Parameters unsharded = train(tiny_gpt2(), plan, float64_options("adam", 0));
  EXPECT_LT(testing::largest_relative_error(unsharded, train(tiny_gpt2(), plan, float64_options("adam", 1))), 1e-12);
  EXPECT_LT(testing::largest_relative_error(unsharded, train(tiny_gpt2(), plan, float64_options("adam", 2))), 1e-12);
}

TEST(ZeroRuntime, Gpt2FourReplicasZero2SgdEqualsOneRank) {
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), plan::plan_data_parallel(tiny_gpt2(), 4, kBatch), "sgd+decay", 2),
            1e-9);
}

TEST(ZeroRuntime, CnnZero1And2EqualOneRank) {
  const plan::Plan plan = plan::plan_data_parallel(fmnist_cnn(), 2, kBatch);
  EXPECT_LT(error_against_one_rank(fmnist_cnn(), plan, "sgd", 1), 1e-9);
  EXPECT_LT(error_against_one_rank(fmnist_cnn(), plan, "adam", 2), 1e-9);
}

TEST(ZeroRuntime, Gpt2ThreeDPlanWithZeroAndRecomputationEqualsOneRank) {
  // Tensor parallel 2 x 2 pipeline stages x 2 replicas, micro-batches of 2 samples per
  // replica (2 of them), 1F1B: each part's buckets are sharded over its 2 replicas.
  const cost::AnalyticCostModel cost(cost::catalog_device("a100"));
  const cost::NetworkModel network(cluster::builtin_cluster("cpu", 8));
  const plan::PlanContext context{tiny_gpt2(), cost, network};
  const plan::Plan plan = planner::plan_shape(context, kBatch, planner::ParallelShape{2, 2, 2, 2});
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), plan, "sgd+decay", 1, cost::Recompute::Full), 1e-9);
  EXPECT_LT(error_against_one_rank(tiny_gpt2(), plan, "sgd", 2), 1e-9);
}

// A checkpoint tensor's values (float32, float64 or int64 as written).
torch::Tensor values_of(const checkpoint::TensorBytes& tensor) {
  const auto dtype = tensor.dtype == "float64" ? torch::kFloat64 : tensor.dtype == "int64" ? torch::kInt64 : torch::kFloat32;
  std::string bytes = tensor.bytes;
  return torch::from_blob(bytes.data(), tensor.shape, dtype).clone().to(torch::kFloat64);
}

// Every rank's gathered training state (rank 0's is the checkpoint) after the steps.
testing::RankHooks gather_state(std::vector<checkpoint::TensorBytes>& state, std::mutex& mutex) {
  testing::RankHooks hooks;
  hooks.after_steps = [&state, &mutex](PlanExecutor& executor) {
    std::vector<checkpoint::TensorBytes> gathered = executor.gather_training_state();  // collective
    const std::lock_guard<std::mutex> lock(mutex);
    if (!gathered.empty()) state = std::move(gathered);
  };
  return hooks;
}

TEST(ZeroRuntime, CheckpointHoldsWholeOptimizerStateAndResumesUnderAnotherPlan) {
  const graph::Graph& graph = fmnist_cnn();
  std::mutex mutex;
  std::vector<checkpoint::TensorBytes> plain_state, zero_state;
  train(graph, plan::plan_data_parallel(graph, 2, kBatch), float64_options("adam", 0), 2, gather_state(plain_state, mutex));
  train(graph, plan::plan_data_parallel(graph, 2, kBatch), float64_options("adam", 1), 2, gather_state(zero_state, mutex));
  // The same tensors (weights, buffers, Adam's step, exp_avg, exp_avg_sq), the same values.
  ASSERT_EQ(plain_state.size(), zero_state.size());
  for (size_t i = 0; i < plain_state.size(); ++i) {
    ASSERT_EQ(plain_state[i].name, zero_state[i].name);
    ASSERT_EQ(plain_state[i].shape, zero_state[i].shape) << plain_state[i].name;
    const torch::Tensor expected = values_of(plain_state[i]), actual = values_of(zero_state[i]);
    const double scale = std::max(expected.abs().max().item<double>(), 1e-300);
    EXPECT_LT((expected - actual).abs().max().item<double>() / scale, 1e-9) << plain_state[i].name;
  }
  // Resumed under ZeRO 2 on four replicas for two more steps: one rank's four steps.
  testing::RankHooks resume;
  resume.first_step = 2;
  resume.before_steps = [&zero_state](PlanExecutor& executor) { executor.load_training_state(zero_state); };
  const testing::Parameters resumed =
      train(graph, plan::plan_data_parallel(graph, 4, kBatch), float64_options("adam", 2), 2, resume);
  const testing::Parameters expected =
      train(graph, plan::plan_data_parallel(graph, 1, kBatch), float64_options("adam", 0), 4);
  EXPECT_LT(testing::largest_relative_error(expected, resumed), 1e-9);
}

}  // namespace
}  // namespace burst::runtime::zero_test
