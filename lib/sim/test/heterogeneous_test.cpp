// Mixed clusters worked out by hand (in the comments): the shares that make two kinds finish
// together, layers whose speed ratios differ getting different shares, and each rank timed
// by its own kind's model alike in the evaluator and the simulator.
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/planner/burst_planner.h"
#include "burst/planner/heterogeneous.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "test_world.h"

namespace burst {
namespace {

namespace mixed_world {

using plan::testing::ms;

// One device of kind "fast" (rank 0) and one of kind "slow" (rank 1), in groups of one node
// each, joined by a link of `bytes_per_second` without latency.
cluster::Cluster two_kinds(double bytes_per_second) {
  const cluster::Link link{Bandwidth(bytes_per_second), Seconds(0)};
  return cluster::Cluster(cluster::MixedClusterSpec{
      "fast+slow",
      {cluster::DeviceGroup{"fast", 1, 1, 1, link, link, std::nullopt, std::nullopt},
       cluster::DeviceGroup{"slow", 1, 1, 1, link, link, std::nullopt, std::nullopt}},
      link});
}

// input [1, 2, 2] (16 bytes per sample) -> a (relu) -> b (relu); forward times only.
graph::Graph two_layers() {
  graph::GraphBuilder b("two_layers");
  std::string x = b.input("input", {1, 2, 2});
  x = b.relu("a", x);
  b.relu("b", x);
  return std::move(b).build();
}

// Owns a context over a cost model per kind.
struct World {
  World(cluster::Cluster cluster, std::map<std::string, cost::FakeLayerCost> fast_costs,
        std::map<std::string, cost::FakeLayerCost> slow_costs)
      : graph(two_layers()),
        fast("fast", std::move(fast_costs)),
        slow("slow", std::move(slow_costs)),
        network(std::move(cluster)) {}
  plan::PlanContext context() const { return plan::PlanContext{graph, fast, network, {&fast, &slow}}; }

  graph::Graph graph;
  cost::FakeCostModel fast;
  cost::FakeCostModel slow;
  cost::NetworkModel network;
};

cost::FakeLayerCost forward(cost::LinearTime time) { return cost::FakeLayerCost{time, ms(0)}; }

std::vector<int64_t> sizes(const plan::LayerPlacement& placement) {
  std::vector<int64_t> sizes;
  for (const cost::Shard& shard : placement.shards) sizes.push_back(shard.samples.size());
  return sizes;
}

}  // namespace mixed_world

using mixed_world::forward;
using mixed_world::ms;

// Fast: 2 ms + 1 ms per sample; slow: 1 ms + 2 ms per sample; 11 samples. They finish
// together when 2 + x = 1 + 2 (11 - x), so 3x = 21 and x = 7: 9 ms each. Any other split is
// slower: (6, 5) takes max(8, 11) = 11 ms, (8, 3) max(10, 7) = 10 ms.
TEST(EqualFinishShares, LinearTimesOfTwoKinds) {
  auto time = [](int rank, int64_t samples) {
    return rank == 0 ? 2.0 + static_cast<double>(samples) : 1.0 + 2.0 * static_cast<double>(samples);
  };
  EXPECT_EQ(planner::equal_finish_shares(2, 11, time), (std::vector<int64_t>{7, 4}));
  // Ranks of one kind split evenly, the first ones taking the remainder (as even_split).
  auto same = [](int, int64_t samples) { return 1.0 + static_cast<double>(samples); };
  EXPECT_EQ(planner::equal_finish_shares(3, 8, same), (std::vector<int64_t>{3, 3, 2}));
  // A rank too slow to help gets nothing: 4 samples, the slow rank's first one takes 10.
  auto steep = [](int rank, int64_t samples) { return rank == 0 ? 2.0 * static_cast<double>(samples) : 10.0; };
  EXPECT_EQ(planner::equal_finish_shares(2, 4, steep), (std::vector<int64_t>{4, 0}));
}

// One layer, fast 1 ms per sample, slow 3 ms per sample, 8 samples. Shares by speed: 6 and 2
// (both 6 ms). An even split (4, 4) leaves the fast rank waiting: the slow one takes 12 ms.
// The evaluator and the simulator time each rank by its own kind.
TEST(MixedTiming, EachRankByItsKind) {
  const mixed_world::World world(mixed_world::two_kinds(1e12), {{"input", forward(ms(0))}, {"a", forward(ms(0, 1))}, {"b", forward(ms(0))}},
                                 {{"input", forward(ms(0))}, {"a", forward(ms(0, 3))}, {"b", forward(ms(0))}});
  const plan::PlanContext context = world.context();
  const plan::Plan even = plan::plan_data_parallel(world.graph, 2, 8);
  const plan::Plan by_speed = planner::plan_one_ratio_data_parallel(context, 8);
  EXPECT_EQ(mixed_world::sizes(by_speed.layers[1]), (std::vector<int64_t>{6, 2}));
  sim::SimOptions sim_options;
  for (const auto& [plan, expected_ms] : {std::make_pair(even, 12.0), std::make_pair(by_speed, 6.0)}) {
    EXPECT_NEAR(timing::evaluate_plan(plan, context).iteration_time.ms(), expected_ms, 1e-9);
    EXPECT_NEAR(sim::simulate(plan, context, sim_options).iteration_time.ms(), expected_ms, 1e-9);
  }
}

// Two layers whose ratios differ: a takes fast 1 / slow 3 ms per sample, b fast 3 / slow 1;
// 8 samples. One ratio for both (the whole model is 4 ms per sample on either kind): 4 and
// 4, each rank 4 x 4 = 16 ms. By layer: a shares 6 and 2 (6 ms), b 2 and 6 (6 ms), 12 ms,
// and a's output is re-sharded between them: samples 2..5 (4 x 16 = 64 bytes) go from rank 0
// to rank 1, and their gradients come back (a is not the data). On a 1 TB/s link that is
// nothing and the layers get their own shares. On a 10 B/s link each way costs 6.4 s, so
// both layers keep one share per rank.
TEST(MixedPlanning, LayersWithDifferentRatiosGetDifferentShares) {
  const std::map<std::string, cost::FakeLayerCost> fast{
      {"input", forward(ms(0))}, {"a", forward(ms(0, 1))}, {"b", forward(ms(0, 3))}};
  const std::map<std::string, cost::FakeLayerCost> slow{
      {"input", forward(ms(0))}, {"a", forward(ms(0, 3))}, {"b", forward(ms(0, 1))}};
  {
    const mixed_world::World world(mixed_world::two_kinds(1e12), fast, slow);
    const plan::Plan plan = planner::plan_layer_ratio_data_parallel(world.context(), 8);
    EXPECT_EQ(mixed_world::sizes(plan.layers[1]), (std::vector<int64_t>{6, 2}));
    EXPECT_EQ(mixed_world::sizes(plan.layers[2]), (std::vector<int64_t>{2, 6}));
    EXPECT_NEAR(timing::evaluate_plan(plan, world.context()).iteration_time.ms(), 12.0, 1e-6);
    const plan::Plan one_ratio = planner::plan_one_ratio_data_parallel(world.context(), 8);
    EXPECT_EQ(mixed_world::sizes(one_ratio.layers[2]), (std::vector<int64_t>{4, 4}));
    EXPECT_NEAR(timing::evaluate_plan(one_ratio, world.context()).iteration_time.ms(), 16.0, 1e-9);
    // The burst planner finds the per-layer shares too (here every layer on both ranks).
    planner::BurstOptions unlimited;
    unlimited.amplification = std::numeric_limits<double>::infinity();
    const plan::Plan burst = planner::plan_burst(world.context(), 8, unlimited);
    EXPECT_NEAR(timing::evaluate_plan(burst, world.context()).iteration_time.ms(), 12.0, 1e-6);
  }
  {
    const mixed_world::World world(mixed_world::two_kinds(10), fast, slow);
    const plan::Plan plan = planner::plan_layer_ratio_data_parallel(world.context(), 8);
    EXPECT_EQ(mixed_world::sizes(plan.layers[1]), (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(mixed_world::sizes(plan.layers[2]), (std::vector<int64_t>{4, 4}));
  }
}

// The baselines on the two-layer world: the fast kind alone runs both layers on rank 0
// (8 + 24 = 32 ms; the slow one alone is 24 + 8 = 32 too, the first kind kept), an even
// split is the one ratio here (16 ms).
TEST(MixedPlanning, Baselines) {
  const mixed_world::World world(mixed_world::two_kinds(1e12),
                                 {{"input", forward(ms(0))}, {"a", forward(ms(0, 1))}, {"b", forward(ms(0, 3))}},
                                 {{"input", forward(ms(0))}, {"a", forward(ms(0, 3))}, {"b", forward(ms(0, 1))}});
  const planner::MixedBaselines baselines = planner::mixed_baselines(world.context(), 8, planner::BurstOptions{});
  EXPECT_EQ(baselines.alone_kind, 0);
  for (const plan::LayerPlacement& placement : baselines.alone.layers) {
    ASSERT_EQ(placement.shards.size(), 1u);
    EXPECT_EQ(placement.shards[0].rank, 0);
  }
  EXPECT_NEAR(timing::evaluate_plan(baselines.alone, world.context()).iteration_time.ms(), 32.0, 1e-9);
  EXPECT_NEAR(timing::evaluate_plan(baselines.even, world.context()).iteration_time.ms(), 16.0, 1e-9);
  const std::vector<planner::KindUsage> usage =
      planner::usage_by_kind(world.context(), baselines.even, Seconds::from_ms(16));
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].kind, "fast");
  EXPECT_NEAR(usage[0].sample_share, 0.5, 1e-12);
  EXPECT_NEAR(usage[1].utilisation, 1.0, 1e-12);
}

}  // namespace
}  // namespace burst
