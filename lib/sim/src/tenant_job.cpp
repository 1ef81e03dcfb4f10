#include "tenant_job.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace burst::sim::tenant {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The job's speed and its rate multiplier now: a host runs `foreground_slowdown` slower, a
// background job at its one-GPU speed times its host's idle fraction and the efficiency.
double take_speed(Job& job, const Context& context) {
  const MultiTenantOptions& options = context.options;
  if (!job.has_speed || job.progress >= job.speed.until_progress) {
    const std::vector<int> placement = job.host != nullptr ? std::vector<int>{1} : job.placement_counts();
    job.speed = context.model.speed(*job.trace, placement, job.progress);
    job.has_speed = true;
  }
  if (job.host != nullptr) return job.host_idle * options.background_efficiency;
  return job.guests > 0 ? 1 / options.foreground_slowdown : 1.0;
}

// Power above what the job's devices draw idle (background: its kernels' share).
double job_watts(const Job& job, double factor, const Context& context) {
  if (job.speed.watts < 0 || context.idle_power_w < 0) return 0;
  if (job.host != nullptr) return std::max(0.0, job.speed.watts - context.idle_power_w) * factor;
  return job.speed.watts - context.idle_power_w * job.gpus;
}

}  // namespace

std::vector<int> Job::placement_counts() const {
  std::vector<int> counts;
  for (const auto& [node, count] : placement) counts.push_back(count);
  return counts;
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

}  // namespace burst::sim::tenant
