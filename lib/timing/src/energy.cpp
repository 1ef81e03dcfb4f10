#include "burst/timing/energy.h"

#include <algorithm>

#include "burst/cost/power.h"
#include "burst/util/error.h"

namespace burst::timing {

namespace {

// A task's power above its device's idle power, on a device of model `power` (not null).
double power_above_idle(const Task& task, const cost::PowerSpec& power) {
  switch (task.kind) {
    case TaskKind::Compute: return cost::compute_power_w(power, task.compute_bound, task.clock) - power.idle_w;
    case TaskKind::Message:
    case TaskKind::Collective: return cost::communication_power_w(power) - power.idle_w;
    case TaskKind::StepEnd: return 0;
  }
  return 0;
}

}  // namespace

double task_power_above_idle(const Task& task, int rank, const plan::PlanContext& context) {
  const cost::PowerSpec* power = context.power_of(rank);
  return power == nullptr ? 0 : power_above_idle(task, *power);
}

StepEnergy step_energy(const StepTasks& step, double step_time_s, const plan::PlanContext& context) {
  StepEnergy energy;
  energy.known = context.energy_known();
  if (!energy.known) return energy;
  const int devices = context.network.cluster().size();
  std::vector<const cost::PowerSpec*> power(static_cast<size_t>(devices));  // per rank, looked up once
  for (int rank = 0; rank < devices; ++rank) power[static_cast<size_t>(rank)] = context.power_of(rank);
  energy.devices.assign(static_cast<size_t>(devices), DeviceEnergy{});
  std::vector<DeviceEnergy>& by_rank = energy.devices;
  auto communicate = [&](int rank, const Task& task) {
    by_rank[static_cast<size_t>(rank)].communication_j += power_above_idle(task, *power[static_cast<size_t>(rank)]) * task.duration_s;
  };
  for (const Task& task : step.tasks) {
    switch (task.kind) {
      case TaskKind::Compute: {
        DeviceEnergy& device = by_rank[static_cast<size_t>(task.rank)];
        device.compute_j += cost::compute_power_w(*power[static_cast<size_t>(task.rank)], task.compute_bound, task.clock) *
                            task.duration_s;
        device.busy_s += task.duration_s;
        break;
      }
      case TaskKind::Message:
        communicate(task.rank, task);
        communicate(task.peer, task);
        break;
      case TaskKind::Collective:
        for (const int rank : step.groups[static_cast<size_t>(task.group)]) communicate(rank, task);
        break;
      case TaskKind::StepEnd: break;
    }
  }
  for (int rank = 0; rank < devices; ++rank) {
    const int32_t representative = step.representative.empty() ? rank : step.representative[static_cast<size_t>(rank)];
    DeviceEnergy& device = by_rank[static_cast<size_t>(rank)];
    if (representative >= 0 && representative != rank) device = by_rank[static_cast<size_t>(representative)];
    if (representative < 0) device = DeviceEnergy{};
    device.idle_j = power[static_cast<size_t>(rank)]->idle_w * std::max(0.0, step_time_s - device.busy_s);
  }
  energy.total_devices();
  return energy;
}

void StepEnergy::total_devices() {
  compute_j = communication_j = idle_j = background_j = 0;
  for (const DeviceEnergy& device : devices) {
    compute_j += device.compute_j;
    communication_j += device.communication_j;
    idle_j += device.idle_j;
    background_j += device.background_j;
  }
  total_j = compute_j + communication_j + idle_j + background_j;
}

}  // namespace burst::timing
