// Context parallelism (plan::Plan::context_parallel, docs/step-program.md) worked out by hand.
// ids [8 tokens] -> emb (embedding 16 x 8) -> attn (causal self_attention, 2 heads of 4)
// -> head (linear 8 -> 16, no bias) -> loss, at global batch 2 on one context group of
// C = 2 devices: each device runs both samples' 4 of the 8 tokens.
//  - Ring attention: a device's keys and values are 2 samples x 4 tokens x 2 kv heads x
//    (4 + 4) values x 4 B = 512 B. C - 1 = 1 pass forward; backward 2 x 512 B (keys, values
//    and their gradients). On links of 1 MB/s without latency a pass of 512 B takes 512 us.
//  - With nothing computed (every layer 0 ms) nothing hides a pass: CP_RING adds 512 us
//    before attn's F and 1024 us before its B.
//  - The gradients (emb 128, attn 4 x (64 + 8) = 288 and head 128 values, fp32: 2,176 B)
//    are summed over both devices (each holds a token share's partial sum): one all-reduce
//    of 2,176 B over 2 ranks, 2 x 1/2 x 2,176 B / 1 MB/s = 2,176 us after the backward.
//    The step: 512 + 1024 + 2176 us.
//  - Give attn 1 ms of forward and 2 ms of backward on its token share and links of 1 GB/s:
//    a pass (512 ns) hides behind half the core's time (1/C of it), so the ring adds nothing
//    and the step is 3 ms + the all-reduce (2,176 ns).
//  - Memory: a device keeps its 1/C of every activation, and ring attention's four blocks
//    of 512 B while attn runs (the keys and values it computes on, the pair arriving, and
//    their two gradients): 2,048 B.
#include <gtest/gtest.h>

#include "burst/cost/memory.h"
#include "burst/graph/builder.h"
#include "burst/program/step_memory.h"
#include "burst/program/step_program.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
#include "test_world.h"

namespace burst::sim {
namespace {

using plan::testing::ms;
using plan::testing::test_cluster;
using plan::testing::World;
using program::OpKind;

graph::Graph ring_graph() {
  graph::GraphBuilder b("cp");
  std::string x = b.embedding("emb", b.token_input("ids", 8, 16), 16, 8);
  x = b.self_attention("attn", x, 2, true);
  x = b.linear("head", x, 16, false);
  b.cross_entropy("loss", x);
  return std::move(b).build();
}

// Every layer 0 ms on a whole sample; attn `forward_ms` and `backward_ms` on a token share.
World ring_world(double bytes_per_second, double forward_ms = 0, double backward_ms = 0) {
  std::map<std::string, cost::FakeLayerCost> whole;
  for (const char* name : {"ids", "emb", "attn", "head", "loss"}) whole[name] = {ms(0), ms(0)};
  World world(ring_graph(), test_cluster(2, bytes_per_second, 0), whole);
  for (const char* name : {"ids", "emb", "head", "loss"}) world.cost.with_tensor(name, 1, {ms(0), ms(0)}, 2);
  world.cost.with_tensor("attn", 1, {ms(forward_ms), ms(backward_ms)}, 2);
  return world;
}

// Every layer on context group 0, whose 2 devices hold both samples.
plan::Plan ring_plan(const graph::Graph& graph) {
  plan::Plan plan = plan::plan_data_parallel(graph, 1, 2);
  plan.devices = 2;
  plan.context_parallel = 2;
  return plan;
}

TEST(ContextParallel, EachAttentionRingsOverTheContextGroupAndGradientsSpanIt) {
  const World world = ring_world(1e6);
  const plan::Plan plan = ring_plan(world.graph);
  plan::validate_plan(plan, world.graph, world.network.cluster());
  const program::StepProgram program = program::build_step_program(world.graph, plan);
  program::check_step_program(program, world.graph, plan);
  const graph::LayerId attn = *world.graph.find("attn");
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<bool> rings;  // backward?
    const std::vector<program::Op>& ops = program.ops[static_cast<size_t>(rank)];
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != OpKind::ContextRing) continue;
      EXPECT_EQ(ops[i].layer, attn);
      EXPECT_EQ(ops[i].bytes, 512);
      EXPECT_EQ(program.groups[static_cast<size_t>(ops[i].group)], (std::vector<int>{0, 1}));
      ASSERT_LT(i + 1, ops.size());
      EXPECT_EQ(ops[i + 1].kind, ops[i].backward ? OpKind::Backward : OpKind::Forward);
      rings.push_back(ops[i].backward);
    }
    EXPECT_EQ(rings, (std::vector<bool>{false, true})) << "rank " << rank;
  }
  ASSERT_EQ(program.buckets.size(), 1u);
  EXPECT_EQ(program.buckets[0].bytes, (128 + 288 + 128) * 4);
  EXPECT_EQ(program.groups[static_cast<size_t>(program.buckets[0].group)], (std::vector<int>{0, 1}));
}

TEST(ContextParallel, EvaluatorAndSimulatorTimeTheRingByHand) {
  const auto step = [](const World& world) {
    const plan::Plan plan = ring_plan(world.graph);
    const double simulated = simulate(plan, world.context(), {}).iteration_time.s();
    EXPECT_NEAR(timing::evaluate_plan(plan, world.context(), {}).iteration_time.s(), simulated, 1e-12);
    return simulated;
  };
  EXPECT_NEAR(step(ring_world(1e6)), 512e-6 + 1024e-6 + 2176e-6, 1e-12);
  // The core: what attention_core_forward_share says of attn's work; a pass hides behind it.
  const World hidden = ring_world(1e9, 1, 2);
  const double core_share = cost::attention_core_forward_share(hidden.graph, *hidden.graph.find("attn"));
  ASSERT_GT(core_share * 1e-3 / 2, 512e-9);
  EXPECT_NEAR(step(hidden), 3e-3 + 2176e-9, 1e-12);
}

TEST(ContextParallel, ADeviceKeepsItsTokenShareAndTheRingsBlocks) {
  const World world = ring_world(1e6);
  const plan::Plan plan = ring_plan(world.graph);
  plan::Plan one = plan::plan_data_parallel(world.graph, 1, 2);
  const std::vector<program::DeviceMemory> split = program::plan_memory(plan, world.graph, cost::Optimizer::Sgd, {});
  const std::vector<program::DeviceMemory> whole = program::plan_memory(one, world.graph, cost::Optimizer::Sgd, {});
  ASSERT_EQ(split.size(), 2u);
  ASSERT_EQ(whole.size(), 1u);
  for (const program::DeviceMemory& device : split) {
    EXPECT_DOUBLE_EQ(device.use.weights.value(), whole[0].use.weights.value());
    EXPECT_DOUBLE_EQ(device.use.activations.value(), whole[0].use.activations.value() / 2);
    // 4 blocks of 2 samples x 4 tokens x 2 kv heads x 8 values x 4 B.
    EXPECT_DOUBLE_EQ(device.use.buffers.value(), 4 * 512.0);
  }
  EXPECT_EQ(split[1].rank, 1);
}

TEST(ContextParallel, RefusesTokensThatDoNotCutIntoTwoChunksADevice) {
  const World world = ring_world(1e6);
  plan::Plan plan = plan::plan_data_parallel(world.graph, 1, 2);
  plan.devices = 8;
  plan.context_parallel = 8;  // 8 tokens into 16 chunks
  const cluster::Cluster cluster = test_cluster(8, 1e6, 0);
  try {
    plan::validate_plan(plan, world.graph, cluster);
    FAIL() << "16 chunks of 8 tokens were accepted";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("cuts each sample's 8 tokens into 16 chunks"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace burst::sim
