// Property: on random chains the burst planner's plan is as fast as the best plan
// exhaustive search finds over every device count of every layer (prefix placements, even
// splits, the same amplification limit), both judged by evaluate_plan.
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/plan/burst_planner.h"
#include "planner_test_support.h"

namespace burst::plan {
namespace {

using testing::World;

struct Case {
  int layers = 0;  // linear layers after the input
  int devices = 0;
  int64_t batch = 0;
  double amplification = 2;
};

World random_chain(const Case& c, std::mt19937& random) {
  std::uniform_int_distribution<int64_t> width(1, 64);
  std::uniform_real_distribution<double> fixed_ms(0.0, 5.0), per_sample_ms(0.0, 3.0);
  graph::GraphBuilder b("chain");
  std::string x = b.input("input", {width(random)});
  std::map<std::string, cost::FakeLayerCost> costs{{"input", {testing::ms(0), testing::ms(0)}}};
  for (int i = 0; i < c.layers; ++i) {
    const std::string name = fmt::format("l{}", i);
    x = b.linear(name, x, width(random));
    const cost::LinearTime forward = testing::ms(fixed_ms(random), per_sample_ms(random));
    const cost::LinearTime backward = testing::ms(fixed_ms(random), per_sample_ms(random));
    costs[name] = {forward, backward};
  }
  const int per_node_choices[] = {1, 2, 4, c.devices};
  const int per_node = per_node_choices[std::uniform_int_distribution<int>(0, 3)(random)];
  const double bandwidth = std::pow(10.0, std::uniform_real_distribution<double>(4.5, 7.0)(random));
  const double latency = std::uniform_real_distribution<double>(0.0, 1e-3)(random);
  return World(std::move(b).build(), testing::test_cluster(c.devices, bandwidth, latency, per_node),
               std::move(costs));
}

// The amplification rule, restated independently of the planner.
bool within_limit(const World& world, graph::LayerId layer, int count, const Case& c) {
  if (count == 1 || std::isinf(c.amplification)) return true;
  const auto time = [&](int64_t batch) { return world.cost.require(world.graph, layer, batch).time.total().s(); };
  const double whole = time(c.batch);
  if (whole <= 0) return true;
  return count * time((c.batch + count - 1) / count) <= c.amplification * whole * (1 + 1e-12);
}

// Every combination of device counts (ranks 0..n-1, even split); the fastest iteration.
double exhaustive_best(const World& world, const Case& c) {
  const auto layers = static_cast<int>(world.graph.size());
  const int usable = static_cast<int>(std::min<int64_t>(c.devices, c.batch));
  std::vector<int> counts(static_cast<size_t>(layers), 1);
  Plan plan = plan_data_parallel(world.graph, c.devices, c.batch);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    bool allowed = true;
    for (int id = 0; id < layers && allowed; ++id) {
      const int count = counts[static_cast<size_t>(id)];
      allowed = within_limit(world, id, count, c);
      std::vector<int> ranks(static_cast<size_t>(count));
      for (int r = 0; r < count; ++r) ranks[static_cast<size_t>(r)] = r;
      plan.layers[static_cast<size_t>(id)].shards = even_split(ranks, c.batch);
    }
    if (allowed) best = std::min(best, evaluate_plan(plan, world.context()).iteration_time.s());
    int digit = 0;
    while (digit < layers && counts[static_cast<size_t>(digit)] == usable) counts[static_cast<size_t>(digit++)] = 1;
    if (digit == layers) break;
    ++counts[static_cast<size_t>(digit)];
  }
  return best;
}

TEST(BurstPlannerProperty, MatchesExhaustiveSearchOnRandomChains) {
  std::mt19937 random(20261130);
  const double limits[] = {1.5, 2.0, std::numeric_limits<double>::infinity()};
  int cases = 0;
  int max_layers = 0, max_devices = 0;
  while (cases < 60) {
    Case c;
    c.layers = std::uniform_int_distribution<int>(1, 8)(random);
    c.devices = std::uniform_int_distribution<int>(1, 8)(random);
    c.batch = std::uniform_int_distribution<int64_t>(1, 12)(random);
    c.amplification = limits[std::uniform_int_distribution<int>(0, 2)(random)];
    const double usable = static_cast<double>(std::min<int64_t>(c.devices, c.batch));
    if (std::pow(usable, c.layers + 1) > 20000) continue;  // keep exhaustive search fast
    ++cases;
    max_layers = std::max(max_layers, c.layers);
    max_devices = std::max(max_devices, static_cast<int>(usable));
    const World world = random_chain(c, random);
    BurstOptions options;
    options.amplification = c.amplification;
    options.never_slower_than_dp = false;  // the limit exactly as exhaustive search applies it
    const BurstPlanResult result = plan_burst_with_prediction(world.context(), c.batch, options);
    validate_plan(result.plan, world.graph, world.network.cluster());
    const double planned = evaluate_plan(result.plan, world.context()).iteration_time.s();
    const double best = exhaustive_best(world, c);
    const std::string what = fmt::format("case {}: {} layers, {} devices, batch {}, limit {}", cases,
                                         c.layers, c.devices, c.batch, c.amplification);
    EXPECT_NEAR(planned, best, 1e-9 * best) << what;
    EXPECT_NEAR(result.predicted.s(), planned, 1e-9 * planned) << what;
  }
  // The sample reaches the corners the issue names.
  EXPECT_EQ(max_layers, 8);
  EXPECT_EQ(max_devices, 8);
}

}  // namespace
}  // namespace burst::plan
