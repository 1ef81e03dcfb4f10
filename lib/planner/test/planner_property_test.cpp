// Property: on random chains the burst planner's plan is as fast as the best plan
// exhaustive search finds over every device count of every layer (prefix placements, even
// splits, the same amplification limit), both judged by the planner's model of a chain
// (restated below), which its prediction equals; and the runtime's step (evaluate_plan, the
// step program with one gradient bucket per layer, as the planner prices all-reduces) is
// never slower than that prediction.
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "burst/timing/evaluate.h"
#include "burst/graph/builder.h"
#include "burst/planner/burst_planner.h"
#include "test_world.h"

namespace burst::planner {

using namespace burst::plan;    // NOLINT: the tests state plans throughout
using namespace burst::timing;  // NOLINT: and their evaluations

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

// The planner's model of a chain (burst_planner.h, docs/planner.md), restated: a layer
// starts on all its ranks together once its input is re-sharded (NetworkModel::reshard:
// each rank's messages one after another, the busiest rank's total) and ends with its
// largest shard; backward likewise in reverse order, a gradient re-shard before every layer
// but the input (the data takes no gradient); each layer's all-reduce on a
// per-rank queue once its backward is done. (The random chains have no update times.) In a
// chain a layer's input is ready only after every earlier shard is done, so its ranks are
// always free by then.
double planner_model_time(const World& world, const Plan& plan) {
  const graph::Graph& graph = world.graph;
  const auto layers = static_cast<graph::LayerId>(graph.size());
  auto reshard = [&](graph::LayerId producer) {  // producer -> producer + 1, either way
    const Bytes per_sample(static_cast<double>(graph.info(producer).output_bytes));
    return world.network.reshard(activation_transfers(plan, producer, producer + 1), per_sample).s();
  };
  auto run = [&](graph::LayerId id, double ready, bool forward) {  // the largest shard's end
    double end = ready;
    for (const cost::Shard& shard : plan.layers[static_cast<size_t>(id)].shards) {
      const cost::LayerTime time = world.cost.require(graph, id, shard.samples.size()).time;
      end = std::max(end, ready + (forward ? time.forward : time.backward).s());
    }
    return end;
  };
  double end = 0;
  for (graph::LayerId id = 0; id < layers; ++id) end = run(id, id == 0 ? 0 : end + reshard(id - 1), true);
  std::vector<double> queue_free(static_cast<size_t>(world.network.cluster().size()), 0.0);
  double finish = end;
  for (graph::LayerId id = layers - 1; id >= 0; --id) {
    const bool gradient_in = id < layers - 1 && id > 0;  // from id + 1; none into the input (id 0)
    end = run(id, gradient_in ? end + reshard(id) : end, false);
    finish = std::max(finish, end);
    const std::vector<int> group = sync_group(plan, graph, id);
    if (group.empty()) continue;
    double start = end;
    for (const int rank : group) start = std::max(start, queue_free[static_cast<size_t>(rank)]);
    const Bytes gradients(static_cast<double>(graph.info(id).params) * 4.0);  // fp32
    const double sync_end = start + world.network.allreduce(group, gradients).s();
    for (const int rank : group) queue_free[static_cast<size_t>(rank)] = sync_end;
    finish = std::max(finish, sync_end);
  }
  return finish;
}

// Every combination of device counts (ranks 0..n-1, even split); the fastest iteration in
// the planner's model.
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
    if (allowed) best = std::min(best, planner_model_time(world, plan));
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
    const double planned = planner_model_time(world, result.plan);
    const double best = exhaustive_best(world, c);
    const std::string what = fmt::format("case {}: {} layers, {} devices, batch {}, limit {}", cases,
                                         c.layers, c.devices, c.batch, c.amplification);
    EXPECT_NEAR(planned, best, 1e-9 * best) << what;
    EXPECT_NEAR(result.predicted.s(), planned, 1e-9 * planned) << what;
    // The runtime's step only drops constraints of that model (a shard waits for its own
    // rank's inputs, not the layer's; each message for itself, not the busiest rank's
    // queue), so on these chains it is never slower.
    EvaluateOptions per_layer_buckets;
    per_layer_buckets.program.bucket_bytes = 1;  // every layer's gradients close a bucket: one all-reduce per layer
    const double evaluated = evaluate_plan(result.plan, world.context(), per_layer_buckets).iteration_time.s();
    EXPECT_LE(evaluated, result.predicted.s() * (1 + 1e-12)) << what;
  }
  // The sample reaches the corners the issue names.
  EXPECT_EQ(max_layers, 8);
  EXPECT_EQ(max_devices, 8);
}

}  // namespace
}  // namespace burst::planner
