// The policies of the multi-tenant cluster (multi_tenant.h, docs/cluster-sim.md "Policies").
#include <algorithm>
#include <cmath>

#include "tenant_job.h"

namespace burst::cluster_sim::tenant {
namespace {

bool tiresias_based(ClusterPolicy policy) { return policy != ClusterPolicy::Fifo; }
bool scales(ClusterPolicy policy) { return policy == ClusterPolicy::BurstScale || policy == ClusterPolicy::Burst; }
bool multiplexes(ClusterPolicy policy) {
  return policy == ClusterPolicy::BurstMultiplex || policy == ClusterPolicy::Burst;
}

// FIFO: arrival order. Tiresias: the first queue, then the second, each in the order jobs
// entered it (arrival; demotion).
std::vector<Job*> priority_order(const std::vector<Job*>& active, ClusterPolicy policy) {
  std::vector<Job*> order = active;
  if (tiresias_based(policy)) {
    std::stable_sort(order.begin(), order.end(), [](const Job* a, const Job* b) {
      return a->queue != b->queue ? a->queue < b->queue : a->queue_order < b->queue_order;
    });
  }
  return order;
}

// FIFO admits in order until a job does not fit (that job and every later one wait);
// Tiresias admits every job that fits in what the ones before it left, preempting the rest.
int admit(const std::vector<Job*>& order, const Context& context) {
  int free = context.total_gpus;
  bool blocked = false;
  for (Job* job : order) {
    job->want_gpus = 0;
    job->want_host = nullptr;
    if (blocked || job->trace->gpus > free) {
      blocked = blocked || context.options.policy == ClusterPolicy::Fifo;
      continue;
    }
    job->want_gpus = job->trace->gpus;
    free -= job->want_gpus;
  }
  return free;
}

double progress_rate(const Job& job, int gpus, const Context& context) {
  return context.model.speed(*job.trace, context.packed_for(job, gpus), job.progress).progress_per_s;
}

// Whether going from `gpus` to `more` is worth it: each added GPU gives at least the
// efficiency share of a GPU's rate now, and the time saved beats two restarts.
bool worth_growing(const Job& job, int gpus, int more, const Context& context) {
  const double now = progress_rate(job, gpus, context), then = progress_rate(job, more, context);
  if (now <= 0 || then <= now) return false;
  const double efficiency = (then / now - 1) / (static_cast<double>(more - gpus) / gpus);
  const double left = job.work - job.progress;
  const double saved = left / now - left / then - context.options.restart_s;
  return efficiency >= context.options.scale_min_efficiency && saved > 2 * context.options.restart_s;
}

int most_gpus(const Job& job, const Context& context) {
  const ApplicationTable& app = context.model.application(*job.trace);
  const double per_gpu = std::max(1.0, app.min_local_batch);
  const auto by_batch = static_cast<int64_t>(static_cast<double>(context.model.batch_of(*job.trace)) / per_gpu);
  return static_cast<int>(std::max<int64_t>(job.trace->gpus, std::min<int64_t>(context.options.scale_max_gpus, by_batch)));
}

// Free GPUs go to admitted jobs in priority order: first back to those that held more than
// they asked (no resize), then doubling along each job's scaling curve while worth it.
void lend_free_gpus(const std::vector<Job*>& order, int free, const Context& context) {
  for (Job* job : order) {
    if (job->want_gpus == 0 || job->gpus <= job->want_gpus) continue;
    const int extra = job->gpus - job->want_gpus;
    if (extra <= free) {
      job->want_gpus = job->gpus;
      free -= extra;
    }
  }
  for (Job* job : order) {
    if (job->want_gpus == 0) continue;
    const int limit = most_gpus(*job, context);
    while (free > 0 && job->want_gpus < limit) {
      const int more = std::min({2 * job->want_gpus, limit, job->want_gpus + free});
      if (!worth_growing(*job, job->want_gpus, more, context)) break;
      free -= more - job->want_gpus;
      job->want_gpus = more;
    }
  }
}

struct Host {
  Job* job;
  Placement placement;
  double idle;
  int slots;
};

bool worth_sharing(const Host& host, const Job& guest, const Context& context) {
  const SharedDevice shared = context.sharing(*host.job, host.placement, guest);
  const double host_loss = host.placement.total() * (1 - 1 / shared.host_slowdown);  // GPUs' worth
  return shared.guest_share >= context.options.min_guest_share && shared.guest_share > host_loss &&
         shared.host_slowdown <= context.options.max_host_slowdown;
}

// Waiting one-GPU jobs go, in priority order, to a device of a running job (the most idle
// first) where sharing is worth it (MultiTenantOptions); one background job per device. A
// background job whose host keeps its GPUs stays where it is.
void place_background(const std::vector<Job*>& order, const Context& context) {
  std::vector<Host> hosts;
  for (Job* job : order) {
    if (job->want_gpus == 0) continue;
    Placement placement = job->want_gpus == job->gpus ? context.placement_of(*job) : context.packed_for(*job, job->want_gpus);
    const double idle = context.model.speed(*job->trace, placement, job->progress).idle_fraction;
    if (idle > 0) hosts.push_back({job, std::move(placement), idle, job->want_gpus});
  }
  std::stable_sort(hosts.begin(), hosts.end(), [](const Host& a, const Host& b) { return a.idle > b.idle; });
  const auto slot_of = [&](const Job* job) -> Host* {
    for (Host& host : hosts) {
      if (host.job == job) return host.slots > 0 ? &host : nullptr;
    }
    return nullptr;
  };
  std::vector<Job*> waiting;
  for (Job* job : order) {
    if (job->want_gpus > 0 || job->trace->gpus != 1) continue;
    Host* kept = job->host != nullptr && job->host->want_gpus == job->host->gpus ? slot_of(job->host) : nullptr;
    if (kept != nullptr) {
      job->want_host = kept->job;
      --kept->slots;
    } else {
      waiting.push_back(job);
    }
  }
  for (Job* job : waiting) {
    for (Host& host : hosts) {
      if (host.slots == 0 || !worth_sharing(host, *job, context)) continue;
      job->want_host = host.job;
      --host.slots;
      break;
    }
  }
}

}  // namespace

std::vector<Job*> decide(const std::vector<Job*>& active, const Context& context) {
  const std::vector<Job*> order = priority_order(active, context.options.policy);
  const int free = admit(order, context);
  if (scales(context.options.policy)) lend_free_gpus(order, free, context);
  if (multiplexes(context.options.policy)) place_background(order, context);
  return order;
}

}  // namespace burst::cluster_sim::tenant
