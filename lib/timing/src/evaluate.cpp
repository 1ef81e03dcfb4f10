#include "burst/timing/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "burst/cost/memory.h"
#include "burst/graph/language_model.h"
#include "burst/program/step_program.h"
#include "burst/timing/step_tasks.h"
#include "burst/timing/task_timer.h"
#include "burst/util/error.h"

namespace burst::timing {

using plan::LayerPlacement;
using plan::Plan;

const char* activity_kind_name(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::Forward: return "forward";
    case ActivityKind::Backward: return "backward";
    case ActivityKind::Transfer: return "transfer";
    case ActivityKind::Allreduce: return "allreduce";
    case ActivityKind::Update: return "update";
  }
  return "?";
}

namespace {

// Whether some rank's ops stand for another's (program::BuildScope::one_rank_per_class).
bool stands_for_others(const program::StepProgram& program) {
  for (size_t rank = 0; rank < program.representative.size(); ++rank) {
    if (program.representative[rank] >= 0 && static_cast<size_t>(program.representative[rank]) != rank) return true;
  }
  return false;
}

int64_t largest_shard(const LayerPlacement& placement) {
  int64_t largest = 0;
  for (const cost::Shard& shard : placement.shards) largest = std::max(largest, shard.samples.size());
  return largest;
}

// What the plan and the cost model say of each layer before timing: its devices, largest
// shard, update, and the one-device baseline. Returns each layer's time at the whole batch.
std::vector<Seconds> fill_layer_facts(const Plan& plan, const PlanContext& context, PlanEvaluation& result) {
  const graph::Graph& graph = context.graph;
  result.layers.resize(graph.size());
  std::vector<Seconds> whole(graph.size());
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
    LayerTiming& timing = result.layers[static_cast<size_t>(id)];
    timing.devices = static_cast<int>(placement.shards.size());
    timing.per_device_batch = largest_shard(placement);
    timing.update = context.cost.update_or_zero(graph, id);
    whole[static_cast<size_t>(id)] = context.cost.require(graph, id, plan.global_batch).time.total();
    result.one_device_compute += whole[static_cast<size_t>(id)] + timing.update;
    timing.forward_start_s = timing.backward_start_s = std::numeric_limits<double>::infinity();
  }
  return whole;
}

// A layer's compute tasks: the largest shard's times (every shard's time grows with its
// size), the first start and the last end of its forward and of its backward.
void add_compute(const Task& task, double start, double end, LayerTiming& timing) {
  const bool forward = task.work == TaskWork::Forward;
  Seconds& time = forward ? timing.forward : timing.backward;
  time = std::max(time, Seconds(task.duration_s));
  double& first = forward ? timing.forward_start_s : timing.backward_start_s;
  double& last = forward ? timing.forward_end_s : timing.backward_end_s;
  first = std::min(first, start);
  last = std::max(last, end);
}

class Timelines {
 public:
  Timelines(bool wanted, int devices) : wanted_(wanted) {
    if (wanted) timelines_.resize(static_cast<size_t>(devices));
  }
  void record(int rank, double start, double end, ActivityKind kind, graph::LayerId id) {
    if (wanted_ && end > start) timelines_[static_cast<size_t>(rank)].push_back(Activity{start, end, kind, id});
  }
  // Sorted by start; a rank that was not lowered gets its representative's timeline.
  std::vector<std::vector<Activity>> sorted(const std::vector<int32_t>& representative) && {
    for (auto& timeline : timelines_) {
      std::stable_sort(timeline.begin(), timeline.end(),
                       [](const Activity& a, const Activity& b) { return a.start_s < b.start_s; });
    }
    for (size_t rank = 0; rank < timelines_.size(); ++rank) {
      const int32_t stands_for = representative[rank];
      if (stands_for >= 0 && static_cast<size_t>(stands_for) != rank) timelines_[rank] = timelines_[static_cast<size_t>(stands_for)];
    }
    return std::move(timelines_);
  }

 private:
  bool wanted_;
  std::vector<std::vector<Activity>> timelines_;
};

ActivityKind compute_activity(TaskWork work) {
  if (work == TaskWork::Forward || work == TaskWork::Recompute) return ActivityKind::Forward;
  return work == TaskWork::Backward ? ActivityKind::Backward : ActivityKind::Update;
}

// A collective's figures: a bucket's all-reduce time and end for each of its layers, and
// the all-reduce on each of its ranks' timelines.
void add_collective(const program::StepProgram& program, const StepTasks& step, const Task& task, double start,
                    PlanEvaluation& result, Timelines& timelines) {
  if (task.work == TaskWork::Allreduce || task.work == TaskWork::ReduceScatter) {
    for (const graph::LayerId id : program.buckets[static_cast<size_t>(task.item)].layers) {
      result.layers[static_cast<size_t>(id)].sync = Seconds(task.duration_s);
      result.layers[static_cast<size_t>(id)].sync_end_s = start + task.duration_s;
    }
  }
  for (const int rank : step.groups[static_cast<size_t>(task.group)]) {  // the lowered ones: the rest copy them
    if (step.representative[static_cast<size_t>(rank)] != rank) continue;
    timelines.record(rank, start, start + task.duration_s, ActivityKind::Allreduce, task.layer);
  }
}

// Every figure of PlanEvaluation from the timed tasks.
void fill_from_tasks(const program::StepProgram& program, const StepTasks& step, const std::vector<double>& start_s,
                     PlanEvaluation& result, Timelines& timelines) {
  for (LayerTiming& timing : result.layers) timing.sync_end_s = -1;  // no bucket yet
  std::vector<std::pair<double, double>> by_rank(step.class_size.size(), {0.0, 0.0});  // compute, recompute
  for (size_t t = 0; t < step.tasks.size(); ++t) {
    const Task& task = step.tasks[t];
    const double start = start_s[t], end = start + task.duration_s;
    switch (task.kind) {
      case TaskKind::Compute:  // on every rank of its rank's class
        result.device_seconds += Seconds(task.duration_s * step.class_size[static_cast<size_t>(task.rank)]);
        (task.work == TaskWork::Recompute ? by_rank[static_cast<size_t>(task.rank)].second
                                          : by_rank[static_cast<size_t>(task.rank)].first) += task.duration_s;
        // A recomputation is device time (above), not the layer's forward or backward.
        if (task.layer >= 0 && task.work != TaskWork::Recompute) {
          add_compute(task, start, end, result.layers[static_cast<size_t>(task.layer)]);
        }
        timelines.record(task.rank, start, end, compute_activity(task.work), task.layer);
        break;
      case TaskKind::Message: {
        const program::Piece& piece = program.pieces[static_cast<size_t>(task.item)];
        Seconds& transfer = result.layers[static_cast<size_t>(piece.consumer)].transfer;
        if (!piece.gradient) transfer = std::max(transfer, Seconds(task.duration_s));
        timelines.record(task.peer, start, end, ActivityKind::Transfer, piece.gradient ? piece.producer : piece.consumer);
        break;
      }
      case TaskKind::Collective:
        add_collective(program, step, task, start, result, timelines);
        break;
      case TaskKind::StepEnd:
        result.iteration_time = Seconds(end);
        break;
    }
  }
  for (const auto& [compute, recompute] : by_rank) {
    if (compute + recompute > (result.busiest_compute + result.busiest_recompute).s()) {
      result.busiest_compute = Seconds(compute);
      result.busiest_recompute = Seconds(recompute);
    }
  }
  for (LayerTiming& timing : result.layers) {
    if (std::isinf(timing.forward_start_s)) timing.forward_start_s = 0;  // never computed (not in a valid plan)
    if (std::isinf(timing.backward_start_s)) timing.backward_start_s = 0;
    if (timing.sync_end_s < 0) timing.sync_end_s = timing.backward_end_s;  // nothing to all-reduce
  }
}

}  // namespace

EvaluationTasks evaluation_tasks(const Plan& plan, const PlanContext& context, const EvaluateOptions& options) {
  TimingOptions timing;
  timing.program = options.program;
  program::BuildScope scope;
  scope.reduce_loss = false;  // not timed
  // Ranks of different kinds time differently even with the same shards: no classes there.
  scope.one_rank_per_class = !options.time_each_rank && !context.heterogeneous();
  EvaluationTasks lowered;
  lowered.program = build_step_program(context.graph, plan, timing.program, scope);
  // Classes time alike without contention, or when they mirror each other's messages.
  if (ports_may_contend(lowered.program) && stands_for_others(lowered.program) && !lowered.program.mirrored) {
    scope.one_rank_per_class = false;
    lowered.program = build_step_program(context.graph, plan, timing.program, scope);
  }
  lowered.step = lower_step_program(lowered.program, context, timing);
  return lowered;
}

PlanEvaluation evaluate_plan(const Plan& plan, const PlanContext& context, const EvaluateOptions& options) {
  BURST_ASSERT(plan.layers.size() == context.graph.size(), "evaluate_plan needs a validated plan");
  const EvaluationTasks lowered = evaluation_tasks(plan, context, options);
  const program::StepProgram& program = lowered.program;
  const StepTasks& step = lowered.step;
  const std::vector<double> start_s = time_tasks(step).start_s;

  const int devices = context.network.cluster().size();
  PlanEvaluation result;
  const std::vector<Seconds> whole = fill_layer_facts(plan, context, result);
  Timelines timelines(options.timelines, devices);
  fill_from_tasks(program, step, start_s, result, timelines);
  for (size_t id = 0; id < result.layers.size(); ++id) {  // devices x (forward + backward) / one device's
    LayerTiming& layer = result.layers[id];
    // (forward and backward are one micro-batch's; a layer runs every one of them)
    layer.amplification = whole[id].s() > 0 ? (layer.forward + layer.backward) / whole[id] * layer.devices *
                                                  static_cast<double>(plan.pipeline.micro_batches)
                                            : 1.0;
  }
  result.idle_device_seconds = Seconds(devices * result.iteration_time.s()) - result.device_seconds;
  result.energy = step_energy(step, result.iteration_time.s(), context);
  if (options.timelines) result.timelines = std::move(timelines).sorted(step.representative);
  return result;
}

namespace {

// Forward FLOPs of one sample through the whole graph, and the part `recompute` runs again.
std::pair<double, double> forward_and_recomputed_flops(const graph::Graph& graph, cost::Recompute recompute) {
  double forward = 0, again = 0;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const auto flops = static_cast<double>(graph.info(id).forward_flops);
    forward += flops;
    if (recompute == cost::Recompute::Full) again += flops;
    if (recompute == cost::Recompute::Selective && graph.layer(id).op() == graph::OpKind::SelfAttention) {
      again += flops * cost::attention_core_forward_share(graph, id);
    }
  }
  return {forward, again};
}

double utilisation(double flops_per_sample, int64_t global_batch, Seconds iteration, int devices, double peak_flops) {
  if (!(iteration.s() > 0) || !(peak_flops > 0) || devices < 1) return 0;
  return flops_per_sample * static_cast<double>(global_batch) / iteration.s() / (static_cast<double>(devices) * peak_flops);
}

}  // namespace

double model_flops_utilisation(const graph::Graph& graph, int64_t global_batch, Seconds iteration, int devices,
                               double peak_flops) {
  const double forward = forward_and_recomputed_flops(graph, cost::Recompute::None).first;
  return utilisation(3 * forward, global_batch, iteration, devices, peak_flops);
}

std::optional<LanguageModelRate> language_model_rate(const graph::Graph& graph, int64_t global_batch,
                                                     Seconds iteration, int devices, double peak_flops) {
  const std::optional<int64_t> tokens = graph::sequence_length(graph);
  if (!tokens || !(iteration.s() > 0) || devices < 1) return std::nullopt;
  LanguageModelRate rate;
  rate.tokens_per_s_per_device =
      static_cast<double>(*tokens) * static_cast<double>(global_batch) / iteration.s() / devices;
  const double flop_s = rate.tokens_per_s_per_device * graph::model_flops_per_token(graph);
  rate.model_tflop_s_per_device = flop_s / 1e12;
  rate.mfu = peak_flops > 0 ? flop_s / peak_flops : 0;
  return rate;
}

double hardware_flops_utilisation(const graph::Graph& graph, int64_t global_batch, Seconds iteration, int devices,
                                  double peak_flops, cost::Recompute recompute) {
  const auto [forward, again] = forward_and_recomputed_flops(graph, recompute);
  return utilisation(3 * forward + again, global_batch, iteration, devices, peak_flops);
}

}  // namespace burst::timing
