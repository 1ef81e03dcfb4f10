// A plan for a mixed cluster runs like any uneven plan: the burst planner's plan of a small
// CNN at global batch 192 on two A100s and one V100 (samples shared by the kinds' speeds:
// 72 on each A100, 48 on the V100) trained by three ranks as threads equals one rank in
// float64 (docs/architecture.md, invariant 1). Re-shards between layers with different
// shares are PlanExecutorTest.BurstPlanWithReshardsEqualsOneRank's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <set>

#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/graph/zoo.h"
#include "burst/planner/burst_planner.h"
#include "burst/runtime/plan_executor.h"
#include "in_process_communicator.h"
#include "threaded_training.h"

// Its own namespace: a unity build compiles it with the other runtime tests.
namespace burst::runtime::mixed_plan_test {
namespace {

constexpr int64_t kBatch = 192;

testing::Parameters train(const graph::Graph& graph, const plan::Plan& plan) {
  ExecutorOptions options = testing::sgd_with_momentum(5, 0.05);
  options.dtype = torch::kFloat64;
  testing::InProcessWorld world(plan.devices, std::chrono::seconds(60));
  return testing::train_threads(graph, plan, 3, world, options, testing::random_batches(graph, kBatch), true, true).first;
}

TEST(MixedPlanRuntime, PlanForTwoKindsEqualsOneRank) {
  const graph::Graph graph = graph::build_zoo_model("fmnist_cnn");
  const cost::NetworkModel network(cluster::builtin_mixed_cluster("a100:2,v100:1", ""));
  const auto a100 = cost::make_cost_model(cost::resolve_device("a100", std::nullopt), cost::Precision::Fp32);
  const auto v100 = cost::make_cost_model(cost::resolve_device("v100", std::nullopt), cost::Precision::Fp32);
  const plan::PlanContext context{graph, *a100, network, {a100.get(), v100.get()}};
  const plan::Plan plan = planner::plan_burst(context, kBatch);
  // The plan is uneven: some layer's ranks hold shards of different sizes.
  std::set<std::vector<int64_t>> share_vectors;
  bool uneven = false;
  for (const plan::LayerPlacement& placement : plan.layers) {
    std::vector<int64_t> sizes;
    for (const cost::Shard& shard : placement.shards) sizes.push_back(shard.samples.size());
    uneven = uneven || *std::min_element(sizes.begin(), sizes.end()) != *std::max_element(sizes.begin(), sizes.end());
    share_vectors.insert(sizes);
  }
  ASSERT_TRUE(uneven);
  std::cout << "  " << share_vectors.size() << " distinct share vectors over " << plan.layers.size() << " layers\n";
  const testing::Parameters expected = train(graph, plan::plan_data_parallel(graph, 1, kBatch));
  std::string worst;
  const double error = testing::largest_relative_error(expected, train(graph, plan), &worst);
  std::cout << "  mixed plan on 3 ranks: largest relative error " << error << " (" << worst << ")\n";
  EXPECT_LT(error, 1e-9);
}

}  // namespace
}  // namespace burst::runtime::mixed_plan_test
