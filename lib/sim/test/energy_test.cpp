// Energy worked out by hand (in the comments), alike in the evaluator and the simulator: a
// rank with slack whose lowered clock keeps the step and saves a derived amount, a power cap,
// and background kernels drawing power where the device would have idled.
#include <cmath>

#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/planner/clock_search.h"
#include "burst/sim/chrome_trace.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst {
namespace sim_energy_test {

using plan::testing::hand_plan;
using plan::testing::ms;
using plan::testing::shard;

// input -> a (4 ms) and input -> c (1 ms), joined by d = a + c (no time); a and d on rank 0,
// c on rank 1; a link fast enough that messages take ~0.
graph::Graph branches() {
  graph::GraphBuilder b("branches");
  const std::string x = b.input("input", {1, 2, 2});
  const std::string a = b.relu("a", x);
  const std::string c = b.relu("c", x);
  b.add_("d", {a, c});
  return std::move(b).build();
}

struct Branches {
  Branches()
      : world(branches(), plan::testing::test_cluster(2, 1e15, 0),
              {{"input", cost::FakeLayerCost{ms(0), ms(0)}}, {"a", cost::FakeLayerCost{ms(4), ms(0)}}, {"c", cost::FakeLayerCost{ms(1), ms(0)}},
               {"d", cost::FakeLayerCost{ms(0), ms(0)}}}) {}
  plan::PlanContext context() const {
    plan::PlanContext context = world.context();
    context.kind_power = {cost::round_power_spec()};
    return context;
  }
  plan::testing::World world;
};

plan::Plan branches_plan(const graph::Graph& graph) {
  // input, a and d on rank 0, c on rank 1.
  return hand_plan(graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 2)}, {shard(1, 0, 2)}, {shard(0, 0, 2)}});
}

// The step is 4 ms (a) with rank 1 busy 1 ms. Rank 1 at clock ratio r: c takes 1 / r ms at
// 100 + 400 r^2 W, so rank 1 spends (100 + 400 r^2) / r + 100 (4 - 1 / r) = 400 r + 400 mJ:
// the step keeps 4 ms down to r = 1/4 and saves 400 (1 - r) mJ = 300 mJ there. Rank 0 has
// no slack: any lower clock lengthens the step.
TEST(ClockSearch, RankWithSlackRunsSlowerAndSavesTheDerivedEnergy) {
  const Branches world;
  const plan::PlanContext context = world.context();
  const plan::Plan plan = branches_plan(world.world.graph);
  planner::ClockSearchOptions options;
  options.max_slowdown = 0;
  const planner::ClockChoice choice = planner::choose_clocks(plan, context, options);
  EXPECT_NEAR(choice.full_clock_time_s, 4e-3, 1e-9);
  EXPECT_NEAR(choice.time_s, 4e-3, 1e-9);
  ASSERT_EQ(choice.plan.rank_clocks_mhz.size(), 2u);
  EXPECT_DOUBLE_EQ(choice.plan.rank_clocks_mhz[0], 1000);
  EXPECT_NEAR(choice.plan.rank_clocks_mhz[1], 250, 1e-6);
  EXPECT_NEAR(choice.full_clock_energy_j - choice.energy_j, 0.3, 1e-6);

  // The evaluator and the simulator time and price the plan with its clocks alike.
  const timing::PlanEvaluation evaluated = timing::evaluate_plan(choice.plan, context);
  const sim::SimResult simulated = sim::simulate(choice.plan, context, sim::SimOptions{});
  EXPECT_NEAR(evaluated.iteration_time.s(), 4e-3, 1e-9);
  EXPECT_NEAR(simulated.iteration_time.s(), 4e-3, 1e-9);
  EXPECT_NEAR(evaluated.energy.total_j, choice.energy_j, 1e-9);
  EXPECT_NEAR(simulated.energy.total_j, choice.energy_j, 1e-9);
  // Rank 1: 400 x 0.25 + 400 mJ.
  EXPECT_NEAR(evaluated.energy.devices[1].total_j(), 0.5, 1e-6);
}

// Two GPipe stages, 2 micro-batches of one sample: s0 (rank 0) takes 4 ms a micro-batch,
// s1 (rank 1) 1 ms, forward only, messages ~0. s0: F0 [0, 4], F1 [4, 8]; s1: F0 [4, 5],
// F1 [8, 9]: 9 ms. s1 at clock ratio r: F0 [4, 4 + 1/r] still ends before s0's F1, F1
// [8, 8 + 1/r]: the step is 8 + 1/r ms. Energy (mJ): s0 computes 8 ms at 500 W and idles
// 1/r ms: 4000 + 100/r; s1 computes 2/r ms at 100 + 400 r^2 W and idles 8 - 1/r ms:
// 200/r + 800 r + 800 - 100/r. In all 4800 + 200/r + 800 r, least at r = 1/2 (5600 mJ, a
// 10 ms step) against 5800 mJ at full clocks. With the step allowed 1/9 longer (10 ms) the
// search takes s1 to 500 MHz and saves 200 mJ; with no slowdown s1 stays at the maximum.
TEST(ClockSearch, LightPipelineStageRunsSlowerWithinTheBound) {
  graph::GraphBuilder b("stages");
  const std::string x = b.input("input", {1, 2, 2});
  b.relu("s1", b.relu("s0", x));
  const plan::testing::World world(std::move(b).build(), plan::testing::test_cluster(2, 1e15, 0),
                                   {{"input", cost::FakeLayerCost{ms(0), ms(0)}},
                                    {"s0", cost::FakeLayerCost{ms(4), ms(0)}},
                                    {"s1", cost::FakeLayerCost{ms(1), ms(0)}}});
  plan::Plan plan = hand_plan(world.graph, 2, 2, {{shard(0, 0, 1)}, {shard(0, 0, 1)}, {shard(1, 0, 1)}});
  plan.pipeline.micro_batches = 2;
  plan.pipeline.schedule = plan::Schedule::GPipe;
  plan.pipeline.stage_starts = {2};
  plan::PlanContext context = world.context();
  context.kind_power = {cost::round_power_spec()};
  plan::validate_plan(plan, world.graph, world.network.cluster());

  planner::ClockSearchOptions options;
  options.max_slowdown = 1.0 / 9;
  const planner::ClockChoice choice = planner::choose_clocks(plan, context, options);
  EXPECT_NEAR(choice.full_clock_time_s, 9e-3, 1e-9);
  EXPECT_NEAR(choice.full_clock_energy_j, 5.8, 1e-6);
  ASSERT_EQ(choice.plan.rank_clocks_mhz.size(), 2u);
  EXPECT_DOUBLE_EQ(choice.plan.rank_clocks_mhz[0], 1000);
  EXPECT_NEAR(choice.plan.rank_clocks_mhz[1], 500, 1e-6);
  EXPECT_NEAR(choice.time_s, 10e-3, 1e-9);
  EXPECT_NEAR(choice.energy_j, 5.6, 1e-6);
  const timing::PlanEvaluation evaluated = timing::evaluate_plan(choice.plan, context);
  const sim::SimResult simulated = sim::simulate(choice.plan, context, sim::SimOptions{});
  EXPECT_NEAR(evaluated.energy.total_j, 5.6, 1e-6);
  EXPECT_NEAR(simulated.energy.total_j, 5.6, 1e-6);
  EXPECT_NEAR(simulated.iteration_time.ms(), 10, 1e-6);

  options.max_slowdown = 0;
  EXPECT_TRUE(planner::choose_clocks(plan, context, options).plan.rank_clocks_mhz.empty());
}

TEST(ClockSearch, FrontierRunsFromFastestToLeastEnergy) {
  const Branches world;
  const plan::PlanContext context = world.context();
  const auto frontier = planner::clock_frontier(branches_plan(world.world.graph), context, planner::ClockSearchOptions{});
  ASSERT_GE(frontier.size(), 2u);
  EXPECT_NEAR(frontier.front().time_s, 4e-3, 1e-9);
  for (size_t i = 1; i < frontier.size(); ++i) {
    EXPECT_GT(frontier[i].time_s, frontier[i - 1].time_s);
    EXPECT_LT(frontier[i].energy_j, frontier[i - 1].energy_j);
  }
}

TEST(ClockSearch, BadSlowdownAndMissingPowerModelAreUserErrors) {
  const Branches world;
  planner::ClockSearchOptions options;
  options.max_slowdown = -0.1;
  EXPECT_THROW(planner::choose_clocks(branches_plan(world.world.graph), world.context(), options), UserError);
  options.max_slowdown = 0.01;
  EXPECT_THROW(planner::choose_clocks(branches_plan(world.world.graph), world.world.context(), options), UserError);
}

// A 300 W cap: a runs at r = sqrt(0.5) (300 = 100 + 400 r^2), 4 / r ms at 300 W; c too,
// 1 / r ms. Evaluator and simulator agree on the time and the energy.
TEST(SimEnergy, PowerCapAgreesWithTheEvaluator) {
  const Branches world;
  const plan::PlanContext context = world.context();
  const plan::Plan plan = branches_plan(world.world.graph);
  timing::EvaluateOptions evaluate;
  evaluate.program.power_cap_w = 300;
  sim::SimOptions simulate;
  simulate.program.power_cap_w = 300;
  const timing::PlanEvaluation evaluated = timing::evaluate_plan(plan, context, evaluate);
  const sim::SimResult simulated = sim::simulate(plan, context, simulate);
  const double r = std::sqrt(0.5);
  EXPECT_NEAR(evaluated.iteration_time.ms(), 4 / r, 1e-6);
  EXPECT_NEAR(simulated.iteration_time.ms(), 4 / r, 1e-6);
  // Rank 0: 4 / r ms at 300 W; rank 1: 1 / r ms at 300 W and idle 3 / r ms at 100 W.
  EXPECT_NEAR(evaluated.energy.devices[0].total_j(), 4 / r * 0.3, 1e-6);
  EXPECT_NEAR(evaluated.energy.devices[1].total_j(), 1 / r * 0.3 + 3 / r * 0.1, 1e-6);
  EXPECT_NEAR(simulated.energy.total_j, evaluated.energy.total_j, 1e-9);
}

// A background job of one 1 ms layer ("c" alone) fills rank 1's 3 ms of idle time: 3 kernels
// at 500 W where rank 1 would have drawn 100 W. With background the step's energy grows by
// 3 ms x 400 W = 1.2 J; each background sample (batch 1) costs 0.4 J above idle, 0.5 J
// with the idle power it displaces.
TEST(SimEnergy, BackgroundKernelsDrawPowerInTheIdleGaps) {
  const Branches world;
  const plan::PlanContext context = world.context();
  const plan::Plan plan = branches_plan(world.world.graph);
  graph::GraphBuilder b("background");
  b.relu("c", b.input("input", {1, 2, 2}));
  const graph::Graph background = std::move(b).build();
  sim::BackgroundJob job{&background, 1, sim::BackgroundPolicy::FitIdleGaps};
  const sim::MultiplexResult result = sim::simulate_multiplexed(plan, context, sim::SimOptions{}, job);
  ASSERT_NEAR(result.with_background.iteration_time.ms(), 4, 1e-6);
  EXPECT_NEAR(result.with_background.energy.total_j - result.alone.energy.total_j, 1.2, 1e-6);
  EXPECT_NEAR(result.background_joules_per_sample, 0.4, 1e-6);
  EXPECT_NEAR(result.background_alone_joules_per_sample, 0.5, 1e-6);
  EXPECT_GT(result.samples_per_joule_with, result.samples_per_joule_alone);

  sim::SimOptions traced;
  traced.record_events = true;
  const std::string trace = sim::chrome_trace_json(sim::simulate(plan, context, traced), world.world.graph, nullptr, 2);
  EXPECT_NE(trace.find("\"name\":\"power\""), std::string::npos);
}

}  // namespace sim_energy_test
}  // namespace burst
