#pragma once
// The one task timer: when each task of a step (step_tasks.h) starts, over `steps` copies
// of the step run back to back. The evaluator (evaluate.h) times a plan's step with it, and
// the simulator (lib/sim) times the same tasks with it, adding what the evaluator leaves out
// on top: idle-time work on the devices (a background job, through IdleWork) and
// collectives that hold the message ports (contention). Without those, the two call the
// same code on the same tasks, so they agree by construction (docs/architecture.md,
// invariant 5).
//
// Resources: each rank's compute (one task at a time), each device's send and receive
// ports (MessagePorts), and each rank's collective channel (its collectives one at a time,
// in program order). A task is ready when its last dependency ends and starts then, or
// when its resources are free, each resource serving tasks in the order they became ready
// (step_tasks.h's order rule). Every rank's first compute of step s + 1 waits for step s's
// end. Events at one time are handled in a fixed order (ends before idle devices, then
// creation order): the same inputs give the same times.
#include <cstdint>
#include <optional>
#include <vector>

#include "burst/timing/step_tasks.h"

namespace burst::timing {

// Work a device takes up whenever it has no foreground compute (the simulator's background
// job): the timer asks whenever a device with foreground work becomes idle.
class IdleWork {
 public:
  virtual ~IdleWork() = default;
  // Device `rank` has no compute at `now` (seconds; `step_start`: when the current step
  // began). Returns how long the work it starts now holds the device (it is asked again
  // then), or nullopt to leave it idle until its next foreground compute ends.
  virtual std::optional<double> start_idle_work(int rank, double now, double step_start) = 0;
};

struct TimerOptions {
  int steps = 1;
  // Collectives also hold every member's message ports (the pessimistic bound where a
  // message waits for a whole all-reduce; only the simulator asks for it).
  bool collectives_hold_ports = false;
  IdleWork* idle_work = nullptr;  // not owned; null: none
};

struct TaskTimes {
  // Per task instance (step x tasks + task): when it started, seconds; it ends
  // task.duration_s later.
  std::vector<double> start_s;
  std::vector<double> step_end_s;  // per step
};

// Times `steps` copies of `step` on its cluster's ranks (StepTasks::first_compute's size).
TaskTimes time_tasks(const StepTasks& step, const TimerOptions& options = {});

}  // namespace burst::timing
