#pragma once
// Predicting one training iteration of a plan: what the planner is judged by and every
// report (`burst plan`, sweeps, pictures) prints. docs/planner.md explains the model; in
// short, it times the step program the runtime runs (lib/program), lowered to tasks by
// step_tasks.h, with the one task timer (task_timer.h) the simulator (lib/sim) runs too:
//  - every rank runs its own op list: its layers' forward in graph order, then their
//    backward in reverse graph order, one shard at a time (cost model at the shard's size);
//    a shard starts when the rank's previous shard is done and its inputs have arrived at
//    that rank (a rank that has its inputs goes ahead of the layer's other ranks);
//  - every non-local piece of a re-shard is a message of the network's point-to-point time
//    from the producer's rank once its shard is done; gradients go back the same way (not
//    into the data). Each device has a send port and a receive port that carry one message
//    at a time, in the order messages become ready (as the simulator's);
//  - a segment (consecutive layers with one placement) runs its backward as one call: it
//    starts once every gradient into the segment has arrived;
//  - gradients are all-reduced in buckets (ProgramOptions::bucket_bytes, DDP's buckets):
//    a bucket's all-reduce starts when its last layer's backward is done on every rank of
//    its group and each of them has finished its earlier collectives (a rank runs its
//    collectives one at a time, in program order); it overlaps the rest of backward;
//  - a BatchNorm with synchronised statistics on several ranks takes its split time and a
//    blocking statistics all-reduce after its forward and after its backward;
//  - each rank then updates the parameters of its layers (the optimizer step, cost model's
//    update() per layer; 0 where it has no data) once its buckets are all-reduced;
//  - the iteration ends when every rank's compute, message and all-reduce is done.
#include <optional>
#include <vector>

#include "burst/graph/graph.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/timing/energy.h"
#include "burst/timing/step_tasks.h"
#include "burst/program/program_options.h"
#include "burst/util/units.h"

namespace burst::timing {

using plan::PlanContext;

enum class ActivityKind { Forward, Backward, Transfer, Allreduce, Update };
const char* activity_kind_name(ActivityKind kind);

// One interval of one rank's timeline (seconds from the start of the iteration).
struct Activity {
  double start_s = 0;
  double end_s = 0;
  ActivityKind kind = ActivityKind::Forward;
  graph::LayerId layer = 0;  // the layer computed, received into (Transfer) or synchronised;
                             // -1 for Update (all of the rank's layers)
};

struct LayerTiming {
  int devices = 0;
  int64_t per_device_batch = 0;  // the largest shard
  Seconds forward;               // compute of the largest shard
  Seconds backward;
  Seconds transfer;       // the slowest message of an input re-shard into this layer (forward)
  Seconds sync;           // the all-reduce of the bucket holding its gradients (0 without one)
  Seconds update;         // the optimizer's update of its parameters, on each of its ranks
  double amplification = 0;  // devices x (forward + backward) / one-device time at the batch
  double forward_start_s = 0, forward_end_s = 0;
  double backward_start_s = 0, backward_end_s = 0;
  double sync_end_s = 0;  // when its bucket's all-reduce is done (backward_end_s without one)
};

struct PlanEvaluation {
  Seconds iteration_time;
  // Compute time summed over ranks (each rank at its own shard, and its updates): what the
  // plan occupies.
  Seconds device_seconds;
  // devices x iteration_time - device_seconds: what a background job could use, waits for
  // transfers and all-reduces included.
  Seconds idle_device_seconds;
  // Every layer at the whole global batch on one device, and one update of every layer, no
  // communication.
  Seconds one_device_compute;
  // The busiest rank's compute (forwards, backwards, updates) and recomputation.
  Seconds busiest_compute;
  Seconds busiest_recompute;
  std::vector<LayerTiming> layers;  // by layer id
  // Per rank, in start order; filled only when asked for (it holds ranks x layers entries).
  // Transfers are the messages a rank receives (layer: the one received into); BatchNorm
  // statistics syncs show as all-reduces of their layer.
  std::vector<std::vector<Activity>> timelines;
  // The step's energy (energy.h), known when every device kind has a power model.
  StepEnergy energy;

  // device_seconds / one_device_compute: 1 means no work is wasted by splitting.
  double mean_amplification() const {
    return one_device_compute.s() > 0 ? device_seconds / one_device_compute : 1.0;
  }
};

struct EvaluateOptions {
  bool timelines = false;  // fill PlanEvaluation::timelines
  program::ProgramOptions program;  // the step timed: the one the runtime would run
  // Lower and time every rank. By default, where no port carries two messages, ranks that
  // provably time the same (no messages, shards of the same sizes in the same segments:
  // program::BuildScope::one_rank_per_class) are built and timed once: the same result, faster.
  // For tests.
  bool time_each_rank = false;
};

// The program evaluate_plan builds for `plan` (representatives only where that times the
// same: EvaluateOptions::time_each_rank) and its lowered tasks, at options.program.
struct EvaluationTasks {
  program::StepProgram program;
  StepTasks step;
};
EvaluationTasks evaluation_tasks(const plan::Plan& plan, const PlanContext& context, const EvaluateOptions& options);

// Predicts one iteration of `plan`. The plan must be valid for the context (validate_plan);
// throws UserError when the cost model has no time for a layer, or for a bucket size that
// is not a positive finite number.
PlanEvaluation evaluate_plan(const plan::Plan& plan, const PlanContext& context,
                             const EvaluateOptions& options = {});

// Model FLOPs utilisation (MFU, as Megatron-LM reports it): the model's training FLOPs of
// one iteration, 3 x the forward FLOPs of the global batch (a backward costs two forwards;
// recomputation and the collectives count nothing), per second of `iteration`, over
// `devices` x `peak_flops` (FLOP/s of one device). 0 for a non-positive time or peak.
double model_flops_utilisation(const graph::Graph& graph, int64_t global_batch, Seconds iteration, int devices,
                               double peak_flops);

// Hardware FLOPs utilisation (HFU, as Megatron-LM and PaLM report it beside MFU): the FLOPs
// the devices compute, recomputation included: 3 x the forward FLOPs plus the forward FLOPs
// `recompute` runs again (full: every layer's; selective: the attention cores', by
// cost::attention_core_forward_share), per second, over `devices` x `peak_flops`.
double hardware_flops_utilisation(const graph::Graph& graph, int64_t global_batch, Seconds iteration, int devices,
                                  double peak_flops, cost::Recompute recompute);

// A language model's throughput as torchtitan logs it: tokens per second per device, model
// TFLOP/s per device by graph::model_flops_per_token, and that over the device's peak (its
// MFU; 0 without a peak). nullopt for a graph that is not a language model or a time that
// is not positive.
struct LanguageModelRate {
  double tokens_per_s_per_device = 0;
  double model_tflop_s_per_device = 0;
  double mfu = 0;
};
std::optional<LanguageModelRate> language_model_rate(const graph::Graph& graph, int64_t global_batch,
                                                     Seconds iteration, int devices, double peak_flops);

}  // namespace burst::timing
