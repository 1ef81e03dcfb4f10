#include "tenant_job.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace burst::cluster_sim::tenant {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The job's speed and its rate multiplier now: a host runs its slowdown slower, a background
// job at its share of its one-GPU speed.
double take_speed(Job& job, const Context& context) {
  if (!job.has_speed || job.progress >= job.speed.until_progress) {
    const Placement placement = job.host != nullptr ? context.packed_for(*job.host, 1) : context.placement_of(job);
    job.speed = context.model.speed(*job.trace, placement, job.progress);
    job.has_speed = true;
  }
  if (job.host != nullptr) return job.guest_share;
  return job.guests > 0 ? 1 / job.host_slowdown : 1.0;
}

// Power above what the job's devices draw idle (background: its kernels' share).
double job_watts(const Job& job, double factor, const Context& context) {
  if (job.speed.watts < 0 || context.idle_power_w.empty()) return 0;
  if (job.host != nullptr) {
    return std::max(0.0, job.speed.watts - context.idle_power_of(context.packed_for(*job.host, 1))) * factor;
  }
  return job.speed.watts - context.idle_power_of(context.placement_of(job));
}

}  // namespace

Placement Context::placement_of(const Job& job) const {
  Placement out;
  for (const auto& [node, count] : job.placement) {
    out.gpus.push_back(count);
    out.kinds.push_back(nodes.kind_of(static_cast<size_t>(node)));
  }
  return out;
}

Placement Context::packed_for(const Job& job, int gpus) const {
  const int kind = job.placement.empty() ? 0 : nodes.kind_of(static_cast<size_t>(job.placement.front().first));
  return packed_placement(gpus, gpus_per_node, kind);
}

SharedDevice Context::sharing(const Job& host, const Placement& placement, const Job& guest) const {
  if (const auto shared = model.share(*host.trace, placement, *guest.trace)) return *shared;
  const double idle = model.speed(*host.trace, placement, host.progress).idle_fraction;
  return {options.foreground_slowdown, idle * options.background_efficiency};
}

double Context::idle_power_of(const Placement& placement) const {
  if (idle_power_w.empty()) return 0;
  double watts = 0;
  for (size_t i = 0; i < placement.gpus.size(); ++i) {
    watts += placement.gpus[i] * idle_power_w[static_cast<size_t>(placement.kinds[i])];
  }
  return watts;
}

void advance(Job& job, double from, double to, const Context& context) {
  if (job.finished() || (!job.running() && job.host == nullptr)) return;
  double now = from;
  const double restart = std::min(job.restart_left_s, to - now);
  job.restart_left_s -= restart;
  job.gpu_seconds += restart * job.gpus;
  now += restart;
  while (now < to) {
    const double factor = take_speed(job, context);
    const double rate = job.speed.progress_per_s * factor;
    if (rate <= 0) break;
    const double target = std::min(job.speed.until_progress, job.work);
    const double need = (target - job.progress) / rate;
    const double step = std::min(need, to - now);
    job.progress = step == need ? target : job.progress + rate * step;
    job.samples += job.speed.samples_per_s * factor * step;
    job.joules += job_watts(job, factor, context) * step;
    job.gpu_seconds += step * job.gpus;
    if (job.host != nullptr) job.background_s += step;
    now += step;
    if (job.progress >= job.work) {
      job.finish_s = now;
      return;
    }
  }
}

double predicted_finish(const Job& job, double from, const Context& context) {
  if (job.finished()) return job.finish_s;
  if (!job.running() && job.host == nullptr) return kInfinity;
  Job copy = job;
  advance(copy, from, kInfinity, context);
  return copy.finished() ? copy.finish_s : kInfinity;
}

}  // namespace burst::cluster_sim::tenant
