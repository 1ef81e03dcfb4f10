// The memory model, counted by hand (docs/cost-model.md, "Memory").
#include "burst/program/step_memory.h"

#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/util/error.h"

namespace burst::program {
using plan::plan_data_parallel;
using plan::Plan;
using plan::Schedule;
namespace {

// input [4] -> fc1 linear to 8 -> fc2 linear to 3 -> loss.
// Parameters: fc1 4 x 8 + 8 = 40, fc2 8 x 3 + 3 = 27: 67 in all, 268 bytes in fp32.
// Output bytes per sample: input 4 x 4 = 16, fc1 8 x 4 = 32, fc2 3 x 4 = 12, the loss's
// scalar 4: 64.
graph::Graph two_layers() {
  graph::GraphBuilder b("two_layers");
  std::string x = b.input("input", {4});
  x = b.linear("fc1", x, 8);
  x = b.linear("fc2", x, 3);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

TEST(PlanMemory, TwoLayersWithAdamEqualTheHandCount) {
  const graph::Graph graph = two_layers();
  // One device, batch 2, Adam: weights 268, gradients 268, two moments 2 x 268 = 536,
  // activations 2 x 64 = 128: 1200 bytes.
  const auto one = plan_memory(plan_data_parallel(graph, 1, 2), graph, cost::Optimizer::Adam);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].use.weights.value(), 268);
  EXPECT_EQ(one[0].use.gradients.value(), 268);
  EXPECT_EQ(one[0].use.optimizer_state.value(), 536);
  EXPECT_EQ(one[0].use.activations.value(), 128);
  EXPECT_EQ(one[0].use.total().value(), 1200);
  // fc1: 160 + 160 + 320 + 64 = 704 bytes, the most.
  EXPECT_EQ(graph.layer(one[0].largest_layer).name, "fc1");
  EXPECT_EQ(one[0].largest_layer_bytes.value(), 704);
  // Momentum keeps one buffer (268), plain SGD none.
  EXPECT_EQ(plan_memory(plan_data_parallel(graph, 1, 2), graph, cost::Optimizer::Momentum)[0].use.total().value(), 932);
  EXPECT_EQ(plan_memory(plan_data_parallel(graph, 1, 2), graph, cost::Optimizer::Sgd)[0].use.total().value(), 664);
}

TEST(PlanMemory, EachRankCountsTheLayersItHoldsAtItsShard) {
  const graph::Graph graph = two_layers();
  // Data parallel on 2 devices, batch 2: each rank holds every weight (268 x 4 with Adam)
  // and one sample's activations (64): 1136.
  const auto dp = plan_memory(plan_data_parallel(graph, 2, 2), graph, cost::Optimizer::Adam);
  EXPECT_EQ(dp[0].use.total().value(), 1136);
  EXPECT_EQ(dp[1].use.total().value(), 1136);
  // fc2 and the loss on rank 1 alone, both samples: rank 0 holds input and fc1 at one sample
  // (160 x 4 + 16 + 32 = 688); rank 1 holds input and fc1 at one sample, fc2 (27 x 16 = 432
  // + 2 x 12) and the loss (2 x 4): 688 + 456 + 8 = 1152, the peak.
  Plan plan = plan_data_parallel(graph, 2, 2);
  for (const char* name : {"fc2", "loss"}) {
    plan.layers[static_cast<size_t>(*graph.find(name))].shards = {cost::Shard{1, {0, 2}}};
  }
  const auto split = plan_memory(plan, graph, cost::Optimizer::Adam);
  EXPECT_EQ(split[0].use.total().value(), 688);
  EXPECT_EQ(split[1].use.total().value(), 1152);
  EXPECT_EQ(peak_memory(split).rank, 1);
  const std::string line = memory_text(peak_memory(split), graph, MemoryCapacity{"a100", Bytes(1024)});
  EXPECT_EQ(line, "rank 1 needs 1.15 kB (weights 268 B, gradients 268 B, optimizer state 536 B, activations 80 B; "
                  "layer 'fc1' the most, 672 B) of 1.02 kB per a100");
}

TEST(PlanMemory, APlanOverCapacityGivesWayToDataParallelOrNoPlanFits) {
  const graph::Graph graph = two_layers();
  Plan uneven = plan_data_parallel(graph, 2, 2);  // fc2 and the loss on rank 1: peak 1152 B
  for (const char* name : {"fc2", "loss"}) {
    uneven.layers[static_cast<size_t>(*graph.find(name))].shards = {cost::Shard{1, {0, 2}}};
  }
  // 1200 B per device: it fits, and is kept.
  FittedPlan kept = fit_in_memory(uneven, "burst", graph, cost::Optimizer::Adam, MemoryCapacity{"a100", Bytes(1200)});
  EXPECT_TRUE(kept.note.empty());
  EXPECT_EQ(peak_memory(kept.memory).use.total().value(), 1152);
  // 1140 B: data parallelism (1136 B per rank) fits, the uneven plan does not.
  FittedPlan replaced = fit_in_memory(uneven, "burst", graph, cost::Optimizer::Adam, MemoryCapacity{"a100", Bytes(1140)});
  EXPECT_EQ(placement_fingerprint(replaced.plan), placement_fingerprint(plan_data_parallel(graph, 2, 2)));
  EXPECT_EQ(peak_memory(replaced.memory).use.total().value(), 1136);
  EXPECT_NE(replaced.note.find("the burst plan does not fit: rank 1 needs 1.15 kB"), std::string::npos) << replaced.note;
  // 1100 B: nothing fits; the smallest requirement is data parallelism's.
  try {
    fit_in_memory(uneven, "burst", graph, cost::Optimizer::Adam, MemoryCapacity{"a100", Bytes(1100)});
    ADD_FAILURE() << "expected no plan to fit";
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()),
              "no plan fits in memory (optimizer adam, precision fp32, recompute none, ZeRO 0): the smallest requirement found is the data-parallel plan's: "
              "rank 0 needs 1.14 kB (weights 268 B, gradients 268 B, optimizer state 536 B, activations 64 B; "
              "layer 'fc1' the most, 672 B) of 1.10 kB per a100");
  }
}

TEST(PlanMemory, OptimizerNamesParseAndUnknownOnesAreRefused) {
  EXPECT_EQ(cost::parse_optimizer("adam"), cost::Optimizer::Adam);
  EXPECT_EQ(cost::optimizer_name(cost::parse_optimizer("momentum")), std::string("momentum"));
  EXPECT_THROW(cost::parse_optimizer("lamb"), UserError);
}

TEST(PlanMemory, PipelineStagesKeepTheirMicroBatchesInFlight) {
  const graph::Graph graph = two_layers();
  // Batch 8 in 4 micro-batches of 2; stage 0 (input, fc1) on rank 0, stage 1 (fc2, loss) on
  // rank 1, SGD (weights and gradients: fc1 320, fc2 216).
  Plan plan = plan_data_parallel(graph, 2, 8);
  plan.pipeline.micro_batches = 4;
  plan.pipeline.stage_starts = {*graph.find("fc2")};
  for (size_t id = 0; id < plan.layers.size(); ++id) {
    plan.layers[id].shards = {cost::Shard{plan.stage_of(static_cast<graph::LayerId>(id)) == 0 ? 0 : 1, {0, 2}}};
  }
  // 1F1B: stage 0 of 2 holds 2 micro-batches (4 samples) of input and fc1 (4 x 48 = 192);
  // stage 1 holds 1 (2 samples) of fc2 and the loss (2 x 16 = 32).
  plan.pipeline.schedule = Schedule::OneFOneB;
  auto memory = plan_memory(plan, graph, cost::Optimizer::Sgd);
  EXPECT_EQ(memory[0].use.activations.value(), 192);
  EXPECT_EQ(memory[0].use.total().value(), 320 + 192);
  EXPECT_EQ(memory[1].use.activations.value(), 32);
  EXPECT_EQ(memory[1].use.total().value(), 216 + 32);
  // GPipe: every stage holds all 4 micro-batches (8 samples).
  plan.pipeline.schedule = Schedule::GPipe;
  memory = plan_memory(plan, graph, cost::Optimizer::Sgd);
  EXPECT_EQ(memory[0].use.activations.value(), 8 * 48);
  EXPECT_EQ(memory[1].use.activations.value(), 8 * 16);
}

TEST(PlanMemory, SelfAttentionKeepsItsProjectionsAndProbabilities) {
  // tokens [4, 8] -> attention with 2 heads: beyond its output (4 x 8 x 4 = 128 B a sample)
  // it keeps q, k, v and the merged heads (4 x 4 x 8 x 4 = 512 B) and the probabilities
  // (2 x 4 x 4 x 4 = 128 B): 768 B a sample.
  graph::GraphBuilder b("attention");
  b.self_attention("attn", b.input("tokens", {4, 8}), 2);
  const graph::Graph graph = std::move(b).build();
  const graph::LayerId attention = *graph.find("attn");
  EXPECT_EQ(cost::saved_inside_per_sample(graph, attention).value(), 640);
  EXPECT_EQ(cost::layer_memory(graph, attention, 3).activations.value(), 3 * 768);
}

}  // namespace
}  // namespace burst::plan
