#include "plan_svg.h"

#include <string>

#include <gtest/gtest.h>

#include "burst/cluster/cluster.h"
#include "burst/cost/fake_cost_model.h"
#include "burst/graph/builder.h"

namespace burst::cli {
namespace {

using cost::FakeLayerCost;
using cost::LinearTime;
using plan::PlanContext;
using timing::EvaluateOptions;

size_t count(const std::string& text, const std::string& needle) {
  size_t found = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) {
    ++found;
  }
  return found;
}

// input -> "a<&b" (linear, has weights) -> loss, 4 samples on 2 CPU ranks: the linear layer
// split 2 + 2 over ranks 0 and 1, the loss on rank 0 alone. Rank 0 and rank 1 then have
// different timelines (rank 0 computes the loss), so both get their own row.
struct SmallPlan {
  graph::Graph graph = [] {
    graph::GraphBuilder builder("tiny<&model");
    auto x = builder.input("in", {4});
    x = builder.linear("a<&b", x, 4);
    builder.cross_entropy("loss", x);
    return std::move(builder).build();
  }();
  cost::FakeCostModel cost{"cpu",
                           {{"in", FakeLayerCost{}},
                            {"a<&b", FakeLayerCost{LinearTime{Seconds::from_ms(1), Seconds()},
                                                   LinearTime{Seconds::from_ms(2), Seconds()}}},
                            {"loss", FakeLayerCost{LinearTime{Seconds(), Seconds::from_ms(0.25)},
                                                   LinearTime{Seconds(), Seconds::from_ms(0.25)}}}}};
  cost::NetworkModel network{cluster::builtin_cluster("cpu", 2)};
  Plan plan = [this] {
    Plan hand = plan::plan_data_parallel(graph, 2, 4);
    hand.strategy = "hand";
    hand.layers[2].shards = {cost::Shard{0, {0, 4}}};
    plan::validate_plan(hand, graph, network.cluster());
    return hand;
  }();
  PlanEvaluation evaluation = [this] {
    EvaluateOptions options;
    options.timelines = true;
    return evaluate_plan(plan, PlanContext{graph, cost, network}, options);
  }();
};

TEST(PlanSvg, IsOneSvgDocumentWithLegendAndEscapedNames) {
  const SmallPlan small;
  const std::string svg = render_plan_svg(small.plan, small.evaluation, small.graph);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_EQ(count(svg, "<script"), 0u);
  // Elements that hold text are closed.
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  EXPECT_EQ(count(svg, "<title>"), count(svg, "</title>"));
  // The legend names every activity kind and idle time.
  for (const char* entry : {">forward<", ">backward<", ">transfer (input re-shard)<",
                            ">all-reduce (weight gradients)<", ">idle (free for a background job)<"}) {
    EXPECT_NE(svg.find(entry), std::string::npos) << entry;
  }
  // Names are escaped wherever they appear: no raw '<' or '&' from "a<&b" or the model.
  EXPECT_NE(svg.find("a&lt;&amp;b"), std::string::npos);
  EXPECT_NE(svg.find("tiny&lt;&amp;model"), std::string::npos);
  EXPECT_EQ(svg.find("a<&b"), std::string::npos);
  EXPECT_EQ(svg.find("tiny<&"), std::string::npos);
  // Every '&' starts one of the entities svg_escape writes.
  // Every '&' starts one of the entities the renderer writes.
  for (size_t at = svg.find('&'); at != std::string::npos; at = svg.find('&', at + 1)) {
    const std::string rest = svg.substr(at, 6);
    const bool entity = rest.rfind("&amp;", 0) == 0 || rest.rfind("&lt;", 0) == 0 || rest.rfind("&gt;", 0) == 0 ||
                        rest.rfind("&quot;", 0) == 0 || rest.rfind("&#39;", 0) == 0;
    EXPECT_TRUE(entity) << "bare '&' at " << at << ": " << rest;
  }
  // One bar per layer.
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), small.graph.size());
}

TEST(PlanSvg, OneRectanglePerActivity) {
  const SmallPlan small;
  ASSERT_EQ(small.evaluation.timelines.size(), 2u);
  // Both ranks do different work, so each has a row and every activity is drawn.
  const auto rows = timeline_rows(small.evaluation.timelines);
  ASSERT_EQ(rows.size(), 2u);
  const std::string svg = render_plan_svg(small.plan, small.evaluation, small.graph);
  size_t activities[4] = {0, 0, 0, 0};
  for (const auto& timeline : small.evaluation.timelines) {
    for (const Activity& activity : timeline) ++activities[static_cast<int>(activity.kind)];
  }
  // Rank 0: forward and backward of both compute layers; rank 1: of the linear layer only.
  EXPECT_EQ(activities[static_cast<int>(ActivityKind::Forward)], 3u);
  EXPECT_EQ(activities[static_cast<int>(ActivityKind::Backward)], 3u);
  // The linear layer's all-reduce runs on both of its ranks.
  EXPECT_EQ(activities[static_cast<int>(ActivityKind::Allreduce)], 2u);
  // Each class also colours one legend swatch.
  for (const ActivityKind kind :
       {ActivityKind::Forward, ActivityKind::Backward, ActivityKind::Transfer, ActivityKind::Allreduce}) {
    EXPECT_EQ(count(svg, std::string("<rect class=\"") + activity_kind_name(kind) + "\""),
              activities[static_cast<int>(kind)] + 1)
        << activity_kind_name(kind);
  }
  // Rows carry their idle background: one per row plus the legend's swatch.
  EXPECT_EQ(count(svg, "<rect class=\"idle\""), rows.size() + 1);
}

std::vector<std::vector<Activity>> distinct_timelines(int ranks) {
  std::vector<std::vector<Activity>> timelines(static_cast<size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    timelines[static_cast<size_t>(rank)].push_back(Activity{0, 1e-3 * (rank + 1), ActivityKind::Forward, 0});
  }
  return timelines;
}

TEST(TimelineRows, IdenticalNeighboursShareARow) {
  // Ranks 0-3 do the same work, 4-7 nothing, 8 something else.
  std::vector<std::vector<Activity>> timelines(9);
  for (int rank = 0; rank < 4; ++rank) {
    timelines[static_cast<size_t>(rank)] = {Activity{0, 1, ActivityKind::Forward, 1}};
  }
  timelines[8] = {Activity{0, 2, ActivityKind::Backward, 1}};
  const auto rows = timeline_rows(timelines);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].first_rank, 0);
  EXPECT_EQ(rows[0].last_rank, 3);
  EXPECT_EQ(rows[1].first_rank, 4);
  EXPECT_EQ(rows[1].last_rank, 7);
  EXPECT_EQ(rows[2].first_rank, 8);
  EXPECT_EQ(rows[2].last_rank, 8);
  for (const auto& row : rows) EXPECT_TRUE(row.identical);
}

TEST(TimelineRows, ManyDistinctRanksAreGroupedEvenly) {
  // 1024 distinct timelines into at most 64 rows: 16 consecutive ranks per row.
  const auto rows = timeline_rows(distinct_timelines(1024), 64);
  ASSERT_EQ(rows.size(), 64u);
  int next = 0;
  for (const auto& row : rows) {
    EXPECT_EQ(row.first_rank, next);
    EXPECT_EQ(row.last_rank, next + 15);
    EXPECT_EQ(row.shown_rank, row.first_rank);
    EXPECT_FALSE(row.identical);
    next = row.last_rank + 1;
  }
  // 100 into 64: 36 rows of two and 28 of one, still covering every rank once in order.
  const auto uneven = timeline_rows(distinct_timelines(100), 64);
  ASSERT_EQ(uneven.size(), 64u);
  EXPECT_EQ(uneven.front().first_rank, 0);
  EXPECT_EQ(uneven.back().last_rank, 99);
  for (size_t i = 1; i < uneven.size(); ++i) EXPECT_EQ(uneven[i].first_rank, uneven[i - 1].last_rank + 1);
}

TEST(PlanSvg, ThousandsOfRanksDrawAtMostTheRowLimit) {
  const SmallPlan small;
  PlanEvaluation many = small.evaluation;
  many.timelines = distinct_timelines(2048);
  Plan plan = small.plan;
  plan.devices = 2048;
  const std::string svg = render_plan_svg(plan, many, small.graph);
  // One idle background per row (plus the legend's swatch) and one forward bar per row.
  EXPECT_EQ(count(svg, "<rect class=\"idle\""), static_cast<size_t>(kMaxTimelineRows) + 1);
  EXPECT_EQ(count(svg, "<rect class=\"forward\""), static_cast<size_t>(kMaxTimelineRows) + 1);
  EXPECT_NE(svg.find("ranks 0-31 (shows 0)"), std::string::npos);
  EXPECT_NE(svg.find("each row stands for a group of consecutive ranks"), std::string::npos);
}

TEST(ScalingSvg, TwoLinesWithOnePointPerDeviceCount) {
  const std::vector<ScalingPoint> points = {
      {1, Seconds(0.4), Seconds(0.4)}, {2, Seconds(0.21), Seconds(0.2)}, {4, Seconds(0.12), Seconds(0.1)}};
  const std::string svg = render_scaling_svg("vgg16 <a100>", points);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 6u);
  EXPECT_NE(svg.find("vgg16 &lt;a100&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">data parallel<"), std::string::npos);
  EXPECT_EQ(render_scaling_svg("empty", {}).rfind("<svg", 0), 0u);
}

TEST(SvgEscape, EscapesMarkupAndControlCharacters) {
  EXPECT_EQ(svg_escape("a<&b>\"'\x01"), "a&lt;&amp;b&gt;&quot;&#39;?");
}

}  // namespace
}  // namespace burst::cli
