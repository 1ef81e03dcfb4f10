// Sequence parallelism (cost/tensor_split.h, program/tensor_collectives.h) worked out by hand.
// input [4 tokens, 8] -> ln (layernorm) -> fc1 (linear 8 -> 16) -> fc2 (linear 16 -> 8) -> out
// (relu), on one tensor group of 2 ranks at global batch 2: input replicated, fc1 a column
// split, fc2 a row split, ln and out either replicated (Megatron without SP) or sequence
// splits (each rank 2 of the 4 tokens).
//  - With SP: forward, ln's output is all-gathered (fc1 reads it whole) and fc2's
//    reduce-scattered (out reads token slices); backward, the gradient into fc2 gathered and
//    the one into ln reduce-scattered (fc1's input gradient is a partial sum). Without: fc2's
//    output and fc1's input gradient all-reduced.
//  - Every collective moves the whole 2 x 4 x 8 fp32 tensor, 256 B. On 1 GB/s without latency
//    a ring reduce-scatter or all-gather over 2 ranks takes 1/2 x 256 B / 1 GB/s = 128 ns, an
//    all-reduce twice that: both steps spend 512 ns in tensor collectives.
//  - ln's weights (16 values, 64 B) see one token slice per rank under SP: their gradients
//    are summed over both ranks, an all-reduce of 2 x 1/2 x 64 B / 1 GB/s = 64 ns after ln's
//    backward. Replicated, both ranks hold the same gradient and nothing is reduced.
//  - Compute: 1 ms each way for every layer but the input (halved for ln and out under SP,
//    which run half the tokens), so without SP the step is 8 ms + 512 ns, with SP
//    6 ms + 512 ns + 64 ns (the linears take 2 ms each way whole, for the one-device baseline).
#include <gtest/gtest.h>

#include "burst/cost/memory.h"
#include "burst/graph/builder.h"
#include "burst/program/step_program.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::sim {
namespace {

using cost::SplitKind;
using plan::testing::ms;
using plan::testing::place_split;
using plan::testing::test_cluster;
using plan::testing::World;
using program::OpKind;

// `norms`: how ln and out are placed (a sequence split runs half the tokens: half the time).
World sequence_world(SplitKind norms = SplitKind::Sequence) {
  graph::GraphBuilder b("sp");
  const std::string ln = b.layernorm("ln", b.input("input", {4, 8}));
  b.relu("out", b.linear("fc2", b.linear("fc1", ln, 16), 8));
  World world(std::move(b).build(), test_cluster(2, 1e9, 0),
              {{"input", {ms(0), ms(0)}}, {"ln", {ms(1), ms(1)}}, {"fc1", {ms(2), ms(2)}}, {"fc2", {ms(2), ms(2)}},
               {"out", {ms(1), ms(1)}}});
  world.cost.with_tensor("fc1", 2, {ms(1), ms(1)}).with_tensor("fc2", 2, {ms(1), ms(1)});
  if (norms == SplitKind::Sequence) {
    world.cost.with_tensor("ln", 2, {ms(0.5), ms(0.5)}).with_tensor("out", 2, {ms(0.5), ms(0.5)});
  }
  return world;
}

plan::Plan sequence_plan(const graph::Graph& graph, SplitKind norms) {
  plan::Plan plan = plan::plan_data_parallel(graph, 2, 2);
  place_split(plan, "input", SplitKind::Replicate, {0, 1}, 2);
  place_split(plan, "ln", norms, {0, 1}, 2);
  place_split(plan, "fc1", SplitKind::Column, {0, 1}, 2);
  place_split(plan, "fc2", SplitKind::Row, {0, 1}, 2);
  place_split(plan, "out", norms, {0, 1}, 2);
  return plan;
}

struct Collective {
  OpKind kind;
  std::string layer;
  bool backward;
  bool operator==(const Collective& other) const {
    return kind == other.kind && layer == other.layer && backward == other.backward;
  }
};

std::vector<Collective> tensor_collectives(const program::StepProgram& program, const graph::Graph& graph, int rank) {
  std::vector<Collective> found;
  for (const program::Op& op : program.ops[static_cast<size_t>(rank)]) {
    if (op.kind != OpKind::TensorAllReduce && op.kind != OpKind::TensorReduceScatter && op.kind != OpKind::TensorAllGather) {
      continue;
    }
    EXPECT_EQ(op.bytes, 2 * 4 * 8 * 4);
    EXPECT_EQ(program.groups[static_cast<size_t>(op.group)], (std::vector<int>{0, 1}));
    found.push_back({op.kind, graph.layer(op.layer).name, op.backward});
  }
  return found;
}

TEST(SequenceParallel, GathersAndReduceScattersTakeTheAllReducesPlaces) {
  const World world = sequence_world();
  const plan::Plan with_sp = sequence_plan(world.graph, SplitKind::Sequence);
  plan::validate_plan(with_sp, world.graph, world.network.cluster());
  const program::StepProgram sp = program::build_step_program(world.graph, with_sp);
  program::check_step_program(sp, world.graph, with_sp);
  const std::vector<Collective> expected_sp = {{OpKind::TensorAllGather, "ln", false},
                                               {OpKind::TensorReduceScatter, "fc2", false},
                                               {OpKind::TensorAllGather, "fc2", true},
                                               {OpKind::TensorReduceScatter, "ln", true}};
  const plan::Plan without = sequence_plan(world.graph, SplitKind::Replicate);
  const program::StepProgram plain = program::build_step_program(world.graph, without);
  const std::vector<Collective> expected_plain = {{OpKind::TensorAllReduce, "fc2", false},
                                                  {OpKind::TensorAllReduce, "fc1", true}};
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(tensor_collectives(sp, world.graph, rank), expected_sp) << "rank " << rank;
    EXPECT_EQ(tensor_collectives(plain, world.graph, rank), expected_plain) << "rank " << rank;
  }
  // ln's gradients are summed over both ranks under SP only.
  ASSERT_EQ(sp.buckets.size(), 1u);
  EXPECT_EQ(sp.buckets[0].layers, (std::vector<graph::LayerId>{*world.graph.find("ln")}));
  EXPECT_EQ(sp.groups[static_cast<size_t>(sp.buckets[0].group)], (std::vector<int>{0, 1}));
  EXPECT_TRUE(plain.buckets.empty());
}

TEST(SequenceParallel, EvaluatorAndSimulatorTimeTheCollectivesByHand) {
  const auto step = [&](SplitKind norms) {
    const World world = sequence_world(norms);
    const plan::Plan plan = sequence_plan(world.graph, norms);
    const double simulated = simulate(plan, world.context(), {}).iteration_time.s();
    EXPECT_NEAR(timing::evaluate_plan(plan, world.context(), {}).iteration_time.s(), simulated, 1e-12);
    return simulated;
  };
  EXPECT_NEAR(step(SplitKind::Replicate), 8e-3 + 512e-9, 1e-12);
  EXPECT_NEAR(step(SplitKind::Sequence), 6e-3 + 512e-9 + 64e-9, 1e-12);
}

TEST(SequenceParallel, ANormKeepsItsTokensShareOfTheActivations) {
  const World world = sequence_world();
  const graph::LayerId ln = *world.graph.find("ln");
  const cost::MemoryOptions options;
  const double whole = cost::layer_memory(world.graph, ln, 2, options, {SplitKind::Replicate, 2}).activations.value();
  const double sliced = cost::layer_memory(world.graph, ln, 2, options, {SplitKind::Sequence, 2}).activations.value();
  EXPECT_GT(whole, 0);
  EXPECT_DOUBLE_EQ(sliced, whole / 2);
}

TEST(SequenceParallel, RefusesLayersThatDoNotWorkTokenByToken) {
  const World world = sequence_world();
  plan::Plan plan = sequence_plan(world.graph, SplitKind::Sequence);
  place_split(plan, "fc1", SplitKind::Sequence, {0, 1}, 2);
  try {
    plan::validate_plan(plan, world.graph, world.network.cluster());
    FAIL() << "a sequence split of a linear was accepted";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("a sequence split is for element-wise layers and norms"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace burst::sim
