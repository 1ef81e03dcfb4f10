// Step programs of tensor-split plans (cost/tensor_split.h), worked out by hand.
#include <algorithm>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/graph/zoo.h"
#include "burst/program/step_program.h"
#include "burst/util/error.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::program {
namespace {

using cost::SplitKind;
using plan::testing::place_split;

// gpt2:layers=1,width=64,heads=4,seq=16 at global batch 8. Everything on rank 0 but the
// block, which is Megatron's 4-way split on ranks 0-3: the layernorms, dropouts and
// residual adds replicated, attention by heads, the MLP column (c_fc) -> features (gelu) ->
// row (c_proj).
plan::Plan megatron_block_plan(const graph::Graph& graph) {
  plan::Plan plan = plan::plan_data_parallel(graph, 4, 8);
  for (plan::LayerPlacement& layer : plan.layers) layer.shards = {cost::Shard{0, {0, 8}}};
  const std::string h = "transformer.h.0.";
  for (const char* name : {"ln_1", "attn.resid_dropout", "add_1", "ln_2", "mlp.dropout", "add_2"}) {
    place_split(plan, h + name, SplitKind::Replicate, {0, 1, 2, 3}, 4);
  }
  place_split(plan, h + "attn", SplitKind::Heads, {0, 1, 2, 3}, 4);
  place_split(plan, h + "mlp.c_fc", SplitKind::Column, {0, 1, 2, 3}, 4);
  place_split(plan, h + "mlp.act", SplitKind::Features, {0, 1, 2, 3}, 4);
  place_split(plan, h + "mlp.c_proj", SplitKind::Row, {0, 1, 2, 3}, 4);
  return plan;
}

TEST(TensorProgram, AMegatronBlockHasTwoAllReducesEachWayAndNoneInsideTheMlp) {
  const graph::Graph graph = graph::build_zoo_model("gpt2:layers=1,width=64,heads=4,seq=16,vocab=64");
  const plan::Plan plan = megatron_block_plan(graph);
  plan::validate_plan(plan, graph, plan::testing::test_cluster(4, 1e9, 0));
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);
  // b x s x h x 4 bytes: 8 samples x 16 tokens x 64 features x 4 B = 32768 B.
  const int64_t bsh4 = 8 * 16 * 64 * 4;
  const std::string h = "transformer.h.0.";
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<std::string> forward, backward;
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      if (op.kind != OpKind::TensorAllReduce) continue;
      EXPECT_EQ(op.bytes, bsh4);
      EXPECT_EQ(program.groups[static_cast<size_t>(op.group)], (std::vector<int>{0, 1, 2, 3}));
      (op.backward ? backward : forward).push_back(graph.layer(op.layer).name);
    }
    // Forward: attention's output and c_proj's. Backward (in reverse order): c_fc's input
    // gradient (into ln_2) and attention's (into ln_1).
    EXPECT_EQ(forward, (std::vector<std::string>{h + "attn", h + "mlp.c_proj"})) << "rank " << rank;
    EXPECT_EQ(backward, (std::vector<std::string>{h + "mlp.c_fc", h + "attn"})) << "rank " << rank;
  }
  // The block is one segment: nothing moves between its layers, so in particular nothing
  // between the column and row halves of the MLP.
  const graph::LayerId c_fc = *graph.find(h + "mlp.c_fc");
  const graph::LayerId c_proj = *graph.find(h + "mlp.c_proj");
  EXPECT_EQ(program.segment_of[static_cast<size_t>(c_fc)], program.segment_of[static_cast<size_t>(c_proj)]);
  for (const Piece& piece : program.pieces) {
    EXPECT_FALSE(piece.producer >= *graph.find(h + "ln_1") && piece.consumer <= *graph.find(h + "add_2"))
        << graph.layer(piece.producer).name << " -> " << graph.layer(piece.consumer).name;
  }
  // Weights: each part of a 4-way split holds its quarter; none are all-reduced (one sample
  // group), so the block has no buckets.
  for (const Bucket& bucket : program.buckets) {
    for (const graph::LayerId id : bucket.layers) EXPECT_LT(id, *graph.find(h + "ln_1"));
  }
}

TEST(TensorProgram, TwoSampleGroupsAllReduceWeightsAmongTheSamePartOnly) {
  // The MLP of the same model split 2 ways in 2 sample groups: ranks {0,1} samples [0,4),
  // {2,3} samples [4,8). Part 0 is ranks 0 and 2, part 1 ranks 1 and 3: c_fc's gradients
  // (its half of the weights, 64 x 128 + 128 values) are all-reduced in {0,2} and {1,3}.
  const graph::Graph graph = graph::build_zoo_model("gpt2:layers=1,width=64,heads=4,seq=16,vocab=64");
  plan::Plan plan = plan::plan_data_parallel(graph, 4, 8);
  const std::string h = "transformer.h.0.";
  place_split(plan, h + "mlp.c_fc", SplitKind::Column, {0, 1, 2, 3}, 2);
  place_split(plan, h + "mlp.act", SplitKind::Features, {0, 1, 2, 3}, 2);
  place_split(plan, h + "mlp.c_proj", SplitKind::Row, {0, 1, 2, 3}, 2);
  plan::validate_plan(plan, graph, plan::testing::test_cluster(4, 1e9, 0));
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);
  const graph::LayerId c_fc = *graph.find(h + "mlp.c_fc");
  std::vector<std::vector<int>> groups;
  for (const Bucket& bucket : program.buckets) {
    if (std::find(bucket.layers.begin(), bucket.layers.end(), c_fc) == bucket.layers.end()) continue;
    groups.push_back(program.groups[static_cast<size_t>(bucket.group)]);
  }
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  // The tensor groups are {0,1} and {2,3}; c_proj's output all-reduce is 4 samples' worth.
  for (const Op& op : program.ops[2]) {
    if (op.kind != OpKind::TensorAllReduce) continue;
    EXPECT_EQ(program.groups[static_cast<size_t>(op.group)], (std::vector<int>{2, 3}));
    EXPECT_EQ(op.bytes, 4 * 16 * 64 * 4);
  }
}

// input [T=4, 12] -> lin (linear 12 -> 12) -> relu. Property: for random sample splits of
// the input and relu and random column splits (d groups x k parts on random ranks) of lin,
// the program's pieces deliver every element of every rank's block exactly once, forward
// and backward (check_step_program), and the messages move what the blocks say.
TEST(TensorProgram, PropertySampleToColumnAndBackCoversEveryElementOnce) {
  graph::GraphBuilder b("column");
  b.relu("relu", b.linear("lin", b.input("input", {4, 12}), 12));
  const graph::Graph graph = std::move(b).build();
  std::mt19937 random(3);
  const auto random_split = [&](int64_t batch, const std::vector<int>& ranks) {
    std::vector<cost::Shard> shards;
    int64_t begin = 0;
    for (size_t i = 0; i < ranks.size() && begin < batch; ++i) {
      const int64_t left = batch - begin;
      const int64_t size = i + 1 == ranks.size() ? left : 1 + static_cast<int64_t>(random() % static_cast<uint64_t>(left));
      shards.push_back(cost::Shard{ranks[i], {begin, begin + size}});
      begin += size;
    }
    if (begin < batch) shards.back().samples.end = batch;
    return shards;
  };
  for (int trial = 0; trial < 100; ++trial) {
    const int devices = 6;
    const int64_t batch = 2 + static_cast<int64_t>(random() % 7);
    std::vector<int> ranks{0, 1, 2, 3, 4, 5};
    plan::Plan plan = plan::plan_data_parallel(graph, devices, batch);
    std::shuffle(ranks.begin(), ranks.end(), random);
    plan.layers[0].shards = random_split(batch, {ranks[0], ranks[1], ranks[2]});
    std::shuffle(ranks.begin(), ranks.end(), random);
    plan.layers[2].shards = random_split(batch, {ranks[0], ranks[1]});
    const int32_t parts = trial % 2 == 0 ? 2 : 3;
    const int groups = std::min<int>(static_cast<int>(batch), 1 + static_cast<int>(random() % 2));
    std::shuffle(ranks.begin(), ranks.end(), random);
    place_split(plan, "lin", SplitKind::Column,
                std::vector<int>(ranks.begin(), ranks.begin() + groups * parts), parts);
    plan::validate_plan(plan, graph, plan::testing::test_cluster(devices, 1e9, 0));
    const StepProgram program = build_step_program(graph, plan);
    ASSERT_NO_THROW(check_step_program(program, graph, plan)) << "trial " << trial;
    // Into lin, every part receives its group's samples whole: k x the input's bytes in all.
    int64_t into = 0, back_out = 0;
    for (const Piece& piece : program.pieces) {
      if (piece.consumer == 1 && !piece.gradient) into += piece.bytes;
      if (piece.consumer == 2 && piece.gradient) back_out += piece.bytes;
    }
    EXPECT_EQ(into, parts * batch * 4 * 12 * 4) << "trial " << trial;
    // Back into lin's slices from relu: each part its slice, once: the output's bytes.
    EXPECT_EQ(back_out, batch * 4 * 12 * 4) << "trial " << trial;
  }
}

// Megatron's vocabulary-parallel head and loss on llama:layers=1,width=64,...,vocab=64,seq=16
// at global batch 2, everything else data-parallel on ranks 0 and 1: the head a 2-way column
// split on both, the loss a 2-way row split. The loss's forward all-reduces each token's
// maximum, exponential sum and target logit: 2 samples x 16 tokens x 12 B = 384 B; the head's
// backward all-reduces its input gradient, 2 x 16 x 64 fp32 values = 8192 B.
TEST(TensorProgram, AVocabularyParallelLossAllReducesThreeValuesAToken) {
  const graph::Graph graph = graph::build_zoo_model("llama:layers=1,width=64,heads=4,kv_heads=2,ffn=128,vocab=64,seq=16");
  plan::Plan plan = plan::plan_data_parallel(graph, 2, 2);
  place_split(plan, "lm_head", SplitKind::Column, {0, 1}, 2);
  place_split(plan, "loss", SplitKind::Row, {0, 1}, 2);
  plan::validate_plan(plan, graph, plan::testing::test_cluster(2, 1e9, 0));
  const StepProgram program = build_step_program(graph, plan);
  check_step_program(program, graph, plan);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::pair<std::string, int64_t>> found;
    for (const Op& op : program.ops[static_cast<size_t>(rank)]) {
      if (op.kind == OpKind::TensorAllReduce) found.emplace_back(graph.layer(op.layer).name, op.bytes);
    }
    EXPECT_EQ(found, (std::vector<std::pair<std::string, int64_t>>{{"loss", 384}, {"lm_head", 8192}})) << "rank " << rank;
  }
}

}  // namespace
}  // namespace burst::program
