#pragma once
// The multi-tenant cluster (docs/cluster-sim.md): a job trace replayed on a cluster of GPUs
// under a scheduling policy, each job's speed from a JobModel.
//
// Time moves in scheduling rounds `interval_s` apart (the published simulator's 60 s): at a
// round every job's progress is brought up to date, jobs submitted by then join, the policy
// decides how many GPUs each job holds (and, multiplexing, which waiting jobs run in the
// background on whose devices), and jobs whose share changed are placed and pay the
// restart cost. Between rounds a job runs at its speed (piecewise constant: an epoch's
// statistics, a restart) and may finish; its GPUs go back at the next round. Rounds where
// no job can arrive, finish or change queue are skipped: the decision would be the same.
// Placement: a job's GPUs are taken from the node with the most free GPUs first (lowest
// index on ties), so a job need not hold whole nodes; on a cluster of several device kinds
// it keeps to one kind when one has room (the kind with the most free GPUs). Deterministic.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "burst/cluster_sim/job_model.h"
#include "burst/cluster_sim/job_trace.h"

namespace burst::cluster_sim {

enum class ClusterPolicy {
  Fifo,            // arrival order, a job waits until the ones before it started; never preempts
  Tiresias,        // two-queue least attained service (Gu et al., NSDI'19, as the published simulator)
  BurstScale,      // Tiresias's admission, then free GPUs lent along each job's scaling curve
  BurstMultiplex,  // Tiresias's admission, then waiting one-GPU jobs in the idle time of running ones
  Burst,           // both
};
// "fifo", "tiresias", "burst-scale", "burst-multiplex", "burst"; UserError listing them.
ClusterPolicy parse_cluster_policy(const std::string& name);
const char* cluster_policy_name(ClusterPolicy policy);

// The cluster: GPUs per node and each node's device kind.
struct ClusterNodes {
  std::vector<int> gpus;                 // per node, each >= 1
  std::vector<int> kinds;                // per node, an index into kind_names; empty: all kind 0
  std::vector<std::string> kind_names;   // for reports; may be empty
  int kind_of(size_t node) const { return kinds.empty() ? 0 : kinds[node]; }
  int kind_count() const;  // the largest kind index + 1
  int total() const;
};

struct MultiTenantOptions {
  ClusterPolicy policy = ClusterPolicy::Tiresias;
  double interval_s = 60;  // scheduling round
  double restart_s = 30;   // checkpoint and restart, paid at every start and resize
  // Tiresias: a job moves to the second queue at this attained service (GPUs asked x
  // seconds run), 16 GPU-hours as the published simulator.
  double demotion_gpu_s = 16 * 3600.0;
  // Strong scaling: a running job doubles its GPUs while the added ones each give at least
  // this share of what a GPU gives it now, up to `scale_max_gpus`, and the time saved is more
  // than two restarts.
  double scale_min_efficiency = 0.5;
  int scale_max_gpus = 64;
  // Multiplexing: a waiting one-GPU job may run on one device of a running job when the
  // cluster gains GPU time by it: the guest gets at least `min_guest_share` of its speed
  // alone, more than the GPU time its host loses (host GPUs x (1 - 1 / slowdown)), and the
  // host slows down at most `max_host_slowdown`. Where the job model cannot tell
  // (IterationTimer::share), the guest gets the host's idle fraction at
  // `background_efficiency` (the kernels that fit) and slows its host by `foreground_slowdown`.
  double foreground_slowdown = 1.05;
  double background_efficiency = 0.8;
  double min_guest_share = 0.01;
  double max_host_slowdown = 1.05;
  bool skip_oversized = false;  // leave out jobs asking for more GPUs than the cluster has (else UserError)
  bool record_events = false;   // fill MultiTenantResult::events
  // Called as jobs finish (every 5% of them) with the simulated time and the count done.
  std::function<void(double simulated_s, size_t done, size_t total)> progress;
};

struct JobOutcome {
  std::string name;
  std::string application;
  int gpus_asked = 0;
  int gpus_most = 0;  // the most it held
  double submit_s = 0;
  double start_s = 0;   // first start (foreground or background)
  double finish_s = 0;
  int restarts = 0;     // starts and resizes after the first
  double gpu_seconds = 0;         // GPUs held x time, until it finished
  double background_seconds = 0;  // time run in another job's idle time
  double samples = 0;
  double jct_s() const { return finish_s - submit_s; }
};

enum class ClusterEventKind {
  Arrival,     // submitted
  Start,       // took GPUs (first start, or after waiting)
  Resize,      // holds a different number of GPUs
  Preempt,     // gave its GPUs back (or left its host's devices) and waits
  Background,  // runs in another job's idle time
  Finish,
};
const char* cluster_event_name(ClusterEventKind kind);

struct ClusterEvent {
  double time_s = 0;
  size_t job = 0;  // index into MultiTenantResult::jobs
  ClusterEventKind kind = ClusterEventKind::Arrival;
  int gpus = 0;    // held after the event
};

struct UsageSample {
  double time_s = 0;
  int allocated = 0;   // GPUs held by jobs
  int background = 0;  // devices also running a background job
  int waiting = 0;     // jobs submitted, neither running nor in the background
};

struct MultiTenantResult {
  std::string policy;
  std::string job_model;
  int gpus = 0;
  size_t skipped_oversized = 0;
  std::vector<JobOutcome> jobs;  // in trace order
  double avg_jct_s = 0;
  double p99_jct_s = 0;      // nearest rank
  double makespan_s = 0;     // first submission to last finish
  double utilisation = 0;    // GPU-seconds held / (GPUs x makespan)
  double throughput = 0;     // samples trained per second of makespan, all jobs
  double jobs_per_hour = 0;
  double energy_j = -1;      // the whole cluster over the makespan (< 0: unknown)
  std::vector<UsageSample> usage;  // at each round
  std::vector<ClusterEvent> events;  // with MultiTenantOptions::record_events, by time
};

MultiTenantResult simulate_multi_tenant(const JobTrace& trace, const JobModel& model, const ClusterNodes& nodes,
                                        const MultiTenantOptions& options);

}  // namespace burst::cluster_sim
