#pragma once
// Internal to the multi-tenant cluster: one job's state, how it moves in time, and the
// policies' decisions (multi_tenant.h).
#include <cstdint>
#include <utility>
#include <vector>

#include "burst/cluster_sim/job_model.h"
#include "burst/cluster_sim/multi_tenant.h"

namespace burst::cluster_sim::tenant {

struct Job {
  const TraceJob* trace = nullptr;
  size_t index = 0;  // in the result's jobs
  double work = 0;
  double progress = 0;
  double samples = 0;
  std::vector<std::pair<int, int>> placement;  // (node, GPUs) in the order taken
  int gpus = 0;
  Job* host = nullptr;   // running in the background on one of this job's devices
  int guests = 0;        // background jobs on its devices
  double restart_left_s = 0;
  double executed_s = 0;  // time holding GPUs (Tiresias's attained service is this x GPUs asked)
  int queue = 0;          // Tiresias queue
  int64_t queue_order = 0;
  bool has_speed = false;
  JobSpeed speed;
  double guest_share = 0;    // as a background job: its speed over its speed alone
  double host_slowdown = 1;  // as a host: its slowdown with its background jobs
  double start_s = -1;
  double finish_s = -1;
  int starts = 0;
  int gpus_most = 0;
  double gpu_seconds = 0;
  double background_s = 0;
  double joules = 0;
  // The policy's decision.
  int want_gpus = 0;
  Job* want_host = nullptr;

  bool running() const { return gpus > 0; }
  bool finished() const { return finish_s >= 0; }
};

struct Context {
  const JobModel& model;
  const MultiTenantOptions& options;
  const ClusterNodes& nodes;
  std::vector<double> idle_power_w;  // per kind; empty: unknown
  int gpus_per_node = 1;
  int total_gpus = 0;

  // The job's GPUs with their nodes' kinds.
  Placement placement_of(const Job& job) const;
  // `gpus` packed on nodes of the kind the job holds now (its first node's), else the first kind.
  Placement packed_for(const Job& job, int gpus) const;
  // Idle power of the job's GPUs (0 when unknown).
  double idle_power_of(const Placement& placement) const;
  // `guest` in the background on a device of `host` holding `placement`: the job model's
  // figures, or the stated constants (MultiTenantOptions).
  SharedDevice sharing(const Job& host, const Placement& placement, const Job& guest) const;
};

// Runs `job` from `from` to `to` (restart first, then its speed's segments); sets finish_s
// when the work is done. Energy and GPU-seconds accrue.
void advance(Job& job, double from, double to, const Context& context);
// When `job` would finish from `from` at its present speed (infinity: never).
double predicted_finish(const Job& job, double from, const Context& context);

// Sets want_gpus / want_host of every job in `active` (arrival order) and returns them in
// the policy's priority order, in which they are placed.
std::vector<Job*> decide(const std::vector<Job*>& active, const Context& context);

}  // namespace burst::cluster_sim::tenant
