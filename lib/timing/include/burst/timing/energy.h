#pragma once
// The energy of one step, from its tasks (step_tasks.h) and its length (docs/energy.md):
// every device draws its idle power for the whole step, and on top of it
//  - while it computes: its compute power (cost::compute_power_w at the task's
//    compute-bound share and clock) less idle;
//  - while it sends or receives a message, or takes part in a collective: its
//    communication power less idle (added even where it overlaps compute: NCCL's kernels
//    and the links draw beside the compute kernels).
// A representative's tasks stand for every rank of its class; a device without work draws
// idle power only. The evaluator and the simulator call this on the same tasks, so they
// agree on energy as they agree on time. No libtorch.
#include <vector>

#include "burst/plan/plan_context.h"
#include "burst/timing/step_tasks.h"

namespace burst::timing {

struct DeviceEnergy {
  double compute_j = 0;        // its compute tasks at their power
  double communication_j = 0;  // its messages and collectives, above idle
  double idle_j = 0;           // idle power over the step outside its compute
  double background_j = 0;     // the simulator's background kernels at their power
  double busy_s = 0;           // its compute time
  double total_j() const { return compute_j + communication_j + idle_j + background_j; }
};

struct StepEnergy {
  bool known = false;                 // every device kind has a power model
  std::vector<DeviceEnergy> devices;  // by cluster rank (empty when not known)
  double total_j = 0;
  double compute_j = 0, communication_j = 0, idle_j = 0, background_j = 0;  // summed over devices
  // Sums the devices' parts into the totals.
  void total_devices();
};

// The energy of one step of `step` lasting `step_time_s` on the context's cluster.
StepEnergy step_energy(const StepTasks& step, double step_time_s, const plan::PlanContext& context);

// The power of one task on `rank` above its kind's idle power, watts: what a power trace
// adds while the task runs (0 where the rank's kind has no power model, and for StepEnd).
double task_power_above_idle(const Task& task, int rank, const plan::PlanContext& context);

}  // namespace burst::timing
