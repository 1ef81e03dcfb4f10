// Tensor splits in plans: the refusals (one line naming the layer), the file format, and
// what the blocks and the memory model derive.
#include <gtest/gtest.h>

#include "burst/graph/zoo.h"
#include "burst/plan/plan.h"
#include "burst/cost/memory.h"
#include "burst/util/error.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::plan {
namespace {

using cost::SplitKind;
using testing::place_split;

const char* kFourHeadGpt2 = "gpt2:layers=1,width=64,heads=4,seq=16,vocab=64";
const std::string kBlock = "transformer.h.0.";

std::string refusal(const Plan& plan, const graph::Graph& graph) {
  try {
    validate_plan(plan, graph, testing::test_cluster(plan.devices, 1e9, 0));
  } catch (const UserError& error) {
    return error.what();
  }
  return "(accepted)";
}

TEST(TensorSplit, RefusesASplitThatDoesNotDivideNamingTheLayer) {
  // 3-way heads on 4 heads.
  const graph::Graph graph = graph::build_zoo_model(kFourHeadGpt2);
  Plan plan = plan_data_parallel(graph, 3, 6);
  place_split(plan, kBlock + "attn", SplitKind::Heads, {0, 1, 2}, 3);
  EXPECT_EQ(refusal(plan, graph),
            "plan layer 'transformer.h.0.attn' (self_attention): a 3-way heads split does not divide its 4 heads");
  // A column split of 256 output features 3 ways.
  plan = plan_data_parallel(graph, 3, 6);
  place_split(plan, kBlock + "mlp.c_fc", SplitKind::Column, {0, 1, 2}, 3);
  EXPECT_EQ(refusal(plan, graph), "plan layer 'transformer.h.0.mlp.c_fc' (linear): a 3-way column split does not "
                                  "divide its 256 output features");
}

TEST(TensorSplit, RefusesALayerThatNeedsWholeFeaturesKeepingASplit) {
  // c_proj's row split, then ln_2 of the next block kept as a features split: layernorm
  // normalises over all features, so it cannot read slices.
  const graph::Graph graph = graph::build_zoo_model("gpt2:layers=2,width=64,heads=4,seq=16,vocab=64");
  Plan plan = plan_data_parallel(graph, 2, 4);
  place_split(plan, kBlock + "mlp.c_proj", SplitKind::Row, {0, 1}, 2);
  place_split(plan, "transformer.h.1.ln_1", SplitKind::Features, {0, 1}, 2);
  EXPECT_EQ(refusal(plan, graph),
            "plan layer 'transformer.h.1.ln_1' (layernorm): cannot take a features split: a features split keeps its "
            "input's feature slices, but layernorm needs whole features (place it as samples or replicate: the "
            "re-shard to whole features is then derived)");
}

TEST(TensorSplit, RefusesASplitItsOpCannotTake) {
  const graph::Graph graph = graph::build_zoo_model(kFourHeadGpt2);
  Plan plan = plan_data_parallel(graph, 2, 4);
  place_split(plan, kBlock + "ln_1", SplitKind::Column, {0, 1}, 2);
  EXPECT_EQ(refusal(plan, graph), "plan layer 'transformer.h.0.ln_1' (layernorm): cannot take a column split: a "
                                  "column split is for linear layers, not layernorm");
  plan = plan_data_parallel(graph, 2, 4);
  place_split(plan, "lm_head", SplitKind::Column, {0, 1}, 2);
  EXPECT_EQ(refusal(plan, graph), "plan layer 'lm_head' (linear): cannot take a column split: its weight is tied to "
                                  "another layer's, and tied weights take no tensor split");
  plan = plan_data_parallel(graph, 2, 4);
  place_split(plan, kBlock + "attn", SplitKind::Heads, {0, 1}, 1);
  EXPECT_EQ(refusal(plan, graph),
            "plan layer 'transformer.h.0.attn' (self_attention): a heads split takes 2 parts or more, got 1 parts");
}

TEST(TensorSplit, RefusesPartsOfOneGroupWithDifferentSamples) {
  const graph::Graph graph = graph::build_zoo_model(kFourHeadGpt2);
  Plan plan = plan_data_parallel(graph, 2, 4);
  place_split(plan, kBlock + "mlp.c_fc", SplitKind::Column, {0, 1}, 2);
  plan.layers[static_cast<size_t>(*graph.find(kBlock + "mlp.c_fc"))].shards[1].samples = {0, 2};
  EXPECT_EQ(refusal(plan, graph), "plan layer 'transformer.h.0.mlp.c_fc' (linear): rank 1 (part 1) holds samples "
                                  "[0, 2), but its group's part 0 holds [0, 4)");
}

TEST(TensorSplit, PlanFilesKeepTheSplitAndVersion2FilesReadAsSampleSplits) {
  const graph::Graph graph = graph::build_zoo_model(kFourHeadGpt2);
  Plan plan = plan_data_parallel(graph, 4, 8);
  place_split(plan, kBlock + "mlp.c_fc", SplitKind::Column, {0, 1, 2, 3}, 2);
  const std::string text = plan_to_json_text(plan);
  EXPECT_NE(text.find(R"("split":{"kind":"column","parts":2})"), std::string::npos);
  const Plan read = plan_from_json_text(text);
  const auto id = static_cast<size_t>(*graph.find(kBlock + "mlp.c_fc"));
  EXPECT_EQ(read.layers[id].split, (cost::TensorSplit{SplitKind::Column, 2}));
  EXPECT_EQ(placement_fingerprint(read), placement_fingerprint(plan));
  Plan samples = plan;
  samples.layers[id].split = {};
  EXPECT_NE(placement_fingerprint(samples), placement_fingerprint(plan));
  EXPECT_THROW(plan_from_json_text(R"({"format": "burst.plan", "version": 3, "model": "m", "global_batch": 1,
      "devices": 1, "layers": [{"layer": "a", "shards": [[0, 0, 1]], "split": {"kind": "diagonal", "parts": 2}}]})"),
               UserError);
  // A version 2 file has no "split": a split there is refused as an unknown key.
  EXPECT_THROW(plan_from_json_text(R"({"format": "burst.plan", "version": 2, "model": "m", "global_batch": 1,
      "devices": 1, "layers": [{"layer": "a", "shards": [[0, 0, 1]], "split": {"kind": "column", "parts": 2}}]})"),
               UserError);
}

TEST(TensorSplit, MemoryCountsEachPartsShare) {
  // c_fc: 64 -> 256 with bias, 16640 parameters; a 4-way column split holds 4160 on each
  // part, and a quarter of its output: 16 x 64 floats a sample.
  const graph::Graph graph = graph::build_zoo_model(kFourHeadGpt2);
  const auto id = *graph.find(kBlock + "mlp.c_fc");
  const cost::LayerMemory whole = cost::layer_memory(graph, id, 2);
  const cost::LayerMemory part = cost::layer_memory(graph, id, 2, {}, {SplitKind::Column, 4});
  EXPECT_EQ(whole.weights.value(), 16640 * 4);
  EXPECT_EQ(part.weights.value(), 4160 * 4);
  EXPECT_EQ(whole.activations.value(), 2 * 16 * 256 * 4);
  EXPECT_EQ(part.activations.value(), 2 * 16 * 64 * 4);
  // c_proj: 256 -> 64, a row split divides the weight, each part keeps the 64 biases.
  const auto proj = *graph.find(kBlock + "mlp.c_proj");
  EXPECT_EQ(cost::part_params(graph, proj, {SplitKind::Row, 4}), 256 * 64 / 4 + 64);
  // attention: 4 x 64 x 64 + 4 x 64 parameters; heads split: all but the output bias.
  const auto attn = *graph.find(kBlock + "attn");
  EXPECT_EQ(cost::part_params(graph, attn, {SplitKind::Heads, 4}), (4 * 64 * 64 + 3 * 64) / 4 + 64);
}

}  // namespace
}  // namespace burst::plan
