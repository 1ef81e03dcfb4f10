#include "burst/timing/energy.h"

#include <algorithm>

#include "burst/cost/power.h"
#include "burst/util/error.h"

namespace burst::timing {

double task_power_above_idle(const Task& task, int rank, const plan::PlanContext& context) {
  const cost::PowerSpec* power = context.power_of(rank);
  if (power == nullptr) return 0;
  switch (task.kind) {
    case TaskKind::Compute: return cost::compute_power_w(*power, task.compute_bound, task.clock) - power->idle_w;
    case TaskKind::Message:
    case TaskKind::Collective: return cost::communication_power_w(*power) - power->idle_w;
    case TaskKind::StepEnd: return 0;
  }
  return 0;
}

namespace {

void add_communication(std::vector<DeviceEnergy>& devices, int rank, const Task& task,
                       const plan::PlanContext& context) {
  devices[static_cast<size_t>(rank)].communication_j += task_power_above_idle(task, rank, context) * task.duration_s;
}

}  // namespace

StepEnergy step_energy(const StepTasks& step, double step_time_s, const plan::PlanContext& context) {
  StepEnergy energy;
  energy.known = context.energy_known();
  if (!energy.known) return energy;
  const int devices = context.network.cluster().size();
  energy.devices.assign(static_cast<size_t>(devices), DeviceEnergy{});
  std::vector<DeviceEnergy>& by_rank = energy.devices;
  for (const Task& task : step.tasks) {
    switch (task.kind) {
      case TaskKind::Compute: {
        DeviceEnergy& device = by_rank[static_cast<size_t>(task.rank)];
        device.compute_j += (task_power_above_idle(task, task.rank, context) + context.power_of(task.rank)->idle_w) *
                            task.duration_s;
        device.busy_s += task.duration_s;
        break;
      }
      case TaskKind::Message:
        add_communication(by_rank, task.rank, task, context);
        add_communication(by_rank, task.peer, task, context);
        break;
      case TaskKind::Collective:
        for (const int rank : step.groups[static_cast<size_t>(task.group)]) add_communication(by_rank, rank, task, context);
        break;
      case TaskKind::StepEnd: break;
    }
  }
  for (int rank = 0; rank < devices; ++rank) {
    const int32_t representative = step.representative.empty() ? rank : step.representative[static_cast<size_t>(rank)];
    DeviceEnergy& device = by_rank[static_cast<size_t>(rank)];
    if (representative >= 0 && representative != rank) device = by_rank[static_cast<size_t>(representative)];
    if (representative < 0) device = DeviceEnergy{};
    device.idle_j = context.power_of(rank)->idle_w * std::max(0.0, step_time_s - device.busy_s);
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
