// Expert parallelism (plan::Plan::expert_parallel, docs/step-program.md) worked out by hand.
// ids [8 tokens] -> emb (embedding 16 x 8) -> moe (4 SwiGLU experts of width 4, top-2, a
// router of 8 x 4) -> head (linear 8 -> 16, no bias) -> loss, data parallel on 4 ranks at
// global batch 4 (a sample a rank), experts over E = 2 sample groups: ranks {0, 1} and
// {2, 3} exchange tokens; ranks {0, 2} hold experts 0-1, {1, 3} experts 2-3.
//  - A dispatch or combine moves a rank's 8 tokens x top-2 x 8 values x 4 B = 512 B, half of
//    it to the other rank of its expert group: 256 B, 256 us on links of 1 MB/s without
//    latency. Each moe F and B has one of each: 4 x 256 us.
//  - Gradients: the router (32), emb (128) and head (128) over all 4 ranks: 1,152 B, a ring
//    all-reduce 2 x 3/4 x 1,152 B / 1 MB/s = 1,728 us; a rank's 2 experts (2 x 3 x 8 x 4 =
//    192 values, 768 B) over the 2 ranks that hold them: 2 x 1/2 x 768 B / 1 MB/s = 768 us.
//  - Nothing computes (every layer 0 ms), so the step is the collectives one after another:
//    1,024 + 768 + 1,728 us.
#include <gtest/gtest.h>

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

World expert_world(int64_t experts = 4) {
  graph::GraphBuilder b("ep");
  std::string x = b.embedding("emb", b.token_input("ids", 8, 16), 16, 8);
  graph::MoeAttrs moe;
  moe.experts = experts;
  moe.top_k = 2;
  moe.expert_ffn = 4;
  x = b.add("moe", {x}, moe);
  x = b.linear("head", x, 16, false);
  b.cross_entropy("loss", x);
  std::map<std::string, cost::FakeLayerCost> zero;
  for (const char* name : {"ids", "emb", "moe", "head", "loss"}) zero[name] = {ms(0), ms(0)};
  return World(std::move(b).build(), test_cluster(4, 1e6, 0), zero);
}

plan::Plan expert_plan(const graph::Graph& graph, int experts) {
  plan::Plan plan = plan::plan_data_parallel(graph, 4, 4);
  plan.expert_parallel = experts;
  return plan;
}

TEST(ExpertParallel, DispatchAndCombineAroundEachMoeComputeOverItsExpertGroup) {
  const World world = expert_world();
  const plan::Plan plan = expert_plan(world.graph, 2);
  plan::validate_plan(plan, world.graph, world.network.cluster());
  const program::StepProgram program = program::build_step_program(world.graph, plan);
  program::check_step_program(program, world.graph, plan);
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<OpKind> around;
    for (const program::Op& op : program.ops[static_cast<size_t>(rank)]) {
      if (op.kind != OpKind::ExpertDispatch && op.kind != OpKind::ExpertCombine) continue;
      around.push_back(op.kind);
      EXPECT_EQ(op.bytes, 512);
      EXPECT_EQ(program.groups[static_cast<size_t>(op.group)],
                (rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}));
    }
    EXPECT_EQ(around, (std::vector<OpKind>{OpKind::ExpertDispatch, OpKind::ExpertCombine, OpKind::ExpertCombine,
                                           OpKind::ExpertDispatch}))
        << "rank " << rank;
  }
  // Buckets: the experts over the ranks holding them, the rest over all four.
  std::map<std::vector<int>, int64_t> bytes;
  for (const program::Bucket& bucket : program.buckets) bytes[program.groups[static_cast<size_t>(bucket.group)]] += bucket.bytes;
  EXPECT_EQ(bytes, (std::map<std::vector<int>, int64_t>{{{0, 1, 2, 3}, 1152}, {{0, 2}, 768}, {{1, 3}, 768}}));
}

TEST(ExpertParallel, EvaluatorAndSimulatorTimeTheAllToAllsByHand) {
  const World world = expert_world();
  const plan::Plan plan = expert_plan(world.graph, 2);
  const double simulated = simulate(plan, world.context(), {}).iteration_time.s();
  EXPECT_NEAR(timing::evaluate_plan(plan, world.context(), {}).iteration_time.s(), simulated, 1e-12);
  EXPECT_NEAR(simulated, 1024e-6 + 768e-6 + 1728e-6, 1e-12);
}

TEST(ExpertParallel, ARankHoldsItsShareOfTheExperts) {
  const World world = expert_world();
  const auto weights = [&](int experts) {
    const std::vector<program::DeviceMemory> memory =
        program::plan_memory(expert_plan(world.graph, experts), world.graph, cost::Optimizer::Sgd, {});
    return memory.front().use.weights.value();
  };
  EXPECT_DOUBLE_EQ(weights(1) - weights(2), 192 * 4.0);  // two of the four experts' 384 values
}

TEST(ExpertParallel, RefusesExpertGroupsThatDoNotDivideTheExperts) {
  const World world = expert_world(6);
  const plan::Plan plan = expert_plan(world.graph, 4);
  try {
    plan::validate_plan(plan, world.graph, world.network.cluster());
    FAIL() << "4 expert ranks over 6 experts were accepted";
  } catch (const UserError& error) {
    EXPECT_EQ(std::string(error.what()), "--expert-parallel 4 does not divide the 6 experts of 'moe'");
  }
}

}  // namespace
}  // namespace burst::sim
