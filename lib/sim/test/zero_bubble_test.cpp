// ZB-H1 (plan::Schedule::ZeroBubbleH1) against 1F1B on the same two stages, by hand.
// input -> a -> b -> c -> d, each a linear without bias (its weight gradient half its
// backward: cost::weight_gradient_share), 1 ms forward and 2 ms backward a sample; stages
// {input, a, b} on rank 0 and {c, d} on rank 1; 2 micro-batches of 1; messages all but free.
// A stage's micro-batch: F 2 ms, B (input gradients) 2 ms, W (weight gradients) 2 ms.
//  - 1F1B: (m + p - 1) x (F + B + W) = 3 x 6 = 18 ms (the bubble (p - 1) x 6 ms).
//  - ZB-H1: rank 0 (stage 0, W right after B): F0 F1 B0 W0 B1 W1; rank 1 (stage 1, W one
//    B later): F0 B0 F1 B1 W0 W1. r0 F0 [0,2] F1 [2,4]; r1 F0 [2,4] B0 [4,6] F1 [6,8] B1
//    [8,10] W0 [10,12] W1 [12,14]; r0 B0 [6,8] W0 [8,10] B1 [10,12] W1 [12,14]: 14 ms, the
//    bubble (p - 1) x (F + B - W) = 2 ms, a third of 1F1B's; each stage holds p = 2
//    micro-batches in flight (1F1B's first stage's peak).
#include <gtest/gtest.h>

#include "burst/cost/memory.h"
#include "burst/graph/builder.h"
#include "burst/plan/plan.h"
#include "burst/program/step_program.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::sim {
namespace {

using plan::testing::ms;
using plan::testing::test_cluster;
using plan::testing::World;

World linear_chain() {
  graph::GraphBuilder b("linear4");
  std::string x = b.input("input", {8});
  for (const char* name : {"a", "b", "c", "d"}) x = b.linear(name, x, 8, false);
  const cost::FakeLayerCost layer{ms(0, 1), ms(0, 2)};
  return World(std::move(b).build(), test_cluster(2, 1e15, 0),
               {{"input", {ms(0), ms(0)}}, {"a", layer}, {"b", layer}, {"c", layer}, {"d", layer}});
}

plan::Plan two_stages(const World& world, plan::Schedule schedule) {
  plan::Plan plan = plan::plan_data_parallel(world.graph, 2, 2);
  plan.pipeline.micro_batches = 2;
  plan.pipeline.schedule = schedule;
  plan.pipeline.stage_starts = {*world.graph.find("c")};
  for (plan::LayerPlacement& layer : plan.layers) {
    const bool second = layer.layer == "c" || layer.layer == "d";
    layer.shards = {plan::testing::shard(second ? 1 : 0, 0, 1)};
  }
  plan::validate_plan(plan, world.graph, world.network.cluster());
  return plan;
}

double zero_bubble_step_s(const World& world, const plan::Plan& plan) {
  const double simulated = simulate(plan, world.context(), {}).iteration_time.s();
  EXPECT_NEAR(timing::evaluate_plan(plan, world.context(), {}).iteration_time.s(), simulated, 1e-12);
  return simulated;
}

TEST(ZeroBubble, DeferredWeightGradientsCutTheBubbleToAThird) {
  const World world = linear_chain();
  ASSERT_DOUBLE_EQ(cost::weight_gradient_share(world.graph, *world.graph.find("a")), 0.5);
  const plan::Plan one_f_one_b = two_stages(world, plan::Schedule::OneFOneB);
  const plan::Plan zero_bubble = two_stages(world, plan::Schedule::ZeroBubbleH1);
  EXPECT_NEAR(zero_bubble_step_s(world, one_f_one_b), 18e-3, 1e-9);
  EXPECT_NEAR(zero_bubble_step_s(world, zero_bubble), 14e-3, 1e-9);
  const program::StepProgram program = program::build_step_program(world.graph, zero_bubble);
  EXPECT_TRUE(program.split_backward);
  program::check_step_program(program, world.graph, zero_bubble);
}

TEST(ZeroBubble, StagesDeferTheirWeightPassesByTheirIndex) {
  const World world = linear_chain();
  const plan::Plan plan = two_stages(world, plan::Schedule::ZeroBubbleH1);
  using Step = plan::PipelineStep;
  EXPECT_EQ(plan::physical_stage_order(plan, 0),
            (std::vector<Step>{{0, false, 0}, {0, false, 1}, {0, true, 0}, {0, false, 0, true}, {0, true, 1},
                               {0, false, 1, true}}));
  EXPECT_EQ(plan::physical_stage_order(plan, 1),
            (std::vector<Step>{{1, false, 0}, {1, true, 0}, {1, false, 1}, {1, true, 1}, {1, false, 0, true},
                               {1, false, 1, true}}));
  // p = 2 micro-batches in flight on each stage (1F1B: 2 on stage 0, 1 on stage 1).
  EXPECT_EQ(plan::chunk_in_flight(plan, 0), 2);
  EXPECT_EQ(plan::chunk_in_flight(plan, 1), 2);
  EXPECT_EQ(plan::schedule_from_name("zb-h1"), plan::Schedule::ZeroBubbleH1);
}

}  // namespace
}  // namespace burst::sim
