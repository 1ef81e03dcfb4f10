#include "burst/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "burst/timing/step_tasks.h"
#include "burst/timing/task_timer.h"
#include "burst/util/error.h"

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
EventKind event_kind(timing::TaskWork work) {
  switch (work) {
    case timing::TaskWork::Forward:
    case timing::TaskWork::Recompute: return EventKind::Forward;
    case timing::TaskWork::Backward: return EventKind::Backward;
    case timing::TaskWork::Update: return EventKind::Update;
    case timing::TaskWork::Message: return EventKind::Message;
    case timing::TaskWork::Allreduce:
    case timing::TaskWork::ReduceScatter:
    case timing::TaskWork::AllGather:
    case timing::TaskWork::GradNorm: return EventKind::Allreduce;
    case timing::TaskWork::BatchNormSync: return EventKind::BatchNormSync;
    case timing::TaskWork::TensorAllReduce:
    case timing::TaskWork::TensorReduceScatter:
    case timing::TaskWork::TensorAllGather: return EventKind::TensorAllReduce;  // the tensor group's collectives
    case timing::TaskWork::ContextRing:  // and the context group's ring, and the expert group's all-to-alls
    case timing::TaskWork::ExpertDispatch:
    case timing::TaskWork::ExpertCombine: return EventKind::TensorAllReduce;
    case timing::TaskWork::StepEnd: break;
  }
  BURST_ASSERT(false, "a step's end has no event");
  return EventKind::Forward;
}

// The step program's tasks (built with the options' program, lowered by lib/timing: the
// schedule the evaluator times too).
timing::StepTasks step_tasks(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options) {
  timing::TimingOptions timing;
  timing.program = options.program;
  timing.shard_overhead = options.shard_overhead;
  timing.co_located_cost = options.co_located_cost;
  return timing::plan_step_tasks(plan, context, timing);
}

// (The program's options are checked where the program is built.)
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

// A background job as kernels: their durations in execution order, repeated forever, and
// the layer each one belongs to (-1: the update).
struct BackgroundKernels {
  std::vector<double> duration_s;
  std::vector<int32_t> layer;
  std::vector<double> power_w;  // above the device's idle power (0 without a power model)
  double step_s = 0;  // one step: the sum of the kernels
  double step_above_idle_j = 0;  // one step: the kernels' energy above idle
};

// The job's kernels: the compute tasks of its own step program, that of a one-rank
// data-parallel plan at its per-device batch, built and lowered as the foreground's (a
// layer's forward, a layer's backward and the update each run as one kernel).
BackgroundKernels background_kernels(const BackgroundJob& job, const plan::PlanContext& context,
                                     const program::ProgramOptions& program) {
  const graph::Graph& graph = *job.graph;
  const plan::Plan one_rank = plan::plan_data_parallel(graph, 1, job.per_device_batch);
  timing::TimingOptions timing;
  timing.program = program;  // no shard overhead: it times the foreground's runtime
  const plan::PlanContext one_rank_context{graph, context.cost, context.network, {}, context.kind_power};
  const timing::StepTasks step = timing::plan_step_tasks(one_rank, one_rank_context, timing);
  BackgroundKernels kernels;
  for (const timing::Task& task : step.tasks) {  // one rank's tasks lie in its program order
    if (task.kind != timing::TaskKind::Compute) continue;
    kernels.duration_s.push_back(task.duration_s);
    kernels.layer.push_back(task.layer);
    kernels.power_w.push_back(timing::task_power_above_idle(task, 0, one_rank_context));
    kernels.step_s += task.duration_s;
    kernels.step_above_idle_j += kernels.power_w.back() * task.duration_s;
  }
  if (!(kernels.step_s > 0)) {
    throw UserError(fmt::format("background model '{}' takes no time at batch {} by the cost model",
                                graph.name(), job.per_device_batch));
  }
  return kernels;
}

struct KernelRun {
  double start_s = 0;
  double end_s = 0;
  int32_t kernel = 0;  // index into BackgroundKernels
};

// Whether [offset, offset + duration) lies within one of `gaps` (a little slack for rounding).
bool fits(const std::vector<Interval>& gaps, double offset, double duration) {
  constexpr double kSlack = 1e-12;
  for (const Interval& gap : gaps) {
    if (gap.start_s <= offset + kSlack && offset + duration <= gap.end_s + kSlack) return true;
    if (gap.start_s > offset) break;
  }
  return false;
}

// The background job on the task timer's idle-work hook: each idle device runs its copy's
// next kernel, where (BackgroundPolicy::FitIdleGaps) it fits in the foreground's gaps.
class BackgroundFiller final : public timing::IdleWork {
 public:
  BackgroundFiller(const BackgroundKernels& kernels, std::vector<std::vector<Interval>> fit_in, int devices)
      : kernels_(kernels), fit_in_(std::move(fit_in)), next_(static_cast<size_t>(devices), 0),
        runs_(static_cast<size_t>(devices)) {}

  std::optional<double> start_idle_work(int rank, double now, double step_start) override {
    size_t& next = next_[static_cast<size_t>(rank)];
    const double duration = kernels_.duration_s[next];
    if (!fit_in_.empty() && !fits(fit_in_[static_cast<size_t>(rank)], now - step_start, duration)) return std::nullopt;
    runs_[static_cast<size_t>(rank)].push_back(KernelRun{now, now + duration, static_cast<int32_t>(next)});
    next = (next + 1) % kernels_.duration_s.size();
    return duration;
  }
  // Per rank, the kernels it ran.
  const std::vector<std::vector<KernelRun>>& runs() const { return runs_; }

 private:
  const BackgroundKernels& kernels_;
  std::vector<std::vector<Interval>> fit_in_;  // per rank, sorted; empty: any idle moment
  std::vector<size_t> next_;
  std::vector<std::vector<KernelRun>> runs_;
};

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

// The measured steps: [start, end) and the first measured step's end.
struct Window {
  double start = 0, end = 0, first_step_end = 0;
  double length() const { return end - start; }
};

Window measured_window(const timing::TaskTimes& times, const SimOptions& options) {
  Window window;
  const auto warmup = static_cast<size_t>(options.warmup_iterations);
  window.start = warmup > 0 ? times.step_end_s[warmup - 1] : 0.0;
  window.end = times.step_end_s.back();
  window.first_step_end = times.step_end_s[warmup];
  return window;
}

// What the foreground's tasks hold per rank over the measured steps.
struct ForegroundUse {
  std::vector<double> compute;                // seconds
  std::vector<std::vector<Interval>> ports;   // send or receive port (or collective) busy
  std::vector<std::vector<Interval>> busy;    // compute, first measured step only
};

ForegroundUse foreground_use(const timing::StepTasks& step, const timing::TaskTimes& times, const SimOptions& options,
                             int devices) {
  ForegroundUse use{std::vector<double>(static_cast<size_t>(devices), 0.0),
                    std::vector<std::vector<Interval>>(static_cast<size_t>(devices)),
                    std::vector<std::vector<Interval>>(static_cast<size_t>(devices))};
  const auto task_count = static_cast<int64_t>(step.tasks.size());
  for (int s = options.warmup_iterations; s < options.iterations; ++s) {
    for (int64_t t = 0; t < task_count; ++t) {
      const timing::Task& task = step.tasks[static_cast<size_t>(t)];
      const double start = times.start_s[static_cast<size_t>(s * task_count + t)];
      const Interval interval{start, start + task.duration_s};
      if (task.kind == timing::TaskKind::Compute) {
        use.compute[static_cast<size_t>(task.rank)] += task.duration_s;
        if (s == options.warmup_iterations) use.busy[static_cast<size_t>(task.rank)].push_back(interval);
      } else if (task.kind == timing::TaskKind::Message) {
        use.ports[static_cast<size_t>(task.rank)].push_back(interval);
        use.ports[static_cast<size_t>(task.peer)].push_back(interval);
      } else if (task.kind == timing::TaskKind::Collective) {
        for (const int rank : step.groups[static_cast<size_t>(task.group)]) {
          use.ports[static_cast<size_t>(rank)].push_back(interval);
        }
      }
    }
  }
  return use;
}

// Background seconds of `rank` in the window; its kernels' intervals in the first measured
// step join `busy`. A rank without foreground compute runs the job all the time.
double background_time(const timing::StepTasks& step, const BackgroundFiller* filler, int rank, const Window& window,
                       std::vector<Interval>& busy) {
  if (filler == nullptr) return 0;
  if (step.first_compute[static_cast<size_t>(rank)] < 0) {
    busy.push_back({window.start, window.first_step_end});
    return window.length();
  }
  double background = 0;
  for (const KernelRun& run : filler->runs()[static_cast<size_t>(rank)]) {
    background += overlap(run.start_s, run.end_s, window.start, window.end);
    if (run.end_s > window.start && run.start_s < window.first_step_end) busy.push_back({run.start_s, run.end_s});
  }
  return background;
}

// Each device's usage; returns (foreground, background) seconds summed over the devices.
std::pair<double, double> fill_usage(const timing::StepTasks& step, ForegroundUse& use, const BackgroundFiller* filler,
                                     const Window& window, const SimOptions& options, SimResult& result) {
  double foreground_total = 0, background_total = 0;
  result.usage.resize(static_cast<size_t>(result.devices));
  for (int rank = 0; rank < result.devices; ++rank) {
    const auto r = static_cast<size_t>(rank);
    DeviceUsage& usage = result.usage[r];
    const double background = background_time(step, filler, rank, window, use.busy[r]);
    usage.foreground = Seconds(use.compute[r]);
    usage.background = Seconds(background);
    usage.communication = Seconds(union_length(use.ports[r], window.start, window.end));
    usage.idle = Seconds(std::max(0.0, window.length() - use.compute[r] - background));
    if (options.record_idle_intervals) {
      std::sort(use.busy[r].begin(), use.busy[r].end(),
                [](const Interval& a, const Interval& b) { return a.start_s < b.start_s; });
      usage.idle_intervals = gaps(use.busy[r], window.start, window.first_step_end);
    }
    foreground_total += use.compute[r];
    background_total += background;
  }
  return {foreground_total, background_total};
}

// Throughputs and fractions from the totals (seconds summed over the devices).
void fill_rates(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options,
                const BackgroundKernels* kernels, double foreground_total, double background_total,
                const Window& window, SimResult& result) {
  const double steps = result.measured_iterations;
  result.foreground_compute = Seconds(foreground_total / steps);
  result.background_compute = Seconds(background_total / steps);
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(context.graph.size()); ++id) {
    result.one_device_compute += context.cost.require(context.graph, id, plan.global_batch).time.total() +
                                 context.cost.update_or_zero(context.graph, id);
  }
  const double iteration = result.iteration_time.s();
  const double capacity = result.devices * iteration;
  result.foreground_samples_per_s = iteration > 0 ? static_cast<double>(plan.global_batch) / iteration : 0;
  if (kernels) {
    const auto batch = static_cast<double>(options.background->per_device_batch);
    result.background_step_alone = Seconds(kernels->step_s);
    result.background_alone_samples_per_s = batch / kernels->step_s;
    if (window.length() > 0) result.background_samples_per_s = background_total / kernels->step_s * batch / window.length();
  }
  result.cluster_throughput = result.foreground_samples_per_s + result.background_samples_per_s;
  if (capacity > 0) {
    result.useful_fraction = (result.one_device_compute.s() + result.background_compute.s()) / capacity;
    result.busy_fraction = (result.foreground_compute.s() + result.background_compute.s()) / capacity;
  }
}

// Every timed task of every step as events (a collective once per member), then the
// background kernels; sorted by start.
void record_events(const timing::StepTasks& step, const timing::TaskTimes& times, const plan::PlanContext& context,
                   const SimOptions& options, const BackgroundKernels* kernels, const BackgroundFiller* filler,
                   SimResult& result) {
  const auto task_count = static_cast<int64_t>(step.tasks.size());
  for (int s = 0; s < options.iterations; ++s) {
    for (int64_t t = 0; t < task_count; ++t) {
      const timing::Task& task = step.tasks[static_cast<size_t>(t)];
      if (task.kind == timing::TaskKind::StepEnd) continue;
      const double start = times.start_s[static_cast<size_t>(s * task_count + t)];
      SimEvent event{start, start + task.duration_s, event_kind(task.work), task.rank, task.peer, task.layer, s, task.bytes};
      const int on = task.kind == timing::TaskKind::Collective ? step.groups[static_cast<size_t>(task.group)].front() : task.rank;
      event.power_w = timing::task_power_above_idle(task, on, context);
      if (task.kind != timing::TaskKind::Collective) {
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
  for (int rank = 0; filler != nullptr && rank < result.devices; ++rank) {
    for (const KernelRun& run : filler->runs()[static_cast<size_t>(rank)]) {
      result.events.push_back(SimEvent{run.start_s, run.end_s, EventKind::Background, rank, -1,
                                       kernels->layer[static_cast<size_t>(run.kernel)], 0, 0,
                                       kernels->power_w[static_cast<size_t>(run.kernel)]});
    }
  }
  std::stable_sort(result.events.begin(), result.events.end(),
                   [](const SimEvent& a, const SimEvent& b) { return a.start_s < b.start_s; });
}

// Background energy of `rank` over the window: its kernels at their power (a rank without
// foreground compute runs the job all the time, at its mean power).
double background_energy_above_idle(const timing::StepTasks& step, const BackgroundKernels& kernels,
                                    const BackgroundFiller& filler, int rank, const Window& window) {
  if (step.first_compute[static_cast<size_t>(rank)] < 0) return kernels.step_above_idle_j / kernels.step_s * window.length();
  double energy = 0;
  for (const KernelRun& run : filler.runs()[static_cast<size_t>(rank)]) {
    energy += kernels.power_w[static_cast<size_t>(run.kernel)] * overlap(run.start_s, run.end_s, window.start, window.end);
  }
  return energy;
}

// One measured step's energy: the foreground's tasks over the mean step, and the background
// kernels, which draw their power where the device would have idled.
void fill_energy(const timing::StepTasks& step, const plan::PlanContext& context, const BackgroundKernels* kernels,
                 const BackgroundFiller* filler, const Window& window, SimResult& result) {
  if (!context.energy_known()) return;
  result.energy = timing::step_energy(step, result.iteration_time.s(), context);
  const double steps = result.measured_iterations;
  for (int rank = 0; rank < result.devices; ++rank) {
    const double idle_w = context.power_of(rank)->idle_w;
    result.idle_power_w.push_back(idle_w);
    if (kernels == nullptr || filler == nullptr) continue;
    timing::DeviceEnergy& device = result.energy.devices[static_cast<size_t>(rank)];
    const double background_s = result.usage[static_cast<size_t>(rank)].background.s() / steps;
    device.background_j = background_energy_above_idle(step, *kernels, *filler, rank, window) / steps + idle_w * background_s;
    device.idle_j = std::max(0.0, device.idle_j - idle_w * background_s);
  }
  result.energy.total_devices();
  const double foreground_j = result.energy.total_j - result.energy.background_j;
  if (foreground_j > 0) result.foreground_samples_per_joule = static_cast<double>(result.global_batch) / foreground_j;
  if (result.energy.background_j > 0) {
    result.background_samples_per_joule = result.background_samples_per_s * result.iteration_time.s() / result.energy.background_j;
  }
}

// One simulation of `step` (the plan's tasks, built once) on the task timer, with the
// background job's `kernels` fitted into `fit_in` (null: no background job), and every
// figure of SimResult from its timeline.
SimResult run_steps(const timing::StepTasks& step, const plan::Plan& plan, const plan::PlanContext& context,
                    const SimOptions& options, const BackgroundKernels* kernels,
                    std::vector<std::vector<Interval>> fit_in = {}) {
  SimResult result;
  result.devices = context.network.cluster().size();
  result.global_batch = plan.global_batch;
  result.measured_iterations = options.iterations - options.warmup_iterations;
  std::optional<BackgroundFiller> filler;
  if (kernels) filler.emplace(*kernels, std::move(fit_in), result.devices);
  timing::TimerOptions timer;
  timer.steps = options.iterations;
  timer.collectives_hold_ports = options.collectives_hold_ports;
  timer.idle_work = filler ? &*filler : nullptr;
  const timing::TaskTimes times = timing::time_tasks(step, timer);

  result.step_end_s = times.step_end_s;
  const Window window = measured_window(times, options);
  result.iteration_time = Seconds(window.length() / result.measured_iterations);
  ForegroundUse use = foreground_use(step, times, options, result.devices);
  const BackgroundFiller* ran = filler ? &*filler : nullptr;
  const auto [foreground_total, background_total] = fill_usage(step, use, ran, window, options, result);
  fill_rates(plan, context, options, kernels, foreground_total, background_total, window, result);
  fill_energy(step, context, kernels, ran, window, result);
  if (options.record_events) record_events(step, times, context, options, kernels, ran, result);
  return result;
}

// The foreground's idle gaps per rank in the first measured step of `alone` (run with
// record_idle_intervals): where BackgroundPolicy::FitIdleGaps lets kernels start.
std::vector<std::vector<Interval>> idle_gaps(const SimResult& alone) {
  std::vector<std::vector<Interval>> gaps;
  for (const DeviceUsage& usage : alone.usage) gaps.push_back(usage.idle_intervals);
  return gaps;
}

// Samples per joule of the whole cluster, alone and with the background job.
void fill_cluster_energy(MultiplexResult& result, const BackgroundKernels& kernels) {
  const SimResult& alone = result.alone;
  const SimResult& with = result.with_background;
  if (!alone.energy.known || !with.energy.known || !(alone.energy.total_j > 0) || !(with.energy.total_j > 0)) return;
  result.samples_per_joule_alone = static_cast<double>(alone.global_batch) / alone.energy.total_j;
  const double background_samples = with.background_samples_per_s * with.iteration_time.s();  // per step
  result.samples_per_joule_with = (static_cast<double>(with.global_batch) + background_samples) / with.energy.total_j;
  const double extra_j = with.energy.total_j - alone.energy.total_j;
  if (background_samples > 0) result.background_joules_per_sample = extra_j / background_samples;
  const double idle_w = alone.idle_power_w.empty() ? 0 : alone.idle_power_w.front();
  result.background_alone_joules_per_sample =
      (kernels.step_above_idle_j + idle_w * kernels.step_s) / static_cast<double>(with.background_alone_samples_per_s * kernels.step_s);
}

}  // namespace

SimResult simulate(const plan::Plan& plan, const plan::PlanContext& context, const SimOptions& options) {
  check_options(options);
  const timing::StepTasks step = step_tasks(plan, context, options);
  if (!options.background) return run_steps(step, plan, context, options, nullptr);
  const BackgroundKernels kernels = background_kernels(*options.background, context, options.program);
  std::vector<std::vector<Interval>> fit_in;
  if (options.background->policy == BackgroundPolicy::FitIdleGaps) {
    SimOptions alone = options;
    alone.background.reset();
    alone.iterations = 1;
    alone.warmup_iterations = 0;
    alone.record_events = false;
    alone.record_idle_intervals = true;
    fit_in = idle_gaps(run_steps(step, plan, context, alone, nullptr));
  }
  return run_steps(step, plan, context, options, &kernels, std::move(fit_in));
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
  const timing::StepTasks step = step_tasks(plan, context, alone);
  const bool fit = job.policy == BackgroundPolicy::FitIdleGaps;
  SimOptions alone_run = alone;
  alone_run.record_idle_intervals = alone.record_idle_intervals || fit;
  result.alone = run_steps(step, plan, context, alone_run, nullptr);
  const BackgroundKernels kernels = background_kernels(job, context, alone.program);
  std::vector<std::vector<Interval>> fit_in;
  if (fit) fit_in = idle_gaps(result.alone);
  if (!alone.record_idle_intervals) {
    for (DeviceUsage& usage : result.alone.usage) usage.idle_intervals.clear();
  }
  result.with_background = run_steps(step, plan, context, with, &kernels, std::move(fit_in));
  const double alone_time = result.alone.iteration_time.s();
  result.foreground_slowdown = alone_time > 0 ? result.with_background.iteration_time.s() / alone_time : 1.0;
  // Device-seconds idle per second of the foreground alone.
  double idle = 0;
  for (const DeviceUsage& usage : result.alone.usage) idle += usage.idle.s();
  const double idle_per_second = alone_time > 0 ? idle / (alone_time * result.alone.measured_iterations) : 0;
  const double possible = idle_per_second * result.with_background.background_alone_samples_per_s;
  result.idle_time_efficiency = possible > 0 ? result.with_background.background_samples_per_s / possible : 0;
  fill_cluster_energy(result, kernels);
  return result;
}

}  // namespace burst::sim
