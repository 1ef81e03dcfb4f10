// Recomputation and ZeRO timed by the evaluator and the simulator, on worlds small enough to
// derive every time by hand (in the comments). Both time the one step program, so they must
// agree to the nanosecond.
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::sim {
namespace {

using plan::Schedule;
using plan::testing::hand_plan;
using plan::testing::ms;
using plan::testing::shard;
using plan::testing::test_cluster;
using plan::testing::World;

// The evaluator's and the simulator's step time of `plan` under `program`; in ms.
double timed_ms(const plan::Plan& plan, const World& world, const program::ProgramOptions& program) {
  plan::validate_plan(plan, world.graph, world.network.cluster());
  timing::EvaluateOptions every_rank;
  every_rank.time_each_rank = true;
  every_rank.program = program;
  const double evaluated = timing::evaluate_plan(plan, world.context(), every_rank).iteration_time.ms();
  SimOptions options;
  options.program = program;
  const double simulated = simulate(plan, world.context(), options).iteration_time.ms();
  EXPECT_NEAR(evaluated, simulated, 1e-9);
  return simulated;
}

// input [250] -> s0 -> ... -> s{p-1} (relu): t_f = 1 ms and t_b = 2 ms a sample; stage k =
// s{k} on rank k (the input with s0); links of 1e15 B/s (no communication to speak of).
World relu_chain(int stages) {
  graph::GraphBuilder b("chain");
  std::string x = b.input("input", {250});
  std::map<std::string, cost::FakeLayerCost> costs{{"input", {ms(0), ms(0)}}};
  for (int k = 0; k < stages; ++k) {
    const std::string name = "s" + std::to_string(k);
    x = b.relu(name, x);
    costs[name] = {ms(0, 1), ms(0, 2)};
  }
  return World(std::move(b).build(), test_cluster(stages, 1e15, 0), std::move(costs));
}

plan::Plan relu_pipeline(const World& world, int stages, int64_t micro_batches, Schedule schedule) {
  std::vector<std::vector<cost::Shard>> shards{{shard(0, 0, 1)}};
  for (int k = 0; k < stages; ++k) shards.push_back({shard(k, 0, 1)});
  plan::Plan plan = hand_plan(world.graph, stages, micro_batches, shards);
  plan.pipeline.micro_batches = micro_batches;
  plan.pipeline.schedule = schedule;
  for (int k = 1; k < stages; ++k) plan.pipeline.stage_starts.push_back(k + 1);
  return plan;
}

// A block of four layers on one device, batch 1: forward 4 x 1 ms, backward 4 x 2 ms: 12 ms.
// Full recomputation runs every layer's forward once more before the backward of its unit,
// whatever the units: 12 + 4 x 1 = 16 ms.
TEST(ScaleTiming, FullRecomputationAddsOneForwardOfTheBlock) {
  const World world = relu_chain(4);
  const plan::Plan one = plan::plan_single_device(world.graph, 4, 1);
  program::ProgramOptions program;
  EXPECT_NEAR(timed_ms(one, world, program), 12.0, 1e-6);
  program.recompute = cost::Recompute::Full;
  EXPECT_NEAR(timed_ms(one, world, program), 16.0, 1e-6);
}

// A pipeline of p = 4 stages and m = 8 micro-batches without communication takes (m + p - 1)
// (t_f + t_b) = 33 ms (pipeline_timing_test). With full recomputation each stage's backward
// of a micro-batch is its recomputed forward then its backward, t_f + t_b = 3 ms, so the
// backward wave takes (m + p - 1) x 3 ms after the forward wave's (m + p - 1) x 1 ms: 44 ms,
// under GPipe and 1F1B alike.
TEST(ScaleTiming, OnePipelineWithRecomputation) {
  const World world = relu_chain(4);
  program::ProgramOptions program;
  program.recompute = cost::Recompute::Full;
  for (const Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    EXPECT_NEAR(timed_ms(relu_pipeline(world, 4, 8, schedule), world, program), 44.0, 1e-6)
        << plan::schedule_name(schedule);
  }
}

// Two ranks, data parallel, batch 2: input [4,1,1] -> a (conv 4 -> 4, 20 parameters) ->
// b (conv 4 -> 240, 1200 parameters); forward 1 ms, backward 2 ms each; updates a 0.5 ms,
// b 1 ms; links 1.6e6 B/s, no latency. Both layers' fp32 gradients, 4880 B, fill one bucket,
// closed by a's backward at 6 ms (simulator_test's overlap world).
//  - ZeRO 0: all-reduce 2 x 1/2 x 4880 / 1.6e6 = 3.05 ms to 9.05; update 1.5 ms: 10.55 ms.
//  - ZeRO 1 and 2: reduce-scatter 1.525 ms to 7.525; each rank updates its half of the
//    weights, 0.75 ms, to 8.275; all-gather 1.525 ms: 9.8 ms.
//  - ZeRO 3: the weights gathered before each F and B (a: 80 B, 0.025 ms; b: 4800 B, 1.5
//    ms), one collective at a time in program order: forward a 0.025 + 1, b 1.5 + 1 (3.525);
//    backward b 1.5 + 2 (7.025), a 0.025 + 2 (9.05); then as ZeRO 1: reduce-scatter to
//    10.575, update to 11.325, and no all-gather after it: 11.325 ms.
TEST(ScaleTiming, ZeroStagesReduceScatterThenGather) {
  graph::GraphBuilder b("overlap");
  std::string x = b.input("input", {4, 1, 1});
  x = b.conv2d("a", x, graph::conv2d_attrs(4, {1, 1}));
  b.conv2d("b", x, graph::conv2d_attrs(240, {1, 1}));
  const World world(std::move(b).build(), test_cluster(2, 1.6e6, 0),
                    {{"input", {ms(0), ms(0)}}, {"a", {ms(1), ms(2)}}, {"b", {ms(1), ms(2)}}},
                    {{"a", Seconds::from_ms(0.5)}, {"b", Seconds::from_ms(1)}});
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 2, 2);
  program::ProgramOptions program;
  EXPECT_NEAR(timed_ms(plan, world, program), 10.55, 1e-6);
  program.zero_stage = 1;
  EXPECT_NEAR(timed_ms(plan, world, program), 9.8, 1e-6);
  program.zero_stage = 2;
  EXPECT_NEAR(timed_ms(plan, world, program), 9.8, 1e-6);
  program.zero_stage = 3;
  EXPECT_NEAR(timed_ms(plan, world, program), 11.325, 1e-6);
}

}  // namespace
}  // namespace burst::sim
