// Memory at scale, counted by hand (docs/cost-model.md, "Memory"): mixed precision, ZeRO's
// stages and activation recomputation.
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/program/recompute_units.h"
#include "burst/program/step_memory.h"

namespace burst::program {
namespace {

// input [75000] -> fc linear to 100000 (no bias) -> loss: 7.5e9 parameters, the ZeRO
// paper's example (Rajbhandari et al., SC'20, Figure 1: Psi = 7.5B, N_d = 64, K = 12).
graph::Graph zero_paper_model() {
  graph::GraphBuilder b("zero_paper");
  std::string x = b.input("input", {75000});
  x = b.linear("fc", x, 100000, /*bias=*/false);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

// Weights + gradients + optimizer state of rank 0, in GB.
double model_states_gb(const graph::Graph& graph, int replicas, const ProgramOptions& options) {
  const auto memory = plan_memory(plan::plan_data_parallel(graph, replicas, replicas), graph, cost::Optimizer::Adam, options);
  const cost::LayerMemory& use = memory.front().use;
  return (use.weights + use.gradients + use.optimizer_state + use.buffers).value() / 1e9;
}

TEST(ScaleMemory, MixedPrecisionAdamBytesPerParameterUnderEachZeroStage) {
  const graph::Graph graph = zero_paper_model();
  ASSERT_EQ(graph.info(*graph.find("fc")).params, 7'500'000'000);
  ProgramOptions options;
  options.precision = cost::Precision::Bf16;
  // Mixed-precision Adam: 2 (bf16 weight) + 2 (bf16 gradient) + K = 12 (fp32 master weight,
  // momentum and variance) = 16 bytes a parameter: 120 GB on every replica.
  EXPECT_DOUBLE_EQ(model_states_gb(graph, 64, options), 120);
  // ZeRO-1 on 64 replicas: 2 + 2 + 12 / 64 bytes: 30 + 1.40625 = 31.40625 GB (paper: 31.4).
  options.zero_stage = 1;
  EXPECT_DOUBLE_EQ(model_states_gb(graph, 64, options), 31.40625);
  // ZeRO-2: 2 + (2 + 12) / 64: 15 + 1.640625 = 16.640625 GB (paper: 16.6).
  options.zero_stage = 2;
  EXPECT_DOUBLE_EQ(model_states_gb(graph, 64, options), 16.640625);
  // ZeRO-3: 16 / 64 = 0.25 bytes: 1.875 GB (paper: 1.9), plus the layer's whole bf16
  // weights gathered while it runs (2 x 7.5e9 = 15 GB; the paper's figure leaves this
  // working buffer out; FSDP bounds it by wrapping the model in units).
  options.zero_stage = 3;
  EXPECT_DOUBLE_EQ(model_states_gb(graph, 64, options), 1.875 + 15);
  // fp32 Adam: 4 + 4 + 8 = 16 bytes too, but no master copy; ZeRO-1: 8 + 8 / 64 bytes.
  options.precision = cost::Precision::Fp32;
  options.zero_stage = 1;
  EXPECT_DOUBLE_EQ(model_states_gb(graph, 64, options), 60 + 0.9375);
  // One replica: ZeRO divides by 1.
  options.zero_stage = 2;
  EXPECT_DOUBLE_EQ(model_states_gb(graph, 1, options), 120);
}

// input [4] -> fc1 (8) -> relu1 -> fc2 (8) -> relu2 -> fc3 (3) -> loss: a chain, where a
// recompute unit may start at any layer after the input. fp32 bytes kept per sample
// (outputs): input 16, fc1 32, relu1 32, fc2 32, relu2 32, fc3 12, loss 4: 160.
graph::Graph chain() {
  graph::GraphBuilder b("chain");
  std::string x = b.input("input", {4});
  x = b.relu("relu1", b.linear("fc1", x, 8));
  x = b.relu("relu2", b.linear("fc2", x, 8));
  x = b.linear("fc3", x, 3);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

TEST(ScaleMemory, RecomputeUnitsMinimiseKeptInputsPlusTheLargestUnit) {
  const graph::Graph graph = chain();
  // One unit: nothing kept but the data, the largest unit 160: 160. Two units cut at fc2:
  // relu1's 32 kept, units of 16 + 32 + 32 = 80 and 32 + 32 + 12 + 4 = 80: 32 + 80 = 112.
  // Cut at fc1 or relu2 instead: 32 + 112 = 144; three units (cuts at relu1 and relu2, or
  // fc2 and fc3 ...): at least 64 kept + 64 largest = 128. Best: one cut, at fc2.
  const RecomputeUnits units = recompute_units(graph);
  ASSERT_EQ(units.starts, std::vector<graph::LayerId>{*graph.find("fc2")});
  EXPECT_TRUE(units.kept[static_cast<size_t>(*graph.find("relu1"))]);
  EXPECT_TRUE(units.kept[static_cast<size_t>(*graph.find("input"))]);
  EXPECT_FALSE(units.kept[static_cast<size_t>(*graph.find("fc1"))]);
  EXPECT_EQ(units.unit_of[static_cast<size_t>(*graph.find("loss"))], 1);
}

TEST(ScaleMemory, FullRecomputeKeepsUnitInputsAndOneUnitAtATime) {
  const graph::Graph graph = chain();
  ProgramOptions options;
  plan::Plan one = plan::plan_data_parallel(graph, 1, 2);
  // Batch 2, nothing recomputed: 160 x 2 = 320 bytes of activations.
  EXPECT_EQ(plan_memory(one, graph, cost::Optimizer::Sgd, options)[0].use.activations.value(), 320);
  // Full: the data (16 x 2) and relu1's output (32 x 2) kept, and one unit of 80 x 2
  // rebuilt while it runs backward: 32 + 64 + 160 = 256.
  options.recompute = cost::Recompute::Full;
  EXPECT_EQ(plan_memory(one, graph, cost::Optimizer::Sgd, options)[0].use.activations.value(), 256);
  // A 1F1B pipeline of 4 micro-batches of 1 on one stage... keeps the kept inputs of the
  // micro-batches in flight: one stage holds 1 (1F1B, p - s = 1), GPipe all 4.
  plan::Plan accumulated = plan::plan_data_parallel(graph, 1, 4);
  accumulated.pipeline.micro_batches = 4;
  accumulated.pipeline.schedule = plan::Schedule::GPipe;
  for (auto& layer : accumulated.layers) layer.shards = {cost::Shard{0, {0, 1}}};
  // GPipe, 4 in flight: kept (16 + 32) x 4 = 192, one unit of one sample 80: 272. Without
  // recomputation: 160 x 4 = 640.
  EXPECT_EQ(plan_memory(accumulated, graph, cost::Optimizer::Sgd, options)[0].use.activations.value(), 272);
  options.recompute = cost::Recompute::None;
  EXPECT_EQ(plan_memory(accumulated, graph, cost::Optimizer::Sgd, options)[0].use.activations.value(), 640);
}

TEST(ScaleMemory, SelectiveRecomputeHoldsOneAttentionCoreAtATime) {
  // tokens [4, 8] -> attn1 (2 heads) -> attn2 (2 heads) -> loss. Per sample, each attention
  // keeps its output 128, q/k/v/merged 512 and probabilities 2 x 4 x 4 x 4 = 128 bytes.
  graph::GraphBuilder b("attention");
  std::string x = b.input("tokens", {4, 8});
  x = b.self_attention("attn1", x, 2);
  x = b.self_attention("attn2", x, 2);
  b.cross_entropy("loss", x);
  const graph::Graph graph = std::move(b).build();
  const plan::Plan one = plan::plan_data_parallel(graph, 1, 3);
  ProgramOptions options;
  const double none = plan_memory(one, graph, cost::Optimizer::Sgd, options)[0].use.activations.value();
  options.recompute = cost::Recompute::Selective;
  const double selective = plan_memory(one, graph, cost::Optimizer::Sgd, options)[0].use.activations.value();
  // Selective drops both layers' probabilities (2 x 128 x 3) and holds one (128 x 3).
  EXPECT_EQ(none - selective, 128 * 3);
  // bf16 halves every activation.
  options.precision = cost::Precision::Bf16;
  EXPECT_EQ(plan_memory(one, graph, cost::Optimizer::Sgd, options)[0].use.activations.value(), selective / 2);
}

}  // namespace
}  // namespace burst::program

namespace burst::program {
namespace {

// The lower bounds `--strategy auto` skips the searches without tensor splits by, on the
// ZeRO paper's model (one 7.5e9-parameter layer, mixed-precision Adam, 16 bytes a parameter).
TEST(ScaleMemory, UnsplitStateBounds) {
  const graph::Graph graph = zero_paper_model();
  ProgramOptions options;
  options.precision = cost::Precision::Bf16;
  // One layer's state, unsharded: 120 GB; under ZeRO-1 over all 64 devices: 31.40625 GB.
  const LayerStateBound layer = largest_unsplit_layer_state(graph, cost::Optimizer::Adam, options, 64);
  EXPECT_EQ(graph.layer(layer.layer).name, "fc");
  EXPECT_DOUBLE_EQ(layer.bytes.value(), 120e9);
  // A pipeline of at most 64 stages: 120 GB / 64 = 1.875 GB; under ZeRO-1, 31.40625 / 64.
  EXPECT_DOUBLE_EQ(unsplit_pipeline_state_bound(graph, cost::Optimizer::Adam, options, 64, 64).value(), 1.875e9);
  options.zero_stage = 1;
  EXPECT_DOUBLE_EQ(largest_unsplit_layer_state(graph, cost::Optimizer::Adam, options, 64).bytes.value(), 31.40625e9);
  EXPECT_DOUBLE_EQ(unsplit_pipeline_state_bound(graph, cost::Optimizer::Adam, options, 64, 64).value(),
                   31.40625e9 / 64);
}

// Counting some ranks gives exactly their entries of counting all.
TEST(ScaleMemory, CountingSomeRanksGivesTheirEntriesOfAll) {
  const graph::Graph graph = zero_paper_model();
  const plan::Plan plan = plan::plan_data_parallel(graph, 4, 6);  // 2, 2, 1, 1 samples
  for (const int zero : {0, 3}) {
    ProgramOptions options;
    options.zero_stage = zero;
    options.recompute = cost::Recompute::Full;
    const auto all = plan_memory(plan, graph, cost::Optimizer::Adam, options);
    const auto some = plan_memory_of_ranks(plan, graph, cost::Optimizer::Adam, options, select_ranks(plan, {1, 3}));
    ASSERT_EQ(some.size(), 2u);
    for (size_t i = 0; i < some.size(); ++i) {
      const DeviceMemory& expected = all[static_cast<size_t>(some[i].rank)];
      EXPECT_EQ(some[i].rank, i == 0 ? 1 : 3);
      EXPECT_EQ(some[i].use.total().value(), expected.use.total().value());
      EXPECT_EQ(some[i].use.activations.value(), expected.use.activations.value());
      EXPECT_EQ(some[i].largest_layer, expected.largest_layer);
    }
  }
}

}  // namespace
}  // namespace burst::program
