#pragma once
// The cluster simulator: a discrete-event simulation of training iterations of a plan on a
// cluster, with an optional background job on every device (docs/simulator.md).
//
// What it models, and how it differs from the planner's evaluator (timing/evaluate.h): both
// time the same tasks, the step program the runtime runs (lib/program) lowered by
// timing/step_tasks.h, with the same task timer (timing/task_timer.h); the simulator adds
// its background job and collectives that hold ports on that timer's hooks:
//  - every rank runs its own program, as the runtime does: the forward of its layers in
//    graph order, then their backward in reverse graph order. A shard starts when the
//    rank's previous shard is done and its inputs have arrived *at that rank* (no layer-wide
//    start: a rank that has its inputs goes ahead); a segment (consecutive layers with one
//    placement) runs its backward as one call, once every gradient into it has arrived;
//  - every non-local piece of a re-shard is its own message, from the producer's rank once
//    that rank's shard is done, to the consumer's rank; backward, the gradient goes back
//    the same way (not into Input layers: the data needs no gradient);
//  - network ports (timing::MessagePorts): each device has one send port
//    and one receive port (full duplex, the cluster model's per-device bandwidth). A message
//    holds its sender's send port and its receiver's receive port for latency + bytes /
//    bandwidth; ports serve messages one at a time in the order they became ready
//    (serialisation and contention). A collective (all-reduce) takes the network model's
//    all-reduce time; each rank runs its collectives one at a time, in program order, on a
//    channel of their own beside the messages (as NCCL communicators and Gloo groups do).
//    SimOptions::collectives_hold_ports makes them hold the message ports too: the
//    pessimistic bound, where a message waits for a whole all-reduce rather than sharing
//    the link with it (only the simulator has it). Without a background job, and
//    collectives on their own channel, the simulator's step is the evaluator's;
//  - gradients are all-reduced in buckets (ProgramOptions::bucket_bytes, as DDP): a bucket's
//    all-reduce starts when all its ranks have finished the backward of the layer that
//    closes it, and overlaps the rest of backward;
//  - BatchNorm on several ranks, with ProgramOptions::sync_batchnorm (burst's runtime): the
//    split implementation's times, and after each forward and each backward shard a
//    blocking all-reduce of the statistics (2 x channels float64 values) among the layer's
//    ranks before those ranks go on;
//  - each rank updates its layers' parameters (the optimizer step: the cost model's
//    update() of each of its layers, one compute task per rank) once its buckets are
//    all-reduced, then waits for its sends; the step ends when every rank's compute,
//    messages and all-reduces are done, and the next step starts on all ranks together
//    (the runtime's loss all-reduce, on logged steps only, is not charged). Data loading is
//    not modelled.
//  - background job (optional): every device trains its own copy of a model at its own
//    per-device batch, one kernel at a time: the compute tasks, in program order, of the
//    step program of a one-rank data-parallel plan of the job (each layer's forward, each
//    layer's backward, the update), the same builder and lowering as the foreground's, whenever the
//    device has no foreground compute to run (and, by default, the kernel fits in the idle
//    gap the foreground leaves there: BackgroundPolicy). The foreground preempts at kernel
//    granularity: a foreground shard that becomes ready while a background kernel runs
//    starts when that kernel ends. Background kernels use no network.
// Deterministic (docs/architecture.md, invariant 5): events at the same time are handled in a fixed
// order, so the same inputs give the same timeline.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "burst/graph/graph.h"
#include "burst/timing/evaluate.h"
#include "burst/plan/plan.h"
#include "burst/util/units.h"

namespace burst::sim {

// When an idle device may start a background kernel.
enum class BackgroundPolicy {
  // Only when the kernel fits in the device's idle gap as the foreground alone has it (the
  // plan's simulated timeline, relative to the step's start): the foreground rarely waits
  // for a kernel, what DeepPool's slowdown limit aims at. A runtime knows these gaps from
  // the plan before it runs.
  FitIdleGaps,
  // Whenever the device has no foreground compute: the most background work, and the
  // foreground waits for every kernel it finds running.
  Greedy,
};

// A background training job: `graph` at `per_device_batch` samples on every device, timed
// by the same cost model as the foreground.
struct BackgroundJob {
  const graph::Graph* graph = nullptr;  // the caller keeps it alive
  int64_t per_device_batch = 0;
  BackgroundPolicy policy = BackgroundPolicy::FitIdleGaps;
};

struct SimOptions {
  program::ProgramOptions program;  // the step simulated: buckets, BatchNorm mode
  bool collectives_hold_ports = false;
  // Added to every foreground forward and backward shard: a runtime's fixed cost per layer
  // call beyond the operation a profile times (autograd bookkeeping, slicing, gradient
  // buffers). 0 by default; bench/sim_fidelity.sh measures it on one process (docs/simulator.md).
  Seconds shard_overhead;
  // Times of a shard whose layer runs on several devices of one node at once (they compute
  // it in lockstep and share the node's memory bandwidth and caches: CPU devices), e.g. a
  // profile from `burst profile --co-located N`; null: the context's cost model throughout.
  // Shards of layers with at most one rank per node, and layers this model has no data
  // for, keep the context's times. Not owned.
  const cost::CostModel* co_located_cost = nullptr;
  std::optional<BackgroundJob> background;
  // Steps simulated; the first `warmup_iterations` are left out of every figure. Without a
  // background job every step is the same (nothing carries over a step's end), so one step
  // is exact. With one, the background kernel running when a step ends delays the next,
  // hence a warm-up step by default.
  int iterations = 1;
  int warmup_iterations = 0;
  bool record_events = false;  // fill SimResult::events (for a Chrome trace)
  bool record_idle_intervals = false;  // fill DeviceUsage::idle_intervals
};

// The defaults for a run with a background job: 1 warm-up and 2 measured steps.
SimOptions options_with_background(const BackgroundJob& job);

enum class EventKind { Forward, Backward, Update, Message, Allreduce, BatchNormSync, TensorAllReduce, Background };
const char* event_kind_name(EventKind kind);

// One interval on one device (seconds from the start of the simulation).
struct SimEvent {
  double start_s = 0;
  double end_s = 0;
  EventKind kind = EventKind::Forward;
  int rank = 0;   // Message: the sender
  int peer = -1;  // Message: the receiver; collectives: the group size
  int32_t layer = -1;  // foreground layer (Background: the background model's layer)
  int iteration = 0;
  double bytes = 0;  // Message and collectives
  double power_w = 0;  // what it adds to its device's idle power while it runs (each end of a message)
};

struct Interval {
  double start_s = 0;
  double end_s = 0;
};

// One device over the measured steps.
struct DeviceUsage {
  Seconds foreground;     // foreground compute
  Seconds background;     // background kernels
  Seconds communication;  // time its send or receive port is busy (beside compute)
  Seconds idle;           // measured time - foreground - background
  // Gaps in its compute (neither foreground nor background) in the first measured step,
  // in seconds from that step's start; only with SimOptions::record_idle_intervals.
  std::vector<Interval> idle_intervals;
};

struct SimResult {
  int devices = 0;
  int64_t global_batch = 0;
  int measured_iterations = 0;
  Seconds iteration_time;  // mean over the measured steps
  std::vector<double> step_end_s;  // when each simulated step ended
  std::vector<DeviceUsage> usage;  // per rank
  Seconds foreground_compute;      // summed over devices, per step
  Seconds background_compute;      // summed over devices, per step
  Seconds one_device_compute;      // the foreground's layers at the whole batch on one device
  double foreground_samples_per_s = 0;  // global batch / iteration time
  double background_samples_per_s = 0;  // all devices: batch x background steps done / s
  double cluster_throughput = 0;        // foreground + background samples per second
  // (one_device_compute + background_compute) / (devices x iteration time): device time
  // spent on work one device would also have had to do (splitting overhead excluded).
  double useful_fraction = 0;
  // (foreground_compute + background_compute) / (devices x iteration time).
  double busy_fraction = 0;
  // A background step alone on one device (the sum of its kernels) and its throughput.
  Seconds background_step_alone;
  double background_alone_samples_per_s = 0;
  std::vector<SimEvent> events;  // with SimOptions::record_events, by start time
  // Energy of one measured step (timing/energy.h; known when every device kind has a power
  // model): the foreground's tasks, the background kernels at their power, idle power in
  // what is left of the step. Per device idle power (watts) for power traces.
  timing::StepEnergy energy;
  std::vector<double> idle_power_w;
  // Samples per joule: the foreground's over the step's energy less the background's, the
  // background's over its kernels' energy (0 without energy or background).
  double foreground_samples_per_joule = 0;
  double background_samples_per_joule = 0;
};

// Simulates `plan` (valid for the context: validate_plan). Throws UserError when the cost
// model has no time for a foreground or background layer, or for bad options (iterations
// < 1, warm-up not below iterations, background batch < 1, bucket size not positive).
SimResult simulate(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options);

// The foreground alone and with a background job, and what multiplexing changes.
struct MultiplexResult {
  SimResult alone;
  SimResult with_background;
  double foreground_slowdown = 1;  // with / alone iteration time
  // Background samples/s against what the job would do given all the device time the
  // foreground alone leaves idle: background_samples_per_s / (alone's idle device-seconds
  // per second x background_alone_samples_per_s). 1: every idle moment used.
  double idle_time_efficiency = 0;
  // The cluster in joules (docs/energy.md, "Filling idle time"): samples of both jobs per
  // joule of the whole step, alone and with the background job, and what one more
  // background sample costs: (energy with - energy alone) per background sample, against
  // the job alone on a device (its kernels' energy per sample).
  double samples_per_joule_alone = 0;
  double samples_per_joule_with = 0;
  double background_joules_per_sample = 0;
  double background_alone_joules_per_sample = 0;
};
MultiplexResult simulate_multiplexed(const plan::Plan& plan, const plan::PlanContext& context,
                                     const SimOptions& alone_options, const BackgroundJob& job);

}  // namespace burst::sim
