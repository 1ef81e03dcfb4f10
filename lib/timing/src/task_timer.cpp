#include "burst/timing/task_timer.h"

#include <algorithm>
#include <queue>

#include "burst/util/error.h"

namespace burst::timing {
namespace {

// One step where no task ever waits for a resource (no idle work, no message waits for a
// port, collectives on their own channels, each rank's computes and collectives chained by
// the lowering's dependencies): every task starts when its last dependency ends, a
// longest-path pass in a topological order (Kahn's). Ready tasks are taken in the order
// they became ready, which follows the lowering's layout (every rank's k-th op before any
// rank's next), so a step of millions of tasks is read about in memory order.
TaskTimes longest_paths(const StepTasks& step) {
  const size_t count = step.tasks.size();
  TaskTimes times;
  times.start_s.assign(count, 0.0);
  std::vector<double>& start = times.start_s;
  std::vector<int32_t> pending = step.dependency_count;
  std::vector<int32_t> order;
  order.reserve(count);
  for (size_t t = 0; t < count; ++t) {
    if (pending[t] == 0) order.push_back(static_cast<int32_t>(t));
  }
  for (size_t next = 0; next < order.size(); ++next) {
    const auto t = static_cast<size_t>(order[next]);
    const double end = start[t] + step.tasks[t].duration_s;
    for (int32_t k = step.successor_begin[t]; k < step.successor_begin[t + 1]; ++k) {
      const auto after = static_cast<size_t>(step.successors[static_cast<size_t>(k)]);
      start[after] = std::max(start[after], end);
      if (--pending[after] == 0) order.push_back(static_cast<int32_t>(after));
    }
  }
  BURST_ASSERT(order.size() == count, "the step's tasks have a cycle");
  const size_t step_end = static_cast<size_t>(step.step_end);
  times.step_end_s.push_back(start[step_end] + step.tasks[step_end].duration_s);
  return times;
}

// An event: a task instance ends, or a device is idle. At one time, ends come first (and
// the tasks they make ready), then idle devices pick idle work, so the foreground always
// gets a device that frees up at the moment it becomes ready; within each, creation order.
struct Event {
  static constexpr uint64_t kIdle = uint64_t{1} << 63;  // in `order`: after every end at its time

  double time_s;
  uint64_t order;  // kIdle or 0, plus the creation sequence
  int64_t index;   // an end: the task instance; idle: the rank

  bool idle() const { return (order & kIdle) != 0; }
  bool operator>(const Event& other) const {
    return time_s != other.time_s ? time_s > other.time_s : order > other.order;
  }
};

// The general case: a discrete-event run over the ranks' compute, ports and collective
// channels, with idle work between the foreground's computes.
class EventTimer {
 public:
  EventTimer(const StepTasks& step, const TimerOptions& options)
      : step_(step),
        options_(options),
        devices_(static_cast<int>(step.first_compute.size())),
        task_count_(static_cast<int64_t>(step.tasks.size())),
        pending_(static_cast<size_t>(task_count_ * options.steps)),
        compute_free_(static_cast<size_t>(devices_), 0.0),
        ports_(devices_),
        collective_free_(static_cast<size_t>(devices_), 0.0) {
    times_.start_s.assign(pending_.size(), 0.0);
    times_.step_end_s.assign(static_cast<size_t>(options.steps), 0.0);
    for (int s = 0; s < options.steps; ++s) {
      for (int64_t t = 0; t < task_count_; ++t) {
        pending_[static_cast<size_t>(s * task_count_ + t)] = step.dependency_count[static_cast<size_t>(t)];
      }
      if (s == 0) continue;
      for (const int32_t first : step.first_compute) {  // waits for the previous step's end
        if (first >= 0) ++pending_[static_cast<size_t>(s * task_count_ + first)];
      }
    }
  }

  TaskTimes run() && {
    for (int64_t t = 0; t < task_count_; ++t) {
      if (pending_[static_cast<size_t>(t)] == 0) start(t, 0.0);
    }
    offer_idle_work(0.0);
    while (!queue_.empty()) {
      const Event event = queue_.top();
      queue_.pop();
      if (event.idle()) {
        device_idle(static_cast<int>(event.index), event.time_s);
      } else {
        finish(event.index, event.time_s);
      }
    }
    BURST_ASSERT(finished_ == task_count_ * options_.steps, "the timed tasks never all ran (a cycle)");
    return std::move(times_);
  }

 private:
  void push(double time, bool idle, int64_t index) {
    queue_.push(Event{time, (idle ? Event::kIdle : 0) | sequence_++, index});
  }

  // Every device with foreground work is idle at `now` (a step starts): it may take idle work.
  void offer_idle_work(double now) {
    if (options_.idle_work == nullptr) return;
    for (int rank = 0; rank < devices_; ++rank) {
      if (step_.first_compute[static_cast<size_t>(rank)] >= 0) push(now, true, rank);
    }
  }

  // A ready task takes its resources at the earliest moment they are all free and holds them
  // for its duration.
  void start(int64_t instance, double ready) {
    const Task& task = step_.tasks[static_cast<size_t>(instance % task_count_)];
    double begin = ready;
    switch (task.kind) {
      case TaskKind::Compute: {
        double& free = compute_free_[static_cast<size_t>(task.rank)];
        begin = std::max(begin, free);
        free = begin + task.duration_s;
        break;
      }
      case TaskKind::Message:
        begin = ports_.claim(task, begin);
        break;
      case TaskKind::Collective:
        begin = start_collective(task, begin);
        break;
      case TaskKind::StepEnd:
        break;
    }
    times_.start_s[static_cast<size_t>(instance)] = begin;
    push(begin + task.duration_s, false, instance);
  }

  double start_collective(const Task& task, double ready) {
    const std::vector<int>& group = step_.groups[static_cast<size_t>(task.group)];
    double begin = ready;
    for (const int rank : group) begin = std::max(begin, collective_free_[static_cast<size_t>(rank)]);
    if (options_.collectives_hold_ports) begin = ports_.claim_all(group, begin, task.duration_s);
    for (const int rank : group) collective_free_[static_cast<size_t>(rank)] = begin + task.duration_s;
    return begin;
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
      times_.step_end_s[static_cast<size_t>(step)] = now;
      step_start_ = now;
      if (step + 1 < options_.steps) {
        for (const int32_t first : step_.first_compute) {
          if (first >= 0) release(base + task_count_ + first, now);
        }
        offer_idle_work(now);  // a rank whose first compute must wait is idle now
      }
    }
    if (task.kind == TaskKind::Compute && options_.idle_work != nullptr) push(now, true, task.rank);
  }

  void release(int64_t instance, double now) {
    if (--pending_[static_cast<size_t>(instance)] == 0) start(instance, now);
  }

  // A device with no compute running may take idle work, until the last step has ended.
  void device_idle(int rank, double now) {
    if (finished_ == task_count_ * options_.steps) return;
    double& free = compute_free_[static_cast<size_t>(rank)];
    if (free > now) return;  // foreground work (or idle work) already holds it
    const std::optional<double> duration = options_.idle_work->start_idle_work(rank, now, step_start_);
    if (!duration) return;  // it waits for its next foreground compute, which asks again when done
    free = now + *duration;
    push(free, true, rank);
  }

  const StepTasks& step_;
  const TimerOptions& options_;
  int devices_;
  int64_t task_count_;
  double step_start_ = 0;  // when the current step began (the previous one's end)
  std::vector<int32_t> pending_;  // unmet dependencies per task instance
  std::vector<double> compute_free_;
  MessagePorts ports_;
  std::vector<double> collective_free_;  // each rank runs its collectives one at a time
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t sequence_ = 0;
  int64_t finished_ = 0;
  TaskTimes times_;
};

}  // namespace

TaskTimes time_tasks(const StepTasks& step, const TimerOptions& options) {
  BURST_ASSERT(options.steps >= 1, "the task timer needs at least one step");
  const bool nothing_waits = options.steps == 1 && options.idle_work == nullptr && !options.collectives_hold_ports &&
                             !step.messages_may_wait;
  if (nothing_waits) return longest_paths(step);
  return EventTimer(step, options).run();
}

}  // namespace burst::timing
