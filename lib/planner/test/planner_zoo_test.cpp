// The planner on zoo models with the built-in A100 cost model, and the series-parallel
// decomposition of their graphs.
#include <limits>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "burst/timing/evaluate.h"
#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/graph/builder.h"
#include "burst/graph/zoo.h"
#include "burst/planner/burst_planner.h"
#include "sp_decomposition.h"

namespace burst::planner {

using namespace burst::plan;    // NOLINT: the tests state plans throughout
using namespace burst::timing;  // NOLINT: and their evaluations

namespace {

// The acceptance: vgg16 at global batch 32 on 1..64 A100s. Burst is never slower
// than data parallelism, and from 16 devices on it uses fewer device-seconds.
TEST(BurstPlannerA100, Vgg16NeverSlowerThanDataParallel) {
  const graph::Graph graph = graph::build_zoo_model("vgg16");
  const std::unique_ptr<cost::CostModel> cost = cost::make_cost_model(cost::resolve_device("a100", std::nullopt));
  for (int devices = 1; devices <= 64; ++devices) {
    const cost::NetworkModel network(cluster::builtin_cluster("a100", devices));
    const PlanContext context{graph, *cost, network};
    const PlanEvaluation burst = evaluate_plan(plan_burst(context, 32), context);
    const PlanEvaluation dp = evaluate_plan(plan_data_parallel(graph, devices, 32), context);
    const std::string where = fmt::format("{} devices: burst {:.3f} ms, {:.3f} device-s; dp {:.3f} ms, {:.3f} device-s",
                                          devices, burst.iteration_time.ms(), burst.device_seconds.s(),
                                          dp.iteration_time.ms(), dp.device_seconds.s());
    EXPECT_LE(burst.iteration_time.s(), dp.iteration_time.s() * (1 + 1e-12)) << where;
    if (devices >= 16) {
      EXPECT_LT(burst.device_seconds.s(), dp.device_seconds.s()) << where;
    }
  }
}

// Regression: with the option sets capped, the search once lost data parallelism on
// resnet50 (global batch 128, 9 and 10 A100s, no limit): the set kept the options with
// the smallest beta and dropped the all-devices one, whose small alpha hides its large
// all-reduce behind later backward. Data parallelism is in the search space, so the
// search itself (no fallback) must be at least as fast.
TEST(BurstPlannerA100, Resnet50SearchReachesDataParallel) {
  const graph::Graph graph = graph::build_zoo_model("resnet50");
  const std::unique_ptr<cost::CostModel> cost = cost::make_cost_model(cost::resolve_device("a100", std::nullopt));
  BurstOptions search_only;
  search_only.amplification = std::numeric_limits<double>::infinity();
  search_only.never_slower_than_dp = false;
  for (const int devices : {9, 10}) {
    const cost::NetworkModel network(cluster::builtin_cluster("a100", devices));
    const PlanContext context{graph, *cost, network};
    const double burst = evaluate_plan(plan_burst(context, 128, search_only), context).iteration_time.s();
    const double dp = evaluate_plan(plan_data_parallel(graph, devices, 128), context).iteration_time.s();
    EXPECT_LE(burst, dp * (1 + 1e-12)) << devices << " devices";
  }
}

// The planner chooses plans on its own model; that model should predict what the
// evaluator times. At global batch 32 on 8, 16 and 32 A100s (synchronised BatchNorm), its
// estimate is within 1% for vgg16 and resnet50 (measured 0.995-1.001), and within 3.5% for
// inception_v3 (measured 1.032: its concurrent branches' re-shards are priced as if each
// end's ranks were ready at once, where in the step ranks go ahead and contend less).
TEST(BurstPlannerA100, EstimateIsCloseToTheEvaluator) {
  const std::unique_ptr<cost::CostModel> cost = cost::make_cost_model(cost::resolve_device("a100", std::nullopt));
  for (const auto& [model, tolerance] : {std::pair<const char*, double>{"vgg16", 0.01}, {"resnet50", 0.01},
                                         {"inception_v3", 0.035}}) {
    const graph::Graph graph = graph::build_zoo_model(model);
    for (const int devices : {8, 16, 32}) {
      const cost::NetworkModel network(cluster::builtin_cluster("a100", devices));
      const PlanContext context{graph, *cost, network};
      const BurstPlanResult result = plan_burst_with_prediction(context, 32);
      const double evaluated = evaluate_plan(result.plan, context).iteration_time.s();
      EXPECT_NEAR(result.predicted.s() / evaluated, 1.0, tolerance)
          << model << " on " << devices << ": " << result.predicted.ms() << " against " << evaluated * 1e3 << " ms";
    }
  }
}

using detail::Segment;
using detail::SegmentKind;

int count_kind(const Segment& segment, SegmentKind kind) {
  int count = segment.kind == kind ? 1 : 0;
  for (const Segment& child : segment.children) count += count_kind(child, kind);
  return count;
}

int widest_parallel(const Segment& segment) {
  int widest = segment.kind == SegmentKind::Parallel
                   ? static_cast<int>(segment.children.size()) + (segment.direct_edge ? 1 : 0)
                   : 0;
  for (const Segment& child : segment.children) widest = std::max(widest, widest_parallel(child));
  return widest;
}

TEST(SeriesParallel, ZooGraphsDecompose) {
  // vgg16 is a chain: one series of all its layers, every piece an edge.
  const detail::SpGraph vgg(graph::build_zoo_model("vgg16"));
  const Segment vgg_root = detail::decompose(vgg);
  EXPECT_EQ(vgg_root.kind, SegmentKind::Series);
  EXPECT_EQ(vgg_root.cuts.size(), static_cast<size_t>(vgg.layers));
  EXPECT_EQ(count_kind(vgg_root, SegmentKind::Parallel), 0);

  // resnet50: 16 bottlenecks, each a skip (direct edge or downsample branch) beside the
  // main path; no opaque parts.
  const Segment resnet = detail::decompose(detail::SpGraph(graph::build_zoo_model("resnet50")));
  EXPECT_EQ(count_kind(resnet, SegmentKind::Parallel), 16);
  EXPECT_EQ(count_kind(resnet, SegmentKind::Opaque), 0);

  // inception_v3: four-way blocks, and the aux head beside the main path to the two losses.
  const Segment inception = detail::decompose(detail::SpGraph(graph::build_zoo_model("inception_v3")));
  EXPECT_EQ(widest_parallel(inception), 4);
  EXPECT_EQ(count_kind(inception, SegmentKind::Opaque), 0);

  // gpt2 with 2 blocks: two residual sums per block.
  const Segment gpt2 = detail::decompose(detail::SpGraph(graph::build_zoo_model("gpt2:layers=2")));
  EXPECT_EQ(count_kind(gpt2, SegmentKind::Parallel), 4);
}

TEST(SeriesParallel, BridgeIsOpaque) {
  // x -> a, x -> b, a -> b, a -> c, b -> c: the "Wheatstone bridge", not series-parallel.
  graph::GraphBuilder b("bridge");
  const std::string x = b.input("x", {8});
  const std::string a = b.relu("a", x);
  const std::string bb = b.add_("b", {x, a});
  b.add_("c", {a, bb});
  const detail::SpGraph sp(std::move(b).build());
  const Segment root = detail::decompose(sp);
  ASSERT_EQ(root.kind, SegmentKind::Series);
  EXPECT_EQ(count_kind(root, SegmentKind::Opaque), 1);
}

}  // namespace
}  // namespace burst::planner
