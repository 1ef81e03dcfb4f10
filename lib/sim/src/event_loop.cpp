#include "event_loop.h"

#include <algorithm>
#include <queue>

#include "burst/util/error.h"

namespace burst::sim::detail {
namespace {

// Events at one time are handled in phase order: finished tasks (and the tasks they make
// ready) first, then idle devices pick background kernels, so the foreground always gets a
// device that frees up at the moment it becomes ready. Within a phase, in creation order.
enum class Phase : uint8_t { TaskDone = 0, DeviceIdle = 1 };

struct Event {
  double time_s;
  Phase phase;
  uint64_t sequence;
  int64_t index;  // TaskDone: task instance; DeviceIdle: rank

  bool operator>(const Event& other) const {
    if (time_s != other.time_s) return time_s > other.time_s;
    if (phase != other.phase) return phase > other.phase;
    return sequence > other.sequence;
  }
};

class EventLoop {
 public:
  EventLoop(const StepTasks& step, int devices, int steps, const BackgroundKernels* background,
            bool collectives_hold_ports)
      : step_(step),
        collectives_hold_ports_(collectives_hold_ports),
        devices_(devices),
        steps_(steps),
        background_(background),
        task_count_(static_cast<int64_t>(step.tasks.size())),
        pending_(static_cast<size_t>(task_count_ * steps)),
        compute_free_(static_cast<size_t>(devices), 0.0),
        ports_(devices),
        collective_free_(static_cast<size_t>(devices), 0.0),
        next_kernel_(static_cast<size_t>(devices), 0) {
    result_.start_s.assign(pending_.size(), 0.0);
    result_.end_s.assign(pending_.size(), 0.0);
    result_.step_end_s.assign(static_cast<size_t>(steps), 0.0);
    result_.background.resize(static_cast<size_t>(devices));
    result_.background_only.assign(static_cast<size_t>(devices), true);
    for (int rank = 0; rank < devices; ++rank) {
      if (step.first_compute[static_cast<size_t>(rank)] >= 0) result_.background_only[static_cast<size_t>(rank)] = false;
    }
    for (int s = 0; s < steps; ++s) {
      for (int64_t t = 0; t < task_count_; ++t) {
        pending_[static_cast<size_t>(s * task_count_ + t)] = step.dependency_count[static_cast<size_t>(t)];
      }
      if (s == 0) continue;
      for (const int32_t first : step.first_compute) {  // waits for the previous step's end
        if (first >= 0) ++pending_[static_cast<size_t>(s * task_count_ + first)];
      }
    }
  }

  LoopResult run() && {
    for (int64_t t = 0; t < task_count_; ++t) {
      if (pending_[static_cast<size_t>(t)] == 0) start(t, 0.0);
    }
    if (background_ != nullptr) {
      for (int rank = 0; rank < devices_; ++rank) {
        if (!result_.background_only[static_cast<size_t>(rank)]) push(0.0, Phase::DeviceIdle, rank);
      }
    }
    while (!queue_.empty()) {
      const Event event = queue_.top();
      queue_.pop();
      if (event.phase == Phase::TaskDone) {
        finish(event.index, event.time_s);
      } else {
        device_idle(static_cast<int>(event.index), event.time_s);
      }
    }
    BURST_ASSERT(finished_ == task_count_ * steps_, "the simulation ended with tasks that never ran (a cycle)");
    return std::move(result_);
  }

 private:
  void push(double time, Phase phase, int64_t index) { queue_.push(Event{time, phase, sequence_++, index}); }

  const Task& task_of(int64_t instance) const { return step_.tasks[static_cast<size_t>(instance % task_count_)]; }

  // A ready task takes its resources at the earliest moment they are all free (each resource
  // serves its tasks in the order they became ready: step_timing.h's order rule) and holds
  // them for its duration.
  void start(int64_t instance, double ready) {
    const Task& task = task_of(instance);
    double begin = ready;
    switch (task.kind) {
      case TaskKind::Compute:
        begin = std::max(begin, compute_free_[static_cast<size_t>(task.rank)]);
        compute_free_[static_cast<size_t>(task.rank)] = begin + task.duration_s;
        break;
      case TaskKind::Message:
        begin = ports_.claim(task, begin);
        break;
      case TaskKind::Collective: {
        const std::vector<int>& group = step_.groups[static_cast<size_t>(task.group)];
        for (const int rank : group) begin = std::max(begin, collective_free_[static_cast<size_t>(rank)]);
        if (collectives_hold_ports_) begin = ports_.claim_all(group, begin, task.duration_s);
        for (const int rank : group) collective_free_[static_cast<size_t>(rank)] = begin + task.duration_s;
        break;
      }
      case TaskKind::StepEnd:
        break;
    }
    result_.start_s[static_cast<size_t>(instance)] = begin;
    result_.end_s[static_cast<size_t>(instance)] = begin + task.duration_s;
    push(begin + task.duration_s, Phase::TaskDone, instance);
  }

  void finish(int64_t instance, double now) {
    ++finished_;
    const int64_t step = instance / task_count_;
    const auto local = static_cast<size_t>(instance % task_count_);
    const int64_t base = step * task_count_;
    for (int32_t k = step_.successor_begin[local]; k < step_.successor_begin[local + 1]; ++k) {
      release(base + step_.successors[static_cast<size_t>(k)], now);
    }
    const Task& task = step_.tasks[local];
    if (task.kind == TaskKind::StepEnd) {
      result_.step_end_s[static_cast<size_t>(step)] = now;
      step_start_ = now;
      if (step + 1 < steps_) {
        for (const int32_t first : step_.first_compute) {
          if (first >= 0) release(base + task_count_ + first, now);
        }
        if (background_ != nullptr) {  // a rank whose first shard must wait is idle now
          for (int rank = 0; rank < devices_; ++rank) {
            if (!result_.background_only[static_cast<size_t>(rank)]) push(now, Phase::DeviceIdle, rank);
          }
        }
      }
    }
    if (task.kind == TaskKind::Compute && background_ != nullptr) push(now, Phase::DeviceIdle, task.rank);
  }

  void release(int64_t instance, double now) {
    if (--pending_[static_cast<size_t>(instance)] == 0) start(instance, now);
  }

  // A device with no foreground compute to run takes the next background kernel, until the
  // last step has ended.
  void device_idle(int rank, double now) {
    if (finished_ == task_count_ * steps_) return;
    double& free = compute_free_[static_cast<size_t>(rank)];
    if (free > now) return;  // foreground work (or a kernel) already holds it
    size_t& next = next_kernel_[static_cast<size_t>(rank)];
    const double duration = background_->duration_s[next];
    if (!background_->fit_in.empty() && !fits(background_->fit_in[static_cast<size_t>(rank)], now - step_start_, duration)) {
      return;  // the device waits for its next foreground shard, which asks again when done
    }
    result_.background[static_cast<size_t>(rank)].push_back(KernelRun{now, now + duration, static_cast<int32_t>(next)});
    next = (next + 1) % background_->duration_s.size();
    free = now + duration;
    push(free, Phase::DeviceIdle, rank);
  }

  // Whether [offset, offset + duration) lies within one of `gaps` (a little slack for rounding).
  static bool fits(const std::vector<Interval>& gaps, double offset, double duration) {
    constexpr double kSlack = 1e-12;
    for (const Interval& gap : gaps) {
      if (gap.start_s <= offset + kSlack && offset + duration <= gap.end_s + kSlack) return true;
      if (gap.start_s > offset) break;
    }
    return false;
  }

  const StepTasks& step_;
  bool collectives_hold_ports_;
  double step_start_ = 0;  // when the current step began (the previous one's end)
  int devices_;
  int steps_;
  const BackgroundKernels* background_;
  int64_t task_count_;
  std::vector<int32_t> pending_;  // unmet dependencies per task instance
  std::vector<double> compute_free_;
  plan::MessagePorts ports_;  // step_timing.h: the port rule the evaluator uses too
  std::vector<double> collective_free_;  // each rank runs its collectives one at a time
  std::vector<size_t> next_kernel_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t sequence_ = 0;
  int64_t finished_ = 0;
  LoopResult result_;
};

}  // namespace

LoopResult run_event_loop(const StepTasks& step, int devices, int steps, const BackgroundKernels* background,
                          bool collectives_hold_ports) {
  BURST_ASSERT(steps >= 1, "the event loop needs at least one step");
  BURST_ASSERT(background == nullptr || !background->duration_s.empty(), "a background job without kernels");
  return EventLoop(step, devices, steps, background, collectives_hold_ports).run();
}

}  // namespace burst::sim::detail
