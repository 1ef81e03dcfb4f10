// The tensor planner on worlds small enough to work out by hand.
#include <gtest/gtest.h>

#include "burst/timing/evaluate.h"
#include "burst/graph/builder.h"
#include "burst/graph/zoo.h"
#include "burst/planner/burst_planner.h"
#include "burst/cost/device_models.h"
#include "burst/planner/tensor_planner.h"
#include "test_world.h"

namespace burst::planner {

using namespace burst::plan;    // NOLINT: the tests state plans throughout
using namespace burst::timing;  // NOLINT: and their evaluations

namespace {

using cost::SplitKind;
using testing::ms;

TEST(MegatronSplits, GptBlocksSplitAttentionByHeadsAndTheMlpColumnThenRow) {
  const graph::Graph graph = graph::build_zoo_model("gpt2:layers=1,width=64,heads=4,seq=16,vocab=64");
  const std::vector<SplitKind> kinds = megatron_splits(graph, 4);
  const auto kind = [&](const std::string& name) { return kinds[static_cast<size_t>(*graph.find(name))]; };
  EXPECT_EQ(kind("transformer.h.0.attn"), SplitKind::Heads);
  EXPECT_EQ(kind("transformer.h.0.mlp.c_fc"), SplitKind::Column);
  EXPECT_EQ(kind("transformer.h.0.mlp.act"), SplitKind::Features);
  EXPECT_EQ(kind("transformer.h.0.mlp.c_proj"), SplitKind::Row);
  EXPECT_EQ(kind("transformer.h.0.ln_2"), SplitKind::Replicate);
  EXPECT_EQ(kind("transformer.h.0.add_2"), SplitKind::Replicate);
  // Tied weights and the loss stay sample splits.
  EXPECT_EQ(kind("transformer.wte"), SplitKind::Samples);
  EXPECT_EQ(kind("lm_head"), SplitKind::Samples);
  EXPECT_EQ(kind("loss"), SplitKind::Samples);
  // 3 parts divide neither the 4 heads nor the 256 features.
  const std::vector<SplitKind> three = megatron_splits(graph, 3);
  EXPECT_EQ(three[static_cast<size_t>(*graph.find("transformer.h.0.attn"))], SplitKind::Replicate);
  EXPECT_EQ(three[static_cast<size_t>(*graph.find("transformer.h.0.mlp.c_fc"))], SplitKind::Replicate);
}

// Llama's SwiGLU: gate and up projections both column splits, SiLU and the product features
// splits, the down projection a row split; GQA attention by its kv heads.
TEST(MegatronSplits, SwigluMlpsSplitGateAndUpByColumnsAndDownByRows) {
  const graph::Graph graph =
      graph::build_zoo_model("llama:layers=1,width=64,heads=4,kv_heads=2,ffn=128,vocab=64,seq=16");
  const std::vector<SplitKind> kinds = megatron_splits(graph, 2);
  const auto kind = [&](const std::string& name) { return kinds[static_cast<size_t>(*graph.find(name))]; };
  EXPECT_EQ(kind("model.layers.0.self_attn"), SplitKind::Heads);
  EXPECT_EQ(kind("model.layers.0.mlp.gate_proj"), SplitKind::Column);
  EXPECT_EQ(kind("model.layers.0.mlp.up_proj"), SplitKind::Column);
  EXPECT_EQ(kind("model.layers.0.mlp.act_fn"), SplitKind::Features);
  EXPECT_EQ(kind("model.layers.0.mlp.mul"), SplitKind::Features);
  EXPECT_EQ(kind("model.layers.0.mlp.down_proj"), SplitKind::Row);
  EXPECT_EQ(kind("model.layers.0.post_attention_layernorm"), SplitKind::Replicate);
  // The untied head over the vocabulary, the loss over the logits' vocabulary slices.
  EXPECT_EQ(kind("lm_head"), SplitKind::Column);
  EXPECT_EQ(kind("loss"), SplitKind::Row);
  // 4 parts divide the 4 query heads but not the 2 kv heads.
  EXPECT_EQ(megatron_splits(graph, 4)[static_cast<size_t>(*graph.find("model.layers.0.self_attn"))],
            SplitKind::Replicate);
}

// input [16] -> fc1 (16 -> 64) -> relu -> fc2 (64 -> 16) -> loss on one node of 8 devices
// with links so fast that messages and all-reduces take about nothing; each fc costs 4 ms
// forward and 8 ms backward a sample on one device, the rest nothing.
testing::World mlp_world() {
  graph::GraphBuilder b("mlp");
  b.cross_entropy("loss", b.linear("fc2", b.relu("relu", b.linear("fc1", b.input("input", {16}), 64)), 16));
  return testing::World(std::move(b).build(), testing::test_cluster(8, 1e15, 0),
                        {{"input", {ms(0), ms(0)}},
                         {"fc1", {ms(0, 4), ms(0, 8)}},
                         {"relu", {ms(0), ms(0)}},
                         {"fc2", {ms(0, 4), ms(0, 8)}},
                         {"loss", {ms(0), ms(0)}}});
}

// The MLP above at global batch 2 on one node
// of 8 devices, links so fast that messages and all-reduces take about nothing.
// Each fc costs 4 ms forward and 8 ms backward a sample on one device (the rest nothing):
//  - split by samples, at most 2 devices work: 1 sample each, 2 x (4 + 8) = 24 ms a step;
//  - 4 parts in 2 sample groups (8 devices): a part costs 1 + 2 ms a sample, so a step is
//    2 x 3 = 6 ms; amplification 8 x 3 / 24 = 1, within 2;
//  - 8 parts in 1 group: a part costs 1 + 1 ms a sample (poorer scaling), 2 samples: 2 x 4
//    = 8 ms; 2 parts in 2 groups (4 devices): 2 + 4 ms a sample, 2 x 6 = 12 ms.
// So the planner picks 4 parts x 2 groups, fc1 column, relu features, fc2 row: 6 ms.
TEST(TensorPlanner, SplitsWeightsWhenTheBatchIsSmallerThanTheDevices) {
  testing::World world = mlp_world();
  for (const char* fc : {"fc1", "fc2"}) {
    world.cost.with_tensor(fc, 2, {ms(0, 2), ms(0, 4)});
    world.cost.with_tensor(fc, 4, {ms(0, 1), ms(0, 2)});
    world.cost.with_tensor(fc, 8, {ms(0, 1), ms(0, 1)});
  }
  const PlanContext context = world.context();
  const TensorPlanResult result = plan_tensor(context, 2);
  ASSERT_TRUE(result.plan.has_value());
  const Plan& plan = *result.plan;
  EXPECT_EQ(plan.layers[1].split, (cost::TensorSplit{SplitKind::Column, 4}));
  EXPECT_EQ(plan.layers[2].split, (cost::TensorSplit{SplitKind::Features, 4}));
  EXPECT_EQ(plan.layers[3].split, (cost::TensorSplit{SplitKind::Row, 4}));
  EXPECT_EQ(plan.layers[1].sample_groups(), 2U);
  EXPECT_NEAR(result.predicted.ms(), 6.0, 0.01);
  // The sample splits' best, burst's, is 24 ms.
  EXPECT_NEAR(evaluate_plan(plan_burst(context, 2), context).iteration_time.ms(), 24.0, 0.01);
}

TEST(TensorPlanner, KeepsWeightsWholeOverTheAmplificationLimit) {
  // The same world, but a part costs more than the whole layer, 5 + 10 ms a sample: 2 parts
  // in 2 groups give 4 x 15 = 60 ms > 2 x 24 ms, and more parts more, so no candidate splits
  // a layer and the planner has no plan.
  testing::World world = mlp_world();
  for (const char* fc : {"fc1", "fc2"}) {
    for (const int32_t parts : {2, 4, 8}) world.cost.with_tensor(fc, parts, {ms(0, 5), ms(0, 10)});
  }
  EXPECT_FALSE(plan_tensor(world.context(), 2).plan.has_value());
}

}  // namespace
}  // namespace burst::planner

namespace burst::planner {
namespace {

TEST(TensorPlanner, SplitsATinyGpt2OnBuiltInA100sBeyondItsBatch) {
  // Batch 2 on 8 A100s: sample splits use 2 devices; the tensor planner uses them all.
  const graph::Graph graph = graph::build_zoo_model("gpt2:layers=2,width=64,heads=4,seq=16,vocab=64");
  const cost::DeviceModel device = cost::resolve_device("a100", std::nullopt);
  const std::unique_ptr<cost::CostModel> cost = cost::make_cost_model(device);
  const cost::NetworkModel network(cluster::builtin_cluster("a100", 8));
  const PlanContext context{graph, *cost, network};
  const TensorPlanResult result = plan_tensor(context, 2);
  ASSERT_TRUE(result.plan.has_value()) << result.timed << " candidates timed";
  EXPECT_TRUE(has_tensor_split(*result.plan));
}

}  // namespace
}  // namespace burst::planner
