// The simulator on worlds small enough to derive every time by hand (in the comments), and
// its agreement with the planner's evaluator: both time the same lowered step program and
// hold its messages on the same ports in the same order, so they agree (without background
// jobs and collectives_hold_ports, which only the simulator has).
#include "burst/sim/simulator.h"
#include "burst/timing/evaluate.h"

#include <gtest/gtest.h>

#include "burst/cost/device_models.h"
#include "burst/graph/builder.h"
#include "burst/graph/model_json.h"
#include "burst/planner/burst_planner.h"
#include "burst/sim/chrome_trace.h"
#include "burst/util/error.h"
#include "hand_plan.h"
#include "test_world.h"

namespace burst::sim {
namespace {

using plan::testing::ms;
using plan::testing::test_cluster;
using plan::testing::World;

constexpr double kTolerance = 1e-12;  // seconds

using plan::testing::hand_plan;
using plan::testing::shard;

// The first event of `kind` for `layer` on `rank`.
const SimEvent& find_event(const SimResult& result, EventKind kind, int32_t layer, int rank) {
  for (const SimEvent& event : result.events) {
    if (event.kind == kind && event.layer == layer && event.rank == rank) return event;
  }
  ADD_FAILURE() << "no " << event_kind_name(kind) << " event for layer " << layer << " on rank " << rank;
  static const SimEvent none;
  return none;
}

SimOptions recording() {
  SimOptions options;
  options.record_events = true;
  options.record_idle_intervals = true;
  return options;
}

// The evaluator's options for what `options` simulates (the same buckets and BatchNorm mode).
timing::EvaluateOptions evaluating(const SimOptions& options) {
  timing::EvaluateOptions evaluate;
  evaluate.program = options.program;
  return evaluate;
}

// A cap below 4800 B (but above 80 B) closes a bucket at every layer of the worlds below
// whose gradients are 4800 B and 80 B: per-layer all-reduces.
SimOptions per_layer_buckets(SimOptions options = recording()) {
  options.program.bucket_bytes = 4096;
  return options;
}

// input [250] (1000 B per sample) -> a (relu) -> b (relu); 2 ranks, 1 MB/s, no latency, so
// one sample of either output crosses in 1 ms. Global batch 2.
// Plan: input on r0 (both samples); a split, r0 [0,1) and r1 [1,2); b on r0 (both).
// Costs: input 0; a forward 2 ms/sample, backward 3 ms/sample; b 1 ms/sample both ways.
//   forward:  r0: input [0,0]; a [0,2] (its sample is local: no wait for the message).
//             message input->a r0->r1 [0,1]; r1: a [1,3].
//             message a->b r1->r0 [3,4]; r0: b [4,6] (waits for r1's sample).
//   backward: r0: b [6,8]; gradient b->a r0->r1 [8,9]; r0: a [8,11]; r1: a [9,12].
//             No gradient goes into the Input layer; no parameters, no all-reduces.
//   step: 12 ms. r0 computes 2+2+2+3 = 9 ms, idle [2,4] and [11,12]; r1 computes 2+3 = 5 ms,
//   idle [0,1] and [3,9]. r0's ports carry three 1 ms messages: 3 ms of communication.
// No two messages share a port at once, so the evaluator gives 12 ms too, with or without
// ports (EvaluatorAndSimulatorAgree). The old evaluator started a layer on all its
// ranks together (a at 1 ms on r0 as well) and charged a gradient into the input: 13 ms.
// The world, with optimizer updates per layer name (none by default), and the plan:
World chain3_world(std::map<std::string, Seconds> updates = {}) {
  graph::GraphBuilder b("chain3");
  b.relu("b", b.relu("a", b.input("input", {250})));
  return World(std::move(b).build(), test_cluster(2, 1e6, 0),
               {{"input", {ms(0), ms(0)}}, {"a", {ms(0, 2), ms(0, 3)}}, {"b", {ms(0, 1), ms(0, 1)}}}, std::move(updates));
}
plan::Plan chain3_plan(const World& world) {
  return hand_plan(world.graph, 2, 2, {{shard(0, 0, 2)}, {shard(0, 0, 1), shard(1, 1, 2)}, {shard(0, 0, 2)}});
}

TEST(Simulator, ThreeLayerChainOnTwoDevices) {
  const World world = chain3_world();
  const plan::Plan plan = chain3_plan(world);
  const SimResult result = simulate(plan, world.context(), recording());

  EXPECT_NEAR(result.iteration_time.ms(), 12.0, 1e-9);
  EXPECT_NEAR(find_event(result, EventKind::Forward, 1, 0).start_s, 0.0, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Forward, 1, 1).start_s, 1e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Forward, 2, 0).start_s, 4e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Backward, 1, 0).end_s, 11e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Backward, 1, 1).start_s, 9e-3, kTolerance);

  EXPECT_NEAR(result.usage[0].foreground.ms(), 9.0, 1e-9);
  EXPECT_NEAR(result.usage[0].idle.ms(), 3.0, 1e-9);
  EXPECT_NEAR(result.usage[0].communication.ms(), 3.0, 1e-9);
  EXPECT_NEAR(result.usage[1].foreground.ms(), 5.0, 1e-9);
  ASSERT_EQ(result.usage[1].idle_intervals.size(), 2u);
  EXPECT_NEAR(result.usage[1].idle_intervals[0].end_s, 1e-3, kTolerance);
  EXPECT_NEAR(result.usage[1].idle_intervals[1].start_s, 3e-3, kTolerance);
  EXPECT_NEAR(result.usage[1].idle_intervals[1].end_s, 9e-3, kTolerance);
  EXPECT_NEAR(result.busy_fraction, 14.0 / 24.0, 1e-9);
  EXPECT_NEAR(result.foreground_samples_per_s, 2 / 12e-3, 1e-6);
}

// Two messages that need the same port go one after another. 3 ranks, 1 MB/s, no latency,
// 1000 B per sample: each message takes 1 ms. Global batch 2; a: forward 2 ms per call.
//  (1) one sender: input on r0, a on r1 [0,1) and r2 [1,2). Both messages leave r0's send
//      port: r0->r1 [0,1], r0->r2 [1,2]; a on r1 [1,3], on r2 [2,4]. Step 4 ms.
//  (2) one receiver: input on r1 [0,1) and r2 [1,2), a on r0. Both messages enter r0's
//      receive port: r1->r0 [0,1], r2->r0 [1,2]; a on r0 [2,4]. Step 4 ms.
// The evaluator holds the same ports in the same order: 4 ms in both cases too (without
// ports, both messages [0,1], then a [1,3]: 3 ms).
TEST(Simulator, TransfersContendForOnePort) {
  auto world = [] {
    graph::GraphBuilder b("contend");
    b.relu("a", b.input("input", {250}));
    return World(std::move(b).build(), test_cluster(3, 1e6, 0),
                 {{"input", {ms(0), ms(0)}}, {"a", {ms(2), ms(0)}}});
  };
  {
    const World one_sender = world();
    const plan::Plan plan = hand_plan(one_sender.graph, 3, 2, {{shard(0, 0, 2)}, {shard(1, 0, 1), shard(2, 1, 2)}});
    const SimResult result = simulate(plan, one_sender.context(), recording());
    EXPECT_NEAR(find_event(result, EventKind::Message, 1, 0).end_s, 1e-3, kTolerance);
    EXPECT_NEAR(find_event(result, EventKind::Forward, 1, 1).start_s, 1e-3, kTolerance);
    EXPECT_NEAR(find_event(result, EventKind::Forward, 1, 2).start_s, 2e-3, kTolerance);
    EXPECT_NEAR(result.iteration_time.ms(), 4.0, 1e-9);
    EXPECT_NEAR(result.usage[0].communication.ms(), 2.0, 1e-9);
    EXPECT_NEAR(timing::evaluate_plan(plan, one_sender.context()).iteration_time.ms(), 4.0, 1e-9);
  }
  {
    const World one_receiver = world();
    const plan::Plan plan = hand_plan(one_receiver.graph, 3, 2, {{shard(1, 0, 1), shard(2, 1, 2)}, {shard(0, 0, 2)}});
    const SimResult result = simulate(plan, one_receiver.context(), recording());
    EXPECT_NEAR(find_event(result, EventKind::Message, 1, 1).end_s, 1e-3, kTolerance);
    EXPECT_NEAR(find_event(result, EventKind::Message, 1, 2).start_s, 1e-3, kTolerance);
    EXPECT_NEAR(find_event(result, EventKind::Forward, 1, 0).start_s, 2e-3, kTolerance);
    EXPECT_NEAR(result.iteration_time.ms(), 4.0, 1e-9);
    EXPECT_NEAR(timing::evaluate_plan(plan, one_receiver.context()).iteration_time.ms(), 4.0, 1e-9);
  }
}

// Data parallelism on 2 ranks, batch 2: input [4,1,1] -> a (1x1 conv 4->4: 20 params, 80 B
// of gradients) -> b (1x1 conv 4->240: 1200 params, 4800 B). Links 1.6 MB/s, no latency:
// a 2-rank ring all-reduce of S bytes takes 2 * (1/2) * S / B = S / B: 4800 B 3 ms, 80 B
// 0.05 ms, 4880 B 3.05 ms. Costs: a and b forward 1 ms, backward 2 ms (per call).
// One segment (every layer on both ranks): forward a [0,1], b [1,2]; backward b [2,4], a [4,6].
//  - per-layer buckets (a 4096 B cap): b's bucket closes with b's backward: [4,7], beside a's
//    backward [4,6]; a's bucket waits for it (a rank runs one collective at a time):
//    [7,7.05]. Step 7.05 ms (9.05 without the overlap).
//  - the default 25 MiB cap (and 1 MiB first bucket, as DDP): b's and a's 4880 B are one
//    bucket, closed by a (the group's last layer), so nothing overlaps: [6,9.05]. Step 9.05 ms.
// The world above, with optimizer updates per layer name (none by default).
World overlap_world(std::map<std::string, Seconds> updates = {}) {
  graph::GraphBuilder b("overlap");
  std::string x = b.input("input", {4, 1, 1});
  x = b.conv2d("a", x, graph::conv2d_attrs(4, {1, 1}));
  b.conv2d("b", x, graph::conv2d_attrs(240, {1, 1}));
  return World(std::move(b).build(), test_cluster(2, 1.6e6, 0),
               {{"input", {ms(0), ms(0)}}, {"a", {ms(1), ms(2)}}, {"b", {ms(1), ms(2)}}}, std::move(updates));
}

TEST(Simulator, AllreduceOverlapsBackward) {
  const World world = overlap_world();
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 2, 2);
  const SimOptions per_layer = per_layer_buckets();
  const SimResult result = simulate(plan, world.context(), per_layer);
  const SimEvent& b_sync = find_event(result, EventKind::Allreduce, 2, 0);
  EXPECT_NEAR(b_sync.start_s, 4e-3, kTolerance);
  EXPECT_NEAR(b_sync.end_s, 7e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Backward, 1, 1).end_s, 6e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Allreduce, 1, 1).start_s, 7e-3, kTolerance);
  EXPECT_NEAR(result.iteration_time.ms(), 7.05, 1e-9);

  const SimResult one_bucket = simulate(plan, world.context(), recording());
  const SimEvent& bucket = find_event(one_bucket, EventKind::Allreduce, 1, 0);  // closed by a
  EXPECT_NEAR(bucket.start_s, 6e-3, kTolerance);
  EXPECT_NEAR(bucket.bytes, 4880, 1e-9);
  EXPECT_NEAR(one_bucket.iteration_time.ms(), 9.05, 1e-9);
}

// The optimizer step: each rank updates its layers once its compute is done and its buckets
// are all-reduced (UPDATE follows WAIT_ALLREDUCE; the sends are waited for after it).
//  (1) AllreduceOverlapsBackward's world with updates a 0.5 ms and b 1 ms: both ranks hold
//      both layers; compute ends at 6 ms. Per-layer buckets: a's all-reduce ends at 7.05 ms,
//      each rank's update [7.05, 8.55], step 8.55 ms. One bucket: it ends at 9.05 ms, update
//      [9.05, 10.55], step 10.55 ms.
//  (2) The three-layer chain with updates a 1 ms and b 2 ms by the cost model: its layers
//      have no parameters, so no rank's program has an UPDATE (the runtime's optimizer has
//      nothing to step) and those times are not charged: 12 ms, r0 computing 9 ms. (The old
//      simulator charged them: r0 [11,14], r1 [12,13], 14 ms.)
//  (3) UpdateDoesNotWaitForSends below: a rank whose last send is still on the wire.
TEST(Simulator, EachRankUpdatesItsLayersAfterItsLastWork) {
  {
    const World world = overlap_world({{"a", Seconds::from_ms(0.5)}, {"b", Seconds::from_ms(1)}});
    const plan::Plan plan = plan::plan_data_parallel(world.graph, 2, 2);
    const SimOptions per_layer = per_layer_buckets();
    const SimResult result = simulate(plan, world.context(), per_layer);
    for (const int rank : {0, 1}) {
      const SimEvent& update = find_event(result, EventKind::Update, -1, rank);
      EXPECT_NEAR(update.start_s, 7.05e-3, kTolerance);
      EXPECT_NEAR(update.end_s, 8.55e-3, kTolerance);
    }
    EXPECT_NEAR(result.iteration_time.ms(), 8.55, 1e-9);
    const SimResult one_bucket = simulate(plan, world.context(), recording());
    EXPECT_NEAR(find_event(one_bucket, EventKind::Update, -1, 0).start_s, 9.05e-3, kTolerance);
    EXPECT_NEAR(one_bucket.iteration_time.ms(), 10.55, 1e-9);
  }
  {
    const World world = chain3_world({{"a", Seconds::from_ms(1)}, {"b", Seconds::from_ms(2)}});
    const SimResult result = simulate(chain3_plan(world), world.context(), recording());
    for (const SimEvent& event : result.events) EXPECT_NE(event.kind, EventKind::Update);
    EXPECT_NEAR(result.iteration_time.ms(), 12.0, 1e-9);
    EXPECT_NEAR(result.usage[0].foreground.ms(), 9.0, 1e-9);
  }
}

// input [12,1,1] (48 B a sample) -> a (relu) on r0 -> b (1x1 conv 12->12, with parameters)
// on r1; batch 1; links 16 kB/s, no latency: a message of one sample takes 3 ms. a and b:
// 2 ms forward, 2 ms backward; b's update 1 ms (a has no parameters: r0 has no UPDATE).
//   r0: a [0,2]; message a->b [2,5]; r1: b [5,7], b backward [7,9]; the gradient r1->r0
//   [9,12] while r1 updates [9,10] (the runtime's UPDATE comes before WAIT_SENDS; the old
//   simulator made it wait for the send: [12,13]); r0: a backward [12,14]. Step 14 ms.
World update_world() {
  graph::GraphBuilder b("pipe_update");
  b.conv2d("b", b.relu("a", b.input("input", {12, 1, 1})), graph::conv2d_attrs(12, {1, 1}));
  return World(std::move(b).build(), test_cluster(2, 16e3, 0),
               {{"input", {ms(0), ms(0)}}, {"a", {ms(2), ms(2)}}, {"b", {ms(2), ms(2)}}}, {{"b", Seconds::from_ms(1)}});
}
plan::Plan update_plan(const World& world) {
  return hand_plan(world.graph, 2, 1, {{shard(0, 0, 1)}, {shard(0, 0, 1)}, {shard(1, 0, 1)}});
}

TEST(Simulator, UpdateDoesNotWaitForSends) {
  const World world = update_world();
  const SimResult result = simulate(update_plan(world), world.context(), recording());
  EXPECT_NEAR(find_event(result, EventKind::Update, -1, 1).start_s, 9e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Message, 2, 1).end_s, 12e-3, kTolerance);  // the gradient
  EXPECT_NEAR(result.iteration_time.ms(), 14.0, 1e-9);
}

// A segment's backward is one autograd call: it starts once every gradient into the segment
// has arrived. input [250] (1000 B a sample), p = relu(input), q = relu(p) all on r0 (one
// segment); u = relu(p) on r1, v = relu(q) on r2 (two more segments, both outputs of the
// model). Batch 1; 1 MB/s, no latency: a sample crosses in 1 ms. Forward 1 ms each; backward
// p 1, q 3, u 6, v 1 ms.
//   forward: r0: p [0,1], q [1,2]; p->u r0->r1 [1,2]; q->v r0->r2 [2,3] (r0's send port is
//   free again at 2); u on r1 [2,3], v on r2 [3,4].
//   backward: r1: u [3,9], gradient p<-u r1->r0 [9,10]; r2: v [4,5], gradient q<-v r2->r0
//   [5,6]. r0's segment waits for both: q [10,13], p [13,14]. Step 14 ms. (A backward per
//   layer, as the old schedule had it, would start q at 6 when its own gradient is there:
//   q [6,9], p [10,11], 11 ms.)
World fan_world() {
  graph::GraphBuilder b("fan");
  const std::string p = b.relu("p", b.input("input", {250}));
  const std::string q = b.relu("q", p);
  b.relu("u", p);
  b.relu("v", q);
  return World(std::move(b).build(), test_cluster(3, 1e6, 0),
               {{"input", {ms(0), ms(0)}}, {"p", {ms(1), ms(1)}}, {"q", {ms(1), ms(3)}}, {"u", {ms(1), ms(6)}},
                {"v", {ms(1), ms(1)}}});
}
plan::Plan fan_plan(const World& world) {
  const std::vector<cost::Shard> r0{shard(0, 0, 1)};
  return hand_plan(world.graph, 3, 1, {r0, r0, r0, {shard(1, 0, 1)}, {shard(2, 0, 1)}});
}

TEST(Simulator, SegmentBackwardWaitsForAllItsGradients) {
  const World world = fan_world();
  const SimResult result = simulate(fan_plan(world), world.context(), recording());
  EXPECT_NEAR(find_event(result, EventKind::Backward, 2, 0).start_s, 10e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Backward, 1, 0).end_s, 14e-3, kTolerance);
  EXPECT_NEAR(result.iteration_time.ms(), 14.0, 1e-9);
}

// A BatchNorm on 2 ranks with synchronised statistics runs the runtime's split path: its
// split times (forward 3 ms, backward 4 ms per call) instead of one device's (1 ms each).
// input [4,1,1] -> bn, data parallel on 2 ranks, batch 2; links 1 GB/s, no latency, so the
// statistics (64 B) and gradient (32 B) all-reduces take nanoseconds. Sync: 3 + 4 = 7 ms;
// local statistics: 1 + 1 = 2 ms.
World batchnorm_world() {
  graph::GraphBuilder b("bn");
  b.batchnorm2d("bn", b.input("input", {4, 1, 1}));
  return World(std::move(b).build(), test_cluster(2, 1e9, 0), {{"input", {ms(0), ms(0)}}, {"bn", {ms(1), ms(1)}}}, {},
               {{"bn", {ms(3), ms(4)}}});
}

TEST(Simulator, SplitBatchNormTakesItsSplitTime) {
  const World world = batchnorm_world();
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 2, 2);
  SimOptions sync;
  EXPECT_NEAR(simulate(plan, world.context(), sync).iteration_time.ms(), 7.0, 1e-3);
  SimOptions local;
  local.program.sync_batchnorm = false;
  EXPECT_NEAR(simulate(plan, world.context(), local).iteration_time.ms(), 2.0, 1e-3);
  // On one rank the layer is not split: one device's time.
  EXPECT_NEAR(simulate(plan::plan_data_parallel(world.graph, 1, 2), world.context(), sync).iteration_time.ms(), 2.0,
              1e-9);
}

// input [4,1,1] -> x (1x1 conv 4->4, 80 B of gradients) -> y (relu) -> z (1x1 conv 4->240,
// 4800 B); 2 ranks, 1.6 MB/s, no latency: a sample of x's or y's output (16 B) crosses in
// 0.01 ms; z's 2-rank all-reduce takes 3 ms, x's 0.05 ms. Every layer 1 ms forward and 1 ms
// backward; input and x, z data parallel, y on r0 only. Batch 2. x and z share the group
// {0, 1}: per-layer buckets (a 4096 B cap), or z's all-reduce would wait for x's backward
// in one bucket with it and there would be no message left to delay (then both variants
// take 6.04 + 3.05 = 9.09 ms).
//   forward: x [0,1] on both; x->y r1->r0 [1,1.01]; y on r0 [1.01,2.01]; y->z r0->r1
//   [2.01,2.02]; z on r0 [2.01,3.01], on r1 [2.02,3.02].
//   backward: z [3.01,4.01] on r0, [3.02,4.02] on r1; z's all-reduce becomes ready at 4.02,
//   and so does the gradient message z->y r1->r0 (r1's program starts the all-reduce first).
//   (a) all-reduces on their own channel: the message [4.02,4.03]; y [4.03,5.03]; y->x r0->r1
//       [5.03,5.04]; x [5.03,6.03] and [5.04,6.04]; x's all-reduce waits for z's (one
//       collective at a time): [7.02,7.07]. Step 7.07 ms.
//   (b) all-reduces hold the ports: z's all-reduce, released first, holds r1's send port
//       [4.02,7.02]; the message [7.02,7.03]; y [7.03,8.03]; y->x [8.03,8.04]; x [8.03,9.03]
//       and [8.04,9.04]; x's all-reduce [9.04,9.09]. Step 9.09 ms.
World hold_world() {
  graph::GraphBuilder b("hold");
  std::string v = b.input("input", {4, 1, 1});
  v = b.conv2d("x", v, graph::conv2d_attrs(4, {1, 1}));
  v = b.relu("y", v);
  b.conv2d("z", v, graph::conv2d_attrs(240, {1, 1}));
  return World(std::move(b).build(), test_cluster(2, 1.6e6, 0),
               {{"input", {ms(0), ms(0)}}, {"x", {ms(1), ms(1)}}, {"y", {ms(1), ms(1)}}, {"z", {ms(1), ms(1)}}});
}
plan::Plan hold_plan(const World& world) {
  const std::vector<cost::Shard> split = {shard(0, 0, 1), shard(1, 1, 2)};
  return hand_plan(world.graph, 2, 2, {split, split, {shard(0, 0, 2)}, split});
}

TEST(Simulator, AllreducesHoldingPortsDelayMessages) {
  const World world = hold_world();
  const plan::Plan plan = hold_plan(world);
  SimOptions options = per_layer_buckets();
  const SimResult own_channel = simulate(plan, world.context(), options);
  EXPECT_NEAR(own_channel.iteration_time.ms(), 7.07, 1e-9);
  EXPECT_NEAR(find_event(own_channel, EventKind::Backward, 2, 0).start_s, 4.03e-3, kTolerance);
  options.collectives_hold_ports = true;
  const SimResult holding = simulate(plan, world.context(), options);
  EXPECT_NEAR(holding.iteration_time.ms(), 9.09, 1e-9);
  EXPECT_NEAR(find_event(holding, EventKind::Backward, 2, 0).start_s, 7.03e-3, kTolerance);
  EXPECT_NEAR(simulate(plan, world.context(), recording()).iteration_time.ms(), 9.09, 1e-9);  // one bucket
}

// input [250] -> a (relu) on r0 -> b (relu) on r1; batch 1; 1 MB/s: a 1 ms message each way.
// a and b: 2 ms forward and 2 ms backward. Alone:
//   r0: a [0,2]; message [2,3]; r1: b [3,5], b backward [5,7]; message [7,8]; r0: a [8,10].
// Background job: one relu layer, 2 ms forward and 2 ms backward at batch 1, so kernels of
// 2 ms and a background step of 4 ms (1 sample). One step simulated:
//   r1 is idle at 0: kernels [0,2], [2,4]; b becomes ready at 3 and waits for the running
//   kernel's remaining 1 ms: b [4,6], b backward [6,8]; message [8,9]; r1 then runs kernels
//   [8,10], [10,12].
//   r0: a [0,2]; kernels [2,4], [4,6], [6,8], [8,10]; a's backward, ready at 9, waits 1 ms:
//   [10,12]. Step 12 ms: slowdown 12/10 = 1.2.
//   Background: 8 ms of kernels per rank, 16 ms = 4 background steps = 4 samples in 12 ms:
//   333.33 samples/s; the foreground's 1 sample in 12 ms is 83.33/s; together 416.67/s.
// (This is BackgroundPolicy::Greedy; FitIdleGaps is the next test.)
struct PipeWorld {
  static graph::Graph pipe() {
    graph::GraphBuilder b("pipe");
    b.relu("b", b.relu("a", b.input("input", {250})));
    return std::move(b).build();
  }
  static graph::Graph filler_model() {
    graph::GraphBuilder k("filler");
    k.relu("k", k.input("noise", {8}));
    return std::move(k).build();
  }

  World world{pipe(), test_cluster(2, 1e6, 0),
              {{"input", {ms(0), ms(0)}}, {"a", {ms(2), ms(2)}}, {"b", {ms(2), ms(2)}},
               {"noise", {ms(0), ms(0)}}, {"k", {ms(2), ms(2)}}}};
  graph::Graph filler = filler_model();  // timed by world.cost too
  plan::Plan plan = hand_plan(world.graph, 2, 1, {{shard(0, 0, 1)}, {shard(0, 0, 1)}, {shard(1, 0, 1)}});
};

TEST(Simulator, BackgroundKernelDelaysForegroundByItsRemainingTime) {
  const PipeWorld pipe;
  const World& world = pipe.world;
  const graph::Graph& filler = pipe.filler;
  const plan::Plan& plan = pipe.plan;
  SimOptions options = recording();
  const SimResult alone = simulate(plan, world.context(), options);
  EXPECT_NEAR(alone.iteration_time.ms(), 10.0, 1e-9);

  options.background = BackgroundJob{&filler, 1, BackgroundPolicy::Greedy};
  const SimResult result = simulate(plan, world.context(), options);
  EXPECT_NEAR(result.iteration_time.ms(), 12.0, 1e-9);
  EXPECT_NEAR(find_event(result, EventKind::Forward, 2, 1).start_s, 4e-3, kTolerance);
  EXPECT_NEAR(find_event(result, EventKind::Backward, 1, 0).start_s, 10e-3, kTolerance);
  EXPECT_NEAR(result.usage[0].background.ms(), 8.0, 1e-9);
  EXPECT_NEAR(result.usage[1].background.ms(), 8.0, 1e-9);
  EXPECT_NEAR(result.background_step_alone.ms(), 4.0, 1e-9);
  EXPECT_NEAR(result.background_samples_per_s, 4 / 12e-3, 1e-6);
  EXPECT_NEAR(result.cluster_throughput, 5 / 12e-3, 1e-6);
  EXPECT_NEAR(result.busy_fraction, 1.0, 1e-9);  // 8 + 8 foreground, 16 background, of 24

  const MultiplexResult multiplexed =
      simulate_multiplexed(plan, world.context(), recording(), BackgroundJob{&filler, 1, BackgroundPolicy::Greedy});
  EXPECT_NEAR(multiplexed.alone.iteration_time.ms(), 10.0, 1e-9);
  EXPECT_GT(multiplexed.foreground_slowdown, 1.0);
}

// The world above with BackgroundPolicy::FitIdleGaps: a kernel starts only if it ends within
// the idle gap the foreground alone leaves (r0: [2,8]; r1: [0,3] and [7,10]).
//   r1: kernel [0,2]; at 2 the next would end at 4 > 3: none; b [3,5], b backward [5,7];
//       kernel [7,9]; at 9 the next would end at 11 > 10: none.
//   r0: a [0,2]; kernels [2,4], [4,6], [6,8]; a's backward, ready at 8, starts at once: [8,10].
//   Step 10 ms, no slowdown. Background: 6 + 4 = 10 ms of kernels = 2.5 background steps in
//   10 ms: 250 samples/s. The foreground alone leaves 6 + 6 = 12 ms idle per 10 ms step, room
//   for 12 / 4 = 3 steps: 300 samples/s, so the idle-time efficiency is 250 / 300.
TEST(Simulator, BackgroundFitsIdleGapsWithoutSlowingTheForeground) {
  const PipeWorld pipe;
  const World& world = pipe.world;
  const graph::Graph& filler = pipe.filler;
  const plan::Plan& plan = pipe.plan;
  SimOptions options = recording();
  options.background = BackgroundJob{&filler, 1, BackgroundPolicy::FitIdleGaps};
  const SimResult result = simulate(plan, world.context(), options);
  EXPECT_NEAR(result.iteration_time.ms(), 10.0, 1e-9);
  EXPECT_NEAR(find_event(result, EventKind::Backward, 1, 0).start_s, 8e-3, kTolerance);
  EXPECT_NEAR(result.usage[0].background.ms(), 6.0, 1e-9);
  EXPECT_NEAR(result.usage[1].background.ms(), 4.0, 1e-9);
  EXPECT_NEAR(result.background_samples_per_s, 250.0, 1e-6);

  const MultiplexResult multiplexed = simulate_multiplexed(plan, world.context(), recording(), BackgroundJob{&filler, 1});
  EXPECT_NEAR(multiplexed.foreground_slowdown, 1.0, 1e-9);
  EXPECT_NEAR(multiplexed.idle_time_efficiency, 250.0 / 300.0, 1e-9);
}

// The same inputs give the same timeline, event for event (docs/architecture.md, invariant 5).
TEST(Simulator, IsDeterministic) {
  const graph::Graph graph = graph::load_model("inception_v3");
  const cost::DeviceModel device = cost::resolve_device("a100", std::nullopt);
  const auto cost = cost::make_cost_model(device);
  const cost::NetworkModel network(cluster::builtin_cluster("a100", 16));
  const plan::PlanContext context{graph, *cost, network};
  const plan::Plan plan = planner::plan_burst(context, 64);
  const graph::Graph background = graph::load_model("resnet50");
  SimOptions options = options_with_background(BackgroundJob{&background, 8});
  options.record_events = true;
  const SimResult first = simulate(plan, context, options);
  const SimResult second = simulate(plan, context, options);
  ASSERT_EQ(first.events.size(), second.events.size());
  for (size_t i = 0; i < first.events.size(); ++i) {
    ASSERT_EQ(first.events[i].start_s, second.events[i].start_s) << i;
    ASSERT_EQ(first.events[i].end_s, second.events[i].end_s) << i;
    ASSERT_EQ(first.events[i].rank, second.events[i].rank) << i;
  }
  EXPECT_EQ(first.iteration_time.s(), second.iteration_time.s());
  EXPECT_GT(first.background_samples_per_s, 0);
  const std::string trace = chrome_trace_json(first, graph, &background, 4);
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(trace.find("background"), std::string::npos);
}

// Both time the same lowered step program; the simulator adds ports, which only delay a
// message that another message (or, with collectives_hold_ports, an all-reduce) holds up.
// So in every world above where no two messages want one port at once, the evaluator's
// step is the simulator's, to rounding; the numbers are derived with each world.
TEST(Simulator, EvaluatorAndSimulatorAgree) {
  auto agree = [](const char* name, const World& world, const plan::Plan& plan, const SimOptions& options,
                  double expected_ms) {
    SCOPED_TRACE(name);
    const double simulated = simulate(plan, world.context(), options).iteration_time.s();
    EXPECT_NEAR(simulated, expected_ms * 1e-3, 1e-12);
    EXPECT_NEAR(timing::evaluate_plan(plan, world.context(), evaluating(options)).iteration_time.s(), simulated, 1e-9);
  };
  SimOptions local;
  local.program.sync_batchnorm = false;
  const World chain3 = chain3_world();
  agree("three-layer chain", chain3, chain3_plan(chain3), {}, 12.0);
  const World chain3_updates = chain3_world({{"a", Seconds::from_ms(1)}, {"b", Seconds::from_ms(2)}});
  agree("three-layer chain, updates", chain3_updates, chain3_plan(chain3_updates), {}, 12.0);  // none charged
  const World overlap = overlap_world();
  const plan::Plan overlap_dp = plan::plan_data_parallel(overlap.graph, 2, 2);
  agree("overlap, per-layer buckets", overlap, overlap_dp, per_layer_buckets(), 7.05);
  agree("overlap, one bucket", overlap, overlap_dp, {}, 9.05);
  const World overlap_updates = overlap_world({{"a", Seconds::from_ms(0.5)}, {"b", Seconds::from_ms(1)}});
  agree("overlap, updates, per-layer buckets", overlap_updates, overlap_dp, per_layer_buckets(), 8.55);
  agree("overlap, updates, one bucket", overlap_updates, overlap_dp, {}, 10.55);
  const World update = update_world();
  agree("update before the sends", update, update_plan(update), {}, 14.0);
  const World fan = fan_world();
  agree("segment backward", fan, fan_plan(fan), {}, 14.0);
  const World hold = hold_world();
  agree("hold world, per-layer buckets", hold, hold_plan(hold), per_layer_buckets(), 7.07);
  agree("hold world, one bucket", hold, hold_plan(hold), {}, 9.09);
  const PipeWorld pipe;
  agree("pipe", pipe.world, pipe.plan, {}, 10.0);
  // Split BatchNorm: 7 ms plus three all-reduces of 64, 64 and 32 B over 1 GB/s on two
  // ranks (2 x 1/2 x S / B each): 160 ns. Local statistics: 2 ms and the gradients' 32 ns.
  const World batchnorm = batchnorm_world();
  const plan::Plan batchnorm_dp = plan::plan_data_parallel(batchnorm.graph, 2, 2);
  agree("split BatchNorm", batchnorm, batchnorm_dp, {}, 7.00016);
  agree("local BatchNorm", batchnorm, batchnorm_dp, local, 2.000032);
}

// Burst plans on the zoo, whose messages contend for ports: the evaluator holds the same
// ports in the same order as the simulator (step_timing.h), so they agree to rounding, in
// the whole step and in every layer's figures the evaluator takes from its tasks.
TEST(Simulator, EvaluatorHoldsThePortsTheSimulatorDoes) {
  const cost::DeviceModel device = cost::resolve_device("a100", std::nullopt);
  const auto cost = cost::make_cost_model(device);
  struct Case {
    const char* model;
    int devices;
    int64_t batch;
  };
  for (const Case& c : {Case{"inception_v3", 8, 32}, Case{"resnet50", 8, 32}, Case{"vgg16", 64, 32},
                        Case{"inception_v3", 64, 128}}) {
    const graph::Graph graph = graph::load_model(c.model);
    const cost::NetworkModel network(cluster::builtin_cluster("a100", c.devices));
    const plan::PlanContext context{graph, *cost, network};
    const plan::Plan plan = planner::plan_burst(context, c.batch);
    for (const bool sync : {true, false}) {
      SimOptions options;
      options.program.sync_batchnorm = sync;
      const double simulated = simulate(plan, context, options).iteration_time.s();
      const double evaluated = timing::evaluate_plan(plan, context, evaluating(options)).iteration_time.s();
      EXPECT_NEAR(simulated, evaluated, 1e-9 * evaluated) << c.model << " on " << c.devices;
    }
  }
}

// Data parallelism on the zoo (no re-shards at all, so nothing to contend): the simulator
// and the evaluator agree, with either BatchNorm mode.
TEST(Simulator, DataParallelMatchesTheEvaluator) {
  const cost::DeviceModel device = cost::resolve_device("a100", std::nullopt);
  const auto cost = cost::make_cost_model(device);
  for (const char* name : {"vgg16", "resnet50", "inception_v3"}) {
    const graph::Graph graph = graph::load_model(name);
    for (const int devices : {1, 8, 32}) {
      const cost::NetworkModel network(cluster::builtin_cluster("a100", devices));
      const plan::PlanContext context{graph, *cost, network};
      const plan::Plan plan = plan::plan_data_parallel(graph, devices, 64);
      for (const bool sync : {true, false}) {
        SimOptions options;
        options.program.sync_batchnorm = sync;
        const double simulated = simulate(plan, context, options).iteration_time.s();
        const double evaluated = timing::evaluate_plan(plan, context, evaluating(options)).iteration_time.s();
        EXPECT_NEAR(simulated, evaluated, 1e-9 * evaluated) << name << " on " << devices;
      }
    }
  }
}

TEST(Simulator, RefusesBadOptions) {
  graph::GraphBuilder b("tiny");
  b.relu("a", b.input("input", {4}));
  const World world(std::move(b).build(), test_cluster(1, 1e6, 0), {{"input", {ms(0), ms(0)}}, {"a", {ms(1), ms(1)}}});
  const plan::Plan plan = plan::plan_data_parallel(world.graph, 1, 2);
  SimOptions options;
  options.iterations = 0;
  EXPECT_THROW(simulate(plan, world.context(), options), UserError);
  options.iterations = 2;
  options.warmup_iterations = 2;
  EXPECT_THROW(simulate(plan, world.context(), options), UserError);
  options.warmup_iterations = 0;
  options.background = BackgroundJob{&world.graph, 0};
  EXPECT_THROW(simulate(plan, world.context(), options), UserError);
  options.background.reset();
  options.program.bucket_bytes = 0;
  EXPECT_THROW(simulate(plan, world.context(), options), UserError);
}

}  // namespace
}  // namespace burst::sim
