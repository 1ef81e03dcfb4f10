// Pipeline programs (plan::Pipeline: stages, micro-batches, GPipe and 1F1B), and
// recomputation and ZeRO, timed by the evaluator and the simulator, on chains small enough to derive every time by hand (in the
// comments). Both time the one step program, so they must agree to the nanosecond.
#include <gtest/gtest.h>

#include "burst/graph/builder.h"
#include "burst/program/step_memory.h"
#include "burst/program/step_program.h"
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
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

// input [250] (1000 B a sample) -> s0 -> s1 -> ... -> s{p-1} (relu, no parameters), one
// layer a stage, stage k on rank k (the input with s0). Forward t_f = 1 ms a sample,
// backward t_b = 2 ms a sample. `bytes_per_second` on every link, no latency.
World chain_world(int stages, double bytes_per_second) {
  graph::GraphBuilder b("chain");
  std::string x = b.input("input", {250});
  std::map<std::string, cost::FakeLayerCost> costs{{"input", {ms(0), ms(0)}}};
  for (int k = 0; k < stages; ++k) {
    const std::string name = "s" + std::to_string(k);
    x = b.relu(name, x);
    costs[name] = {ms(0, 1), ms(0, 2)};
  }
  return World(std::move(b).build(), test_cluster(stages, bytes_per_second, 0), std::move(costs));
}

// m micro-batches of one sample each (global batch m), stage k = layer s{k} on rank k.
plan::Plan chain_pipeline(const World& world, int stages, int64_t micro_batches, Schedule schedule) {
  std::vector<std::vector<cost::Shard>> shards{{shard(0, 0, 1)}};
  for (int k = 0; k < stages; ++k) shards.push_back({shard(k, 0, 1)});
  plan::Plan plan = hand_plan(world.graph, stages, micro_batches, shards);
  plan.pipeline.micro_batches = micro_batches;
  plan.pipeline.schedule = schedule;
  for (int k = 1; k < stages; ++k) plan.pipeline.stage_starts.push_back(k + 1);  // s{k} is layer k + 1
  return plan;
}

// The evaluator's and the simulator's step time of `plan` under `program`, which must be
// equal; in ms.
double step_ms(const plan::Plan& plan, const World& world, const program::ProgramOptions& program = {}) {
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

// p = 4 stages, m = 8 micro-batches, no communication (links of 1e15 B/s: 1e-12 s a message).
// GPipe: stage s runs F j when stage s-1 has (F j ends at (j + 1 + s) t_f), so the last
// stage's last forward ends at (m + p - 1) t_f; backwards run the same wave back from it:
// stage 0's last backward ends (m + p - 1) t_b later. 1F1B reorders each stage's work but
// keeps the same critical path (stage p-1 is never idle between its first forward and its
// last backward; it starts at (p - 1) t_f and, after it, stage 0 needs (p - 1) t_b).
// Both: (m + p - 1)(t_f + t_b) = 11 x 3 ms = 33 ms.
TEST(PipelineTiming, GPipeAnd1F1BWithoutCommunicationTakeTheBubbleFormula) {
  const World world = chain_world(4, 1e15);
  for (const Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    EXPECT_NEAR(step_ms(chain_pipeline(world, 4, 8, schedule), world), 33.0, 1e-6) << plan::schedule_name(schedule);
  }
}

// The same with 1 MB/s links: each one-sample message (1000 B) takes c = 1 ms; every stage
// sends one every t_f (forward) or t_b (backward) >= c, so no message waits for a port.
// GPipe: each of the p - 1 boundaries adds c to the forward wave and c to the backward one:
// (m + p - 1)(t_f + t_b) + 2 (p - 1) c = 33 + 6 = 39 ms.
// 1F1B on p = 2, m = 4 (stage 0: F0 F1 B0 F2 B1 F3 B2 B3; stage 1: F0 B0 F1 B1 ... B3):
//   s0 F0 [0,1] F1 [1,2]; act0 [1,2]; s1 F0 [2,3] B0 [3,5]; grad0 [5,6]; s0 B0 [6,8];
//   s1 F1 [5,6] B1 [6,8]; grad1 [8,9]; s0 F2 [8,9]; act2 [9,10]; s0 B1 [9,11] F3 [11,12];
//   act3 [12,13]; s1 F2 [10,11] B2 [11,13]; grad2 [13,14]; s1 F3 [13,14] B3 [14,16];
//   grad3 [16,17]; s0 B2 [14,16] B3 [17,19]: 19 ms (GPipe there: 5 x 3 + 2 = 17 ms). A
//   1F1B stage issues its next forward only after a backward, so each round trip's 2c
//   shows; GPipe's forwards run ahead.
TEST(PipelineTiming, LinkCostBetweenStagesAddsTheDerivedDelay) {
  const World four = chain_world(4, 1e6);
  EXPECT_NEAR(step_ms(chain_pipeline(four, 4, 8, Schedule::GPipe), four), 39.0, 1e-6);
  const World two = chain_world(2, 1e6);
  EXPECT_NEAR(step_ms(chain_pipeline(two, 2, 4, Schedule::GPipe), two), 17.0, 1e-6);
  EXPECT_NEAR(step_ms(chain_pipeline(two, 2, 4, Schedule::OneFOneB), two), 19.0, 1e-6);
}

// GPipe holds every micro-batch's activations before its first backward: m on each stage;
// 1F1B holds the warm-up's p - 1 - s plus the one in steady state: p - s on stage s.
TEST(PipelineTiming, InFlightMicroBatchesPerSchedule) {
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(plan::in_flight_micro_batches(Schedule::GPipe, 4, stage, 8), 8);
    EXPECT_EQ(plan::in_flight_micro_batches(Schedule::OneFOneB, 4, stage, 8), 4 - stage);
  }
  EXPECT_EQ(plan::in_flight_micro_batches(Schedule::OneFOneB, 4, 0, 2), 2);  // m < p: all of them
}

// The 1F1B program of stage 0 of 2, m = 4, as torch.distributed.pipelining would list it.
TEST(PipelineTiming, OneFOneBProgramOrder) {
  const World world = chain_world(2, 1e6);
  const plan::Plan plan = chain_pipeline(world, 2, 4, Schedule::OneFOneB);
  plan::validate_plan(plan, world.graph, world.network.cluster());
  const program::StepProgram program = program::build_step_program(world.graph, plan);
  program::check_step_program(program, world.graph, plan);
  std::string order;
  for (const program::Op& op : program.ops[0]) {
    if (op.kind == program::OpKind::Forward && op.layer == 1) order += "F" + std::to_string(op.micro) + " ";
    if (op.kind == program::OpKind::Backward && op.layer == 1) order += "B" + std::to_string(op.micro) + " ";
  }
  EXPECT_EQ(order, "F0 F1 B0 F2 B1 F3 B2 B3 ");
}

// A block of four layers on one device, batch 1: forward 4 x 1 ms, backward 4 x 2 ms: 12 ms.
// Full recomputation runs every layer's forward once more before the backward of its unit,
// whatever the units: 12 + 4 x 1 = 16 ms.
TEST(RecomputeAndZeroTiming, FullRecomputationAddsOneForwardOfTheBlock) {
  const World world = chain_world(4, 1e15);
  const plan::Plan one = plan::plan_single_device(world.graph, 4, 1);
  program::ProgramOptions program;
  EXPECT_NEAR(step_ms(one, world, program), 12.0, 1e-6);
  program.recompute = cost::Recompute::Full;
  EXPECT_NEAR(step_ms(one, world, program), 16.0, 1e-6);
}

// A pipeline of p = 4 stages and m = 8 micro-batches without communication takes (m + p - 1)
// (t_f + t_b) = 33 ms (pipeline_timing_test). With full recomputation each stage's backward
// of a micro-batch is its recomputed forward then its backward, t_f + t_b = 3 ms, so the
// backward wave takes (m + p - 1) x 3 ms after the forward wave's (m + p - 1) x 1 ms: 44 ms,
// under GPipe and 1F1B alike.
TEST(RecomputeAndZeroTiming, OnePipelineWithRecomputation) {
  const World world = chain_world(4, 1e15);
  program::ProgramOptions program;
  program.recompute = cost::Recompute::Full;
  for (const Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    EXPECT_NEAR(step_ms(chain_pipeline(world, 4, 8, schedule), world, program), 44.0, 1e-6)
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
TEST(RecomputeAndZeroTiming, ZeroStagesReduceScatterThenGather) {
  graph::GraphBuilder b("overlap");
  std::string x = b.input("input", {4, 1, 1});
  x = b.conv2d("a", x, graph::conv2d_attrs(4, {1, 1}));
  b.conv2d("b", x, graph::conv2d_attrs(240, {1, 1}));
  const World world(std::move(b).build(), test_cluster(2, 1.6e6, 0),
                    {{"input", {ms(0), ms(0)}}, {"a", {ms(1), ms(2)}}, {"b", {ms(1), ms(2)}}},
                    {{"a", Seconds::from_ms(0.5)}, {"b", Seconds::from_ms(1)}});
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 2, 2);
  program::ProgramOptions program;
  EXPECT_NEAR(step_ms(plan, world, program), 10.55, 1e-6);
  program.zero_stage = 1;
  EXPECT_NEAR(step_ms(plan, world, program), 9.8, 1e-6);
  program.zero_stage = 2;
  EXPECT_NEAR(step_ms(plan, world, program), 9.8, 1e-6);
  program.zero_stage = 3;
  EXPECT_NEAR(step_ms(plan, world, program), 11.325, 1e-6);
}

}  // namespace
}  // namespace burst::sim
