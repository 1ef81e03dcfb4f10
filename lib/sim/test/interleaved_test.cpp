// Interleaved 1F1B (plan::Schedule::Interleaved, Pipeline::virtual_stages) against 1F1B on
// the same two ranks, by hand. input -> a -> b -> c -> d, each of a..d 1 ms forward and 2 ms
// backward a sample, 2 micro-batches of 1, messages all but free (1 PB/s, no latency).
//  - 1F1B, stages {input, a, b} on rank 0 and {c, d} on rank 1 (2 ms forward, 4 ms backward
//    a micro-batch): F0 [0, 2] on r0; F0 [2, 4] and B0 [4, 8] on r1; F1 [2, 4] on r0; B0
//    [8, 12] on r0; F1 [8, 10] and B1 [10, 14] on r1; B1 [14, 18] on r0: 18 ms, (m + p - 1)
//    x 6 ms.
//  - Interleaved, chunks {input, a}, {b}, {c}, {d}; chunks 0 and 2 on rank 0, 1 and 3 on
//    rank 1. Rank 0 runs (p - 1 - 0) x 2 + (V - 1) x p = 4 warm-up forwards, F c0m0 c0m1 c2m0
//    c2m1, then B c2m0 c2m1 c0m0 c0m1; rank 1 warms up with F c1m0 c1m1, then F c3m0, B c3m0,
//    F c3m1, B c3m1, then B c1m0 c1m1. Times: r0 F [0,1] [1,2], r1 F [1,2] [2,3], r0 F [2,3]
//    [3,4], r1 F c3m0 [3,4] B [4,6] F c3m1 [6,7] B [7,9]; r0 B c2m0 [6,8], B c2m1 [9,11]; r1
//    B c1m0 [9,11], B c1m1 [11,13]; r0 B c0m0 [11,13], B c0m1 [13,15]: 15 ms, the bubble of
//    (p - 1) / V stage-micro-batches (3 ms) in place of (p - 1) (6 ms).
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/plan/plan.h"
#include "burst/program/step_program.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::sim {
namespace {

using plan::testing::ms;
using plan::testing::test_cluster;
using plan::testing::World;

World chain_world() {
  graph::GraphBuilder b("chain4");
  b.relu("d", b.relu("c", b.relu("b", b.relu("a", b.input("input", {8})))));
  const cost::FakeLayerCost layer{ms(0, 1), ms(0, 2)};
  return World(std::move(b).build(), test_cluster(2, 1e15, 0),
               {{"input", {ms(0), ms(0)}}, {"a", layer}, {"b", layer}, {"c", layer}, {"d", layer}});
}

// Layers by name on ranks: every layer's one micro-batch sample on `rank_of` its name.
plan::Plan chain_plan(const World& world, plan::Schedule schedule, int virtual_stages,
                      const std::vector<graph::LayerId>& starts, const std::map<std::string, int>& rank_of) {
  plan::Plan plan = plan::plan_data_parallel(world.graph, 2, 2);
  plan.pipeline.micro_batches = 2;
  plan.pipeline.schedule = schedule;
  plan.pipeline.virtual_stages = virtual_stages;
  plan.pipeline.stage_starts = starts;
  for (plan::LayerPlacement& layer : plan.layers) layer.shards = {plan::testing::shard(rank_of.at(layer.layer), 0, 1)};
  plan::validate_plan(plan, world.graph, world.network.cluster());
  return plan;
}

double step_s(const World& world, const plan::Plan& plan) {
  const double simulated = simulate(plan, world.context(), {}).iteration_time.s();
  EXPECT_NEAR(timing::evaluate_plan(plan, world.context(), {}).iteration_time.s(), simulated, 1e-12);
  return simulated;
}

TEST(Interleaved, ChunksOnEachRankCutTheBubbleByV) {
  const World world = chain_world();
  const auto id = [&](const char* name) { return *world.graph.find(name); };
  const plan::Plan one_f_one_b = chain_plan(world, plan::Schedule::OneFOneB, 1, {id("c")},
                                            {{"input", 0}, {"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}});
  const plan::Plan interleaved = chain_plan(world, plan::Schedule::Interleaved, 2, {id("b"), id("c"), id("d")},
                                            {{"input", 0}, {"a", 0}, {"b", 1}, {"c", 0}, {"d", 1}});
  EXPECT_NEAR(step_s(world, one_f_one_b), 18e-3, 1e-9);
  EXPECT_NEAR(step_s(world, interleaved), 15e-3, 1e-9);
  program::check_step_program(program::build_step_program(world.graph, interleaved), world.graph, interleaved);
}

TEST(Interleaved, RankOrdersFollowMegatronsSchedule) {
  const World world = chain_world();
  const auto id = [&](const char* name) { return *world.graph.find(name); };
  const plan::Plan plan = chain_plan(world, plan::Schedule::Interleaved, 2, {id("b"), id("c"), id("d")},
                                     {{"input", 0}, {"a", 0}, {"b", 1}, {"c", 0}, {"d", 1}});
  using Step = plan::PipelineStep;
  EXPECT_EQ(plan::physical_stage_order(plan, 0),
            (std::vector<Step>{{0, false, 0}, {0, false, 1}, {2, false, 0}, {2, false, 1},
                               {2, true, 0}, {2, true, 1}, {0, true, 0}, {0, true, 1}}));
  EXPECT_EQ(plan::physical_stage_order(plan, 1),
            (std::vector<Step>{{1, false, 0}, {1, false, 1}, {3, false, 0}, {3, true, 0},
                               {3, false, 1}, {3, true, 1}, {1, true, 0}, {1, true, 1}}));
  // Rank 0 holds both micro-batches of both its chunks after its warm-up.
  EXPECT_EQ(plan::chunk_in_flight(plan, 0), 2);
  EXPECT_EQ(plan::chunk_in_flight(plan, 2), 2);
}

TEST(Interleaved, RefusesWhatTheScheduleCannotRun) {
  const World world = chain_world();
  const auto id = [&](const char* name) { return *world.graph.find(name); };
  const std::map<std::string, int> ranks{{"input", 0}, {"a", 0}, {"b", 1}, {"c", 0}, {"d", 1}};
  // Virtual stages under 1F1B, and 3 chunks that 2 virtual stages do not divide.
  EXPECT_THROW(chain_plan(world, plan::Schedule::OneFOneB, 2, {id("b"), id("c"), id("d")}, ranks), UserError);
  EXPECT_THROW(chain_plan(world, plan::Schedule::Interleaved, 2, {id("b"), id("c")}, ranks), UserError);
}

}  // namespace
}  // namespace burst::sim
