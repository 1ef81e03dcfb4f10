#pragma once
// What a job of a trace needs and how fast it goes (docs/cluster-sim.md, "Job models").
//
// A job's work is progress to make. A job of the Pollux format trains to its application's
// last epoch: progress counts steps at the application's smallest validated batch, a step at
// a larger batch counts its statistical gain (the published simulator's goodput model), and
// the work is the progress at which the last epoch ends. A Philly job ran `duration_s` on
// the GPUs it asked for: its work is that many seconds' iterations at that count.
//
// How long an iteration takes comes from an IterationTimer: the measured tables
// (MeasuredTimer, the published simulator's model) or burst's planner and evaluator (the
// `burst` command's own, which lib/sim cannot link).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "burst/cluster_sim/application_tables.h"
#include "burst/cluster_sim/job_trace.h"

namespace burst::cluster_sim {

// The GPUs a job holds: how many on each node used, in the order the nodes were taken, and
// each of those nodes' device kind (an index into the cluster's kinds; 0 with one kind).
struct Placement {
  std::vector<int> gpus;
  std::vector<int> kinds;
  int total() const;
};

// One iteration (optimizer step at the job's global batch) on a placement.
struct IterationTime {
  double seconds = 0;
  int64_t samples = 0;       // the global batch it really takes (the tables may round it)
  double idle_fraction = 0;  // of its devices' time, what a background job could use
  double joules = -1;        // all its devices over the iteration; < 0: unknown
};

// What a background job (the guest, one GPU) and the job whose device it shares (the host)
// do to each other.
struct SharedDevice {
  double host_slowdown = 1;  // the host's iteration time with the guest over alone
  double guest_share = 0;    // the guest's speed there over its speed alone on one GPU
};

class IterationTimer {
 public:
  virtual ~IterationTimer() = default;
  virtual IterationTime time(const ApplicationTable& application, int64_t batch, const Placement& placement) = 0;
  // What the guest and its host do to each other, where the timer can tell (nullopt: the
  // cluster's stated constants, MultiTenantOptions).
  virtual std::optional<SharedDevice> share(const ApplicationTable& /*host*/, int64_t /*host_batch*/,
                                            const Placement& /*host_placement*/, const ApplicationTable& /*guest*/,
                                            int64_t /*guest_batch*/) {
    return std::nullopt;
  }
  // A device's idle power (W) of the cluster's kind `kind`, for cluster energy; < 0: unknown.
  virtual double idle_power_w(int /*kind*/) const { return -1; }
  virtual std::string name() const = 0;
};

// The published simulator's step times: the measured tables, gradient accumulation above the
// application's largest local batch (one step = the last micro-step with its sync, plus the
// others without); what a device spends synchronising is the idle fraction. The tables are
// of one GPU kind: device kinds are not looked at.
class MeasuredTimer : public IterationTimer {
 public:
  IterationTime time(const ApplicationTable& application, int64_t batch, const Placement& placement) override;
  std::string name() const override { return "measured"; }
};

// A job's speed on a placement from some progress on: constant until `until_progress`.
struct JobSpeed {
  double progress_per_s = 0;
  double samples_per_s = 0;
  double until_progress = 0;
  double idle_fraction = 0;
  double watts = -1;  // its devices' power while it runs; < 0: unknown
};

class JobModel {
 public:
  // `gpus_per_node`: how the GPUs a Philly job asked for were packed when it ran (on the
  // cluster's first kind).
  JobModel(const ApplicationTables& applications, IterationTimer& timer, int gpus_per_node)
      : applications_(applications), timer_(timer), gpus_per_node_(gpus_per_node) {}

  // UserError "PATH:LINE: unknown application 'X' (known: ...)".
  void check(const JobTrace& trace, const TraceJob& job) const;
  const ApplicationTable& application(const TraceJob& job) const;
  // The job's global batch: as given, else (Philly) the application's smallest validated
  // batch per GPU times its GPUs, within the validated range.
  int64_t batch_of(const TraceJob& job) const;
  double work(const TraceJob& job) const;
  JobSpeed speed(const TraceJob& job, const Placement& placement, double progress) const;
  std::optional<SharedDevice> share(const TraceJob& host, const Placement& placement, const TraceJob& guest) const;
  IterationTimer& timer() const { return timer_; }

 private:
  const ApplicationTables& applications_;
  IterationTimer& timer_;
  int gpus_per_node_ = 1;
};

// `gpus` packed on nodes of `per_node` GPUs of kind `kind`: {per_node, ..., rest}.
Placement packed_placement(int gpus, int per_node, int kind = 0);

}  // namespace burst::cluster_sim
