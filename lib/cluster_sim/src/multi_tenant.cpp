#include "burst/cluster_sim/multi_tenant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/json_io.h"
#include "tenant_job.h"

namespace burst::cluster_sim {
namespace {

using tenant::Job;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kLongestRun_s = 1e11;  // about 3,000 years of simulated time

struct PolicyName {
  ClusterPolicy policy;
  const char* name;
};
constexpr PolicyName kPolicies[] = {{ClusterPolicy::Fifo, "fifo"},
                                    {ClusterPolicy::Tiresias, "tiresias"},
                                    {ClusterPolicy::BurstScale, "burst-scale"},
                                    {ClusterPolicy::BurstMultiplex, "burst-multiplex"},
                                    {ClusterPolicy::Burst, "burst"}};

// Free GPUs per node; a job takes them from the node with the most free first, within the
// kind with the most free GPUs when that kind has room for it.
class FreeGpus {
 public:
  explicit FreeGpus(const ClusterNodes& nodes) : nodes_(nodes), free_(nodes.gpus) {}
  void release(Job& job) {
    for (const auto& [node, count] : job.placement) free_[static_cast<size_t>(node)] += count;
    job.placement.clear();
    job.gpus = 0;
  }
  void place(Job& job, int gpus) {
    job.gpus = gpus;
    const int kind = roomy_kind(gpus);
    for (int left = gpus; left > 0;) {
      size_t most = free_.size();
      for (size_t node = 0; node < free_.size(); ++node) {
        if ((kind < 0 || nodes_.kind_of(node) == kind) && (most == free_.size() || free_[node] > free_[most])) most = node;
      }
      BURST_ASSERT(most < free_.size() && free_[most] > 0, "a policy gave out more GPUs than the cluster has");
      const int take = std::min(left, free_[most]);
      free_[most] -= take;
      left -= take;
      job.placement.emplace_back(static_cast<int>(most), take);
    }
  }

 private:
  // The kind with the most free GPUs if it has `gpus` free, else -1 (any node).
  int roomy_kind(int gpus) const {
    if (nodes_.kinds.empty()) return -1;
    std::vector<int> free_of_kind(static_cast<size_t>(nodes_.kind_count()), 0);
    for (size_t node = 0; node < free_.size(); ++node) free_of_kind[static_cast<size_t>(nodes_.kind_of(node))] += free_[node];
    const auto best = std::max_element(free_of_kind.begin(), free_of_kind.end());
    return *best >= gpus ? static_cast<int>(best - free_of_kind.begin()) : -1;
  }

  const ClusterNodes& nodes_;
  std::vector<int> free_;
};

std::vector<double> idle_power_per_kind(const IterationTimer& timer, const ClusterNodes& nodes) {
  std::vector<double> watts;
  for (int kind = 0; kind < nodes.kind_count(); ++kind) {
    const double idle = timer.idle_power_w(kind);
    if (idle < 0) return {};
    watts.push_back(idle);
  }
  return watts;
}

class Engine {
 public:
  Engine(const JobTrace& trace, const JobModel& model, const ClusterNodes& nodes, const MultiTenantOptions& options)
      : trace_(trace), options_(options), free_(nodes),
        context_{model, options, nodes, idle_power_per_kind(model.timer(), nodes),
                 *std::max_element(nodes.gpus.begin(), nodes.gpus.end()), nodes.total()} {}

  MultiTenantResult run();

 private:
  void load_jobs();
  void advance_running(double to);
  void admit_arrivals(double now);
  void demote();
  void apply(const std::vector<Job*>& order, double now);
  double next_round(double now) const;
  void record_usage(double now);
  void record(double time_s, const Job& job, ClusterEventKind kind);
  void record_change(const Job& job, int before_gpus, const Job* before_host, double now);
  MultiTenantResult summarise() const;

  const JobTrace& trace_;
  const MultiTenantOptions& options_;
  FreeGpus free_;
  tenant::Context context_;
  std::vector<Job> jobs_;       // in trace order, skipped ones left out
  std::vector<Job*> active_;    // submitted and unfinished, in arrival order
  size_t next_arrival_ = 0;
  size_t done_ = 0;
  size_t skipped_ = 0;
  int64_t queue_counter_ = 0;
  double last_round_ = 0;
  std::vector<UsageSample> usage_;
  std::vector<ClusterEvent> events_;
};

void Engine::record(double time_s, const Job& job, ClusterEventKind kind) {
  if (options_.record_events) events_.push_back({time_s, job.index, kind, job.gpus});
}

void Engine::record_change(const Job& job, int before_gpus, const Job* before_host, double now) {
  if (job.gpus != before_gpus) {
    record(now, job, job.gpus == 0 ? ClusterEventKind::Preempt
                                   : before_gpus == 0 ? ClusterEventKind::Start : ClusterEventKind::Resize);
  }
  if (job.host != before_host && job.host != nullptr) record(now, job, ClusterEventKind::Background);
  if (job.host != before_host && job.host == nullptr && job.gpus == 0) record(now, job, ClusterEventKind::Preempt);
}

void Engine::load_jobs() {
  jobs_.reserve(trace_.jobs.size());
  for (const TraceJob& job : trace_.jobs) {
    context_.model.check(trace_, job);
    if (job.gpus > context_.total_gpus) {
      if (options_.skip_oversized) {
        ++skipped_;
        continue;
      }
      throw UserError(fmt::format("{}: job '{}' asks for {} GPUs, the cluster has {} (--skip-oversized leaves such "
                                  "jobs out)",
                                  trace_.where(job), text_excerpt(job.name), job.gpus, context_.total_gpus));
    }
    Job state;
    state.trace = &job;
    state.index = jobs_.size();
    state.work = context_.model.work(job);
    jobs_.push_back(std::move(state));
  }
}

void Engine::advance_running(double to) {
  for (Job* job : active_) {
    if (job->running()) job->executed_s += to - last_round_;
    tenant::advance(*job, last_round_, to, context_);
  }
  std::vector<Job*> still;
  for (Job* job : active_) {
    if (!job->finished()) {
      still.push_back(job);
      continue;
    }
    free_.release(*job);
    job->host = nullptr;
    record(job->finish_s, *job, ClusterEventKind::Finish);
    ++done_;
    const size_t step = std::max<size_t>(1, jobs_.size() / 20);
    if (options_.progress && (done_ % step == 0 || done_ == jobs_.size())) options_.progress(to, done_, jobs_.size());
  }
  for (Job* job : still) {
    if (job->host != nullptr && job->host->finished()) job->host = nullptr;  // its host is gone: it waits
  }
  active_ = std::move(still);
}

void Engine::admit_arrivals(double now) {
  while (next_arrival_ < jobs_.size() && jobs_[next_arrival_].trace->submit_s <= now) {
    Job& job = jobs_[next_arrival_++];
    job.queue_order = queue_counter_++;
    active_.push_back(&job);
    record(job.trace->submit_s, job, ClusterEventKind::Arrival);
  }
}

void Engine::demote() {
  for (Job* job : active_) {
    if (job->queue == 0 && job->running() && job->executed_s * job->trace->gpus >= options_.demotion_gpu_s) {
      job->queue = 1;
      job->queue_order = queue_counter_++;
    }
  }
}

void Engine::apply(const std::vector<Job*>& order, double now) {
  std::vector<Job*> changed;
  std::vector<std::pair<int, const Job*>> before;  // per job in `order`: GPUs and host
  for (const Job* job : order) before.emplace_back(job->gpus, job->host);
  for (Job* job : order) {
    const bool resized = job->want_gpus != job->gpus;
    const bool moved = job->want_host != job->host;
    if (resized) free_.release(*job);
    if (moved) job->host = nullptr;
    if ((resized && job->want_gpus > 0) || (moved && job->want_host != nullptr)) changed.push_back(job);
    if (resized || moved) job->has_speed = false;
  }
  for (Job* job : changed) {
    if (job->want_gpus > 0) free_.place(*job, job->want_gpus);
    job->host = job->want_host;
    job->restart_left_s = options_.restart_s;
    if (job->start_s < 0) job->start_s = now;
    ++job->starts;
    job->gpus_most = std::max(job->gpus_most, job->gpus);
  }
  for (size_t i = 0; i < order.size(); ++i) record_change(*order[i], before[i].first, before[i].second, now);
  for (Job* job : order) {
    job->guests = 0;
    job->host_slowdown = 1;
  }
  for (Job* job : order) {
    if (job->host == nullptr) continue;
    Job& host = *job->host;
    ++host.guests;
    const SharedDevice shared = context_.sharing(host, context_.placement_of(host), *job);
    job->guest_share = shared.guest_share;
    host.host_slowdown = std::max(host.host_slowdown, shared.host_slowdown);
  }
}

double Engine::next_round(double now) const {
  const double interval = options_.interval_s;
  double earliest = next_arrival_ < jobs_.size() ? jobs_[next_arrival_].trace->submit_s : kInfinity;
  for (const Job* job : active_) {
    earliest = std::min(earliest, tenant::predicted_finish(*job, now, context_));
    if (job->queue == 0 && job->running() && options_.policy != ClusterPolicy::Fifo) {
      earliest = std::min(earliest, now + options_.demotion_gpu_s / job->trace->gpus - job->executed_s);
    }
  }
  if (!(earliest < kInfinity)) return now + interval;
  return std::max(now + interval, std::ceil(earliest / interval) * interval);
}

void Engine::record_usage(double now) {
  UsageSample sample;
  sample.time_s = now;
  for (const Job* job : active_) {
    sample.allocated += job->gpus;
    if (job->host != nullptr) ++sample.background;
    if (job->gpus == 0 && job->host == nullptr) ++sample.waiting;
  }
  if (!usage_.empty() && usage_.back().allocated == sample.allocated && usage_.back().background == sample.background &&
      usage_.back().waiting == sample.waiting) {
    return;  // unchanged: the step function needs only its changes
  }
  usage_.push_back(sample);
}

MultiTenantResult Engine::run() {
  load_jobs();
  double now = 0;
  while (done_ < jobs_.size()) {
    advance_running(now);
    admit_arrivals(now);
    if (options_.policy != ClusterPolicy::Fifo) demote();
    apply(tenant::decide(active_, context_), now);
    record_usage(now);
    last_round_ = now;
    if (done_ == jobs_.size()) break;
    now = next_round(now);
    if (now > kLongestRun_s) {
      throw UserError(fmt::format("the cluster has not finished its jobs after {:.0f} simulated years ({} of {} done): "
                                  "a job's speed is too low (its step times in the tables?)",
                                  kLongestRun_s / (365 * 86400.0), done_, jobs_.size()));
    }
  }
  return summarise();
}

MultiTenantResult Engine::summarise() const {
  MultiTenantResult result;
  result.policy = cluster_policy_name(options_.policy);
  result.job_model = context_.model.timer().name();
  result.gpus = context_.total_gpus;
  result.skipped_oversized = skipped_;
  result.usage = usage_;
  result.events = events_;
  std::stable_sort(result.events.begin(), result.events.end(),
                   [](const ClusterEvent& a, const ClusterEvent& b) { return a.time_s < b.time_s; });
  std::vector<double> jcts;
  double gpu_seconds = 0, samples = 0, joules = 0;
  for (const Job& job : jobs_) {
    JobOutcome outcome;
    outcome.name = job.trace->name;
    outcome.application = job.trace->application;
    outcome.gpus_asked = job.trace->gpus;
    outcome.gpus_most = job.gpus_most;
    outcome.submit_s = job.trace->submit_s;
    outcome.start_s = job.start_s;
    outcome.finish_s = job.finish_s;
    outcome.restarts = std::max(0, job.starts - 1);
    outcome.gpu_seconds = job.gpu_seconds;
    outcome.background_seconds = job.background_s;
    outcome.samples = job.samples;
    jcts.push_back(outcome.jct_s());
    result.makespan_s = std::max(result.makespan_s, job.finish_s);
    gpu_seconds += job.gpu_seconds;
    samples += job.samples;
    joules += job.joules;
    result.jobs.push_back(std::move(outcome));
  }
  if (jcts.empty()) return result;
  const double first = jobs_.front().trace->submit_s;
  result.makespan_s -= first;
  result.avg_jct_s = std::accumulate(jcts.begin(), jcts.end(), 0.0) / static_cast<double>(jcts.size());
  std::sort(jcts.begin(), jcts.end());
  const auto rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(jcts.size())));
  result.p99_jct_s = jcts[std::max<size_t>(rank, 1) - 1];
  if (result.makespan_s > 0) {
    result.utilisation = gpu_seconds / (context_.total_gpus * result.makespan_s);
    result.throughput = samples / result.makespan_s;
    result.jobs_per_hour = static_cast<double>(jcts.size()) * 3600 / result.makespan_s;
  }
  // Energy: every job's power above idle, and every GPU's idle power over the makespan.
  if (!context_.idle_power_w.empty()) {
    double idle_w = 0;
    for (size_t node = 0; node < context_.nodes.gpus.size(); ++node) {
      idle_w += context_.nodes.gpus[node] * context_.idle_power_w[static_cast<size_t>(context_.nodes.kind_of(node))];
    }
    result.energy_j = joules + idle_w * result.makespan_s;
  }
  return result;
}

}  // namespace

ClusterPolicy parse_cluster_policy(const std::string& name) {
  std::string known;
  for (const PolicyName& entry : kPolicies) {
    if (name == entry.name) return entry.policy;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", entry.name);
  }
  throw UserError(fmt::format("unknown policy '{}' (policies: {})", text_excerpt(name), known));
}

const char* cluster_event_name(ClusterEventKind kind) {
  switch (kind) {
    case ClusterEventKind::Arrival: return "arrival";
    case ClusterEventKind::Start: return "start";
    case ClusterEventKind::Resize: return "resize";
    case ClusterEventKind::Preempt: return "preempt";
    case ClusterEventKind::Background: return "background";
    case ClusterEventKind::Finish: return "finish";
  }
  return "?";
}

const char* cluster_policy_name(ClusterPolicy policy) {
  for (const PolicyName& entry : kPolicies) {
    if (entry.policy == policy) return entry.name;
  }
  return "?";
}

int ClusterNodes::total() const { return std::accumulate(gpus.begin(), gpus.end(), 0); }

int ClusterNodes::kind_count() const {
  return kinds.empty() ? 1 : *std::max_element(kinds.begin(), kinds.end()) + 1;
}

MultiTenantResult simulate_multi_tenant(const JobTrace& trace, const JobModel& model, const ClusterNodes& nodes,
                                        const MultiTenantOptions& options) {
  if (nodes.gpus.empty() || *std::min_element(nodes.gpus.begin(), nodes.gpus.end()) < 1 ||
      (!nodes.kinds.empty() && nodes.kinds.size() != nodes.gpus.size())) {
    throw UserError("the cluster needs at least one node with a GPU, and a kind for every node");
  }
  if (!(options.interval_s > 0) || !(options.restart_s >= 0) || !(options.foreground_slowdown >= 1)) {
    throw UserError(fmt::format("bad cluster options: interval {} s (> 0), restart {} s (>= 0), slowdown {} (>= 1)",
                                options.interval_s, options.restart_s, options.foreground_slowdown));
  }
  Engine engine(trace, model, nodes, options);
  return engine.run();
}

}  // namespace burst::cluster_sim
