#include "burst/sim/simulator.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "event_loop.h"

namespace burst::sim {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::Forward: return "forward";
    case EventKind::Backward: return "backward";
    case EventKind::Update: return "update";
    case EventKind::Message: return "message";
    case EventKind::Allreduce: return "allreduce";
    case EventKind::BatchNormSync: return "batchnorm-sync";
    case EventKind::TensorAllReduce: return "tensor-allreduce";
    case EventKind::Background: return "background";
  }
  return "?";
}

SimOptions options_with_background(const BackgroundJob& job) {
  SimOptions options;
  options.background = job;
  options.iterations = 3;
  options.warmup_iterations = 1;
  return options;
}

namespace {

// What a trace calls a task.
EventKind event_kind(plan::TaskWork work) {
  switch (work) {
    case plan::TaskWork::Forward: return EventKind::Forward;
    case plan::TaskWork::Backward: return EventKind::Backward;
    case plan::TaskWork::Update: return EventKind::Update;
    case plan::TaskWork::Message: return EventKind::Message;
    case plan::TaskWork::Allreduce: return EventKind::Allreduce;
    case plan::TaskWork::BatchNormSync: return EventKind::BatchNormSync;
    case plan::TaskWork::TensorAllReduce: return EventKind::TensorAllReduce;
    case plan::TaskWork::StepEnd: break;
  }
  BURST_ASSERT(false, "a step's end has no event");
  return EventKind::Forward;
}

// The step program's tasks (built with the options' buckets and BatchNorm mode, lowered by
// lib/plan: the schedule the evaluator times too).
detail::StepTasks step_tasks(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options) {
  plan::TimingOptions timing;
  timing.program.bucket_bytes = options.bucket_bytes;
  timing.program.sync_batchnorm = options.batchnorm == BatchNormMode::Sync;
  timing.shard_overhead = options.shard_overhead;
  timing.co_located_cost = options.co_located_cost;
  return plan::plan_step_tasks(plan, context, timing);
}

void check_options(const SimOptions& options) {
  if (options.iterations < 1) {
    throw UserError(fmt::format("the simulation needs at least 1 step, got {}", options.iterations));
  }
  if (options.warmup_iterations < 0 || options.warmup_iterations >= options.iterations) {
    throw UserError(fmt::format("warm-up steps must be in [0, {}) for {} steps, got {}", options.iterations,
                                options.iterations, options.warmup_iterations));
  }
  if (!(options.shard_overhead.s() >= 0) || !std::isfinite(options.shard_overhead.s())) {
    throw UserError(fmt::format("the per-shard overhead must be a finite time >= 0, got {} s", options.shard_overhead.s()));
  }
  if (options.background) {
    BURST_ASSERT(options.background->graph != nullptr, "a background job without a model");
    if (options.background->per_device_batch < 1) {
      throw UserError(fmt::format("the background job's per-device batch must be at least 1, got {}",
                                  options.background->per_device_batch));
    }
  }
}

// The background job's kernels: its forward in graph order, then its backward in reverse,
// then its update (one kernel, layer -1).
detail::BackgroundKernels background_kernels(const BackgroundJob& job, const cost::CostModel& cost) {
  const graph::Graph& graph = *job.graph;
  const auto layer_count = static_cast<graph::LayerId>(graph.size());
  std::vector<cost::LayerTime> times;
  for (graph::LayerId id = 0; id < layer_count; ++id) {
    times.push_back(cost.require(graph, id, job.per_device_batch).time);
  }
  detail::BackgroundKernels kernels;
  for (graph::LayerId id = 0; id < layer_count; ++id) {
    kernels.duration_s.push_back(times[static_cast<size_t>(id)].forward.s());
    kernels.layer.push_back(id);
  }
  for (graph::LayerId id = layer_count - 1; id >= 0; --id) {
    kernels.duration_s.push_back(times[static_cast<size_t>(id)].backward.s());
    kernels.layer.push_back(id);
  }
  Seconds update(0);
  for (graph::LayerId id = 0; id < layer_count; ++id) update += cost.update_or_zero(graph, id);
  if (update.s() > 0) {
    kernels.duration_s.push_back(update.s());
    kernels.layer.push_back(-1);
  }
  double total = 0;
  for (const double duration : kernels.duration_s) total += duration;
  if (!(total > 0)) {
    throw UserError(fmt::format("background model '{}' takes no time at batch {} by the cost model",
                                graph.name(), job.per_device_batch));
  }
  return kernels;
}

double overlap(double start, double end, double window_start, double window_end) {
  return std::max(0.0, std::min(end, window_end) - std::max(start, window_start));
}

// Length of the union of `intervals` clipped to the window.
double union_length(std::vector<Interval>& intervals, double window_start, double window_end) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.start_s < b.start_s; });
  double total = 0, covered_to = window_start;
  for (const Interval& interval : intervals) {
    const double start = std::max(interval.start_s, covered_to);
    const double end = std::min(interval.end_s, window_end);
    if (end > start) {
      total += end - start;
      covered_to = end;
    }
  }
  return total;
}

// Gaps in `busy` (sorted by start) within [from, to), relative to `from`.
std::vector<Interval> gaps(const std::vector<Interval>& busy, double from, double to) {
  std::vector<Interval> result;
  double cursor = from;
  for (const Interval& interval : busy) {
    if (interval.end_s <= from || interval.start_s >= to) continue;
    if (interval.start_s > cursor) result.push_back({cursor - from, interval.start_s - from});
    cursor = std::max(cursor, interval.end_s);
  }
  if (to > cursor) result.push_back({cursor - from, to - from});
  return result;
}

// One simulation of `step` (the plan's tasks, built once) with `kernels` (null: no
// background job), and every figure of SimResult from its timeline.
SimResult run_steps(const detail::StepTasks& step, const plan::Plan& plan, const plan::PlanContext& context,
                    const SimOptions& options, const detail::BackgroundKernels* kernels) {
  const int devices = context.network.cluster().size();
  const detail::LoopResult loop =
      detail::run_event_loop(step, devices, options.iterations, kernels, options.collectives_hold_ports);

  SimResult result;
  result.devices = devices;
  result.global_batch = plan.global_batch;
  result.measured_iterations = options.iterations - options.warmup_iterations;
  result.step_end_s = loop.step_end_s;
  const double window_start =
      options.warmup_iterations > 0 ? loop.step_end_s[static_cast<size_t>(options.warmup_iterations - 1)] : 0.0;
  const double window_end = loop.step_end_s.back();
  const double window = window_end - window_start;
  const double steps = result.measured_iterations;
  result.iteration_time = Seconds(window / steps);
  const double first_step_end = loop.step_end_s[static_cast<size_t>(options.warmup_iterations)];

  // Per rank: foreground compute, port-busy intervals, compute intervals of the first measured step.
  const auto task_count = static_cast<int64_t>(step.tasks.size());
  std::vector<double> foreground(static_cast<size_t>(devices), 0.0);
  std::vector<std::vector<Interval>> ports(static_cast<size_t>(devices));
  std::vector<std::vector<Interval>> busy(static_cast<size_t>(devices));  // first measured step
  for (int s = options.warmup_iterations; s < options.iterations; ++s) {
    for (int64_t t = 0; t < task_count; ++t) {
      const detail::Task& task = step.tasks[static_cast<size_t>(t)];
      const auto instance = static_cast<size_t>(s * task_count + t);
      const Interval interval{loop.start_s[instance], loop.end_s[instance]};
      switch (task.kind) {
        case detail::TaskKind::Compute:
          foreground[static_cast<size_t>(task.rank)] += task.duration_s;
          if (s == options.warmup_iterations) busy[static_cast<size_t>(task.rank)].push_back(interval);
          break;
        case detail::TaskKind::Message:
          ports[static_cast<size_t>(task.rank)].push_back(interval);
          ports[static_cast<size_t>(task.peer)].push_back(interval);
          break;
        case detail::TaskKind::Collective:
          for (const int rank : step.groups[static_cast<size_t>(task.group)]) {
            ports[static_cast<size_t>(rank)].push_back(interval);
          }
          break;
        case detail::TaskKind::StepEnd:
          break;
      }
    }
  }

  double background_step = 0;
  if (kernels) {
    for (const double duration : kernels->duration_s) background_step += duration;
    result.background_step_alone = Seconds(background_step);
    result.background_alone_samples_per_s =
        static_cast<double>(options.background->per_device_batch) / background_step;
  }
  result.usage.resize(static_cast<size_t>(devices));
  double foreground_total = 0, background_total = 0;
  for (int rank = 0; rank < devices; ++rank) {
    const auto r = static_cast<size_t>(rank);
    DeviceUsage& usage = result.usage[r];
    double background = 0;
    if (kernels && loop.background_only[r]) {
      background = window;
      busy[r].push_back({window_start, first_step_end});
    } else {
      for (const detail::KernelRun& run : loop.background[r]) {
        background += overlap(run.start_s, run.end_s, window_start, window_end);
        if (run.end_s > window_start && run.start_s < first_step_end) busy[r].push_back({run.start_s, run.end_s});
      }
    }
    usage.foreground = Seconds(foreground[r]);
    usage.background = Seconds(background);
    usage.communication = Seconds(union_length(ports[r], window_start, window_end));
    usage.idle = Seconds(std::max(0.0, window - foreground[r] - background));
    if (options.record_idle_intervals) {
      std::sort(busy[r].begin(), busy[r].end(), [](const Interval& a, const Interval& b) { return a.start_s < b.start_s; });
      usage.idle_intervals = gaps(busy[r], window_start, first_step_end);
    }
    foreground_total += foreground[r];
    background_total += background;
  }

  result.foreground_compute = Seconds(foreground_total / steps);
  result.background_compute = Seconds(background_total / steps);
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(context.graph.size()); ++id) {
    result.one_device_compute += context.cost.require(context.graph, id, plan.global_batch).time.total() +
                                 context.cost.update_or_zero(context.graph, id);
  }
  const double iteration = result.iteration_time.s();
  const double capacity = devices * iteration;
  result.foreground_samples_per_s = iteration > 0 ? static_cast<double>(plan.global_batch) / iteration : 0;
  if (kernels && window > 0) {
    result.background_samples_per_s = background_total / background_step *
                                      static_cast<double>(options.background->per_device_batch) / window;
  }
  result.cluster_throughput = result.foreground_samples_per_s + result.background_samples_per_s;
  if (capacity > 0) {
    result.useful_fraction = (result.one_device_compute.s() + result.background_compute.s()) / capacity;
    result.busy_fraction = (result.foreground_compute.s() + result.background_compute.s()) / capacity;
  }

  if (options.record_events) {
    for (int s = 0; s < options.iterations; ++s) {
      for (int64_t t = 0; t < task_count; ++t) {
        const detail::Task& task = step.tasks[static_cast<size_t>(t)];
        if (task.kind == detail::TaskKind::StepEnd) continue;
        const auto instance = static_cast<size_t>(s * task_count + t);
        SimEvent event{loop.start_s[instance], loop.end_s[instance], event_kind(task.work), task.rank, task.peer,
                       task.layer, s, task.bytes};
        if (task.kind != detail::TaskKind::Collective) {
          result.events.push_back(event);
          continue;
        }
        const std::vector<int>& group = step.groups[static_cast<size_t>(task.group)];
        event.peer = static_cast<int>(group.size());
        for (const int rank : group) {
          event.rank = rank;
          result.events.push_back(event);
        }
      }
    }
    for (int rank = 0; rank < devices; ++rank) {
      for (const detail::KernelRun& run : loop.background[static_cast<size_t>(rank)]) {
        result.events.push_back(SimEvent{run.start_s, run.end_s, EventKind::Background, rank, -1,
                                         kernels->layer[static_cast<size_t>(run.kernel)], 0, 0});
      }
    }
    std::stable_sort(result.events.begin(), result.events.end(),
                     [](const SimEvent& a, const SimEvent& b) { return a.start_s < b.start_s; });
  }
  return result;
}

// The foreground's idle gaps per rank in the first measured step of `alone` (run with
// record_idle_intervals): where BackgroundPolicy::FitIdleGaps lets kernels start.
std::vector<std::vector<Interval>> idle_gaps(const SimResult& alone) {
  std::vector<std::vector<Interval>> gaps;
  for (const DeviceUsage& usage : alone.usage) gaps.push_back(usage.idle_intervals);
  return gaps;
}

}  // namespace

SimResult simulate(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options) {
  check_options(options);
  const detail::StepTasks step = step_tasks(plan, context, options);
  if (!options.background) return run_steps(step, plan, context, options, nullptr);
  detail::BackgroundKernels kernels = background_kernels(*options.background, context.cost);
  if (options.background->policy == BackgroundPolicy::FitIdleGaps) {
    SimOptions alone = options;
    alone.background.reset();
    alone.iterations = 1;
    alone.warmup_iterations = 0;
    alone.record_events = false;
    alone.record_idle_intervals = true;
    kernels.fit_in = idle_gaps(run_steps(step, plan, context, alone, nullptr));
  }
  return run_steps(step, plan, context, options, &kernels);
}

MultiplexResult simulate_multiplexed(const plan::Plan& plan, const plan::PlanContext& context,
                                     const SimOptions& alone_options, const BackgroundJob& job) {
  MultiplexResult result;
  SimOptions alone = alone_options;
  alone.background.reset();
  SimOptions with = alone;
  with.background = job;
  if (with.iterations == 1) {  // a step's end carries over only with a background job
    with.iterations = options_with_background(job).iterations;
    with.warmup_iterations = options_with_background(job).warmup_iterations;
  }
  check_options(alone);
  check_options(with);
  // One task graph and one run of the foreground alone serve both simulations (the alone
  // run's idle gaps are the ones FitIdleGaps fits kernels into).
  const detail::StepTasks step = step_tasks(plan, context, alone);
  const bool fit = job.policy == BackgroundPolicy::FitIdleGaps;
  SimOptions alone_run = alone;
  alone_run.record_idle_intervals = alone.record_idle_intervals || fit;
  result.alone = run_steps(step, plan, context, alone_run, nullptr);
  detail::BackgroundKernels kernels = background_kernels(job, context.cost);
  if (fit) kernels.fit_in = idle_gaps(result.alone);
  if (!alone.record_idle_intervals) {
    for (DeviceUsage& usage : result.alone.usage) usage.idle_intervals.clear();
  }
  result.with_background = run_steps(step, plan, context, with, &kernels);
  const double alone_time = result.alone.iteration_time.s();
  result.foreground_slowdown = alone_time > 0 ? result.with_background.iteration_time.s() / alone_time : 1.0;
  // Device-seconds idle per second of the foreground alone.
  double idle = 0;
  for (const DeviceUsage& usage : result.alone.usage) idle += usage.idle.s();
  const double idle_per_second = alone_time > 0 ? idle / (alone_time * result.alone.measured_iterations) : 0;
  const double possible = idle_per_second * result.with_background.background_alone_samples_per_s;
  result.idle_time_efficiency = possible > 0 ? result.with_background.background_samples_per_s / possible : 0;
  return result;
}

}  // namespace burst::sim
