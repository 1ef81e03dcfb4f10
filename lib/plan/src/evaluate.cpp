#include "burst/plan/evaluate.h"

#include <algorithm>
#include <deque>
#include <map>

#include "burst/util/error.h"

namespace burst::plan {

const char* activity_kind_name(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::Forward: return "forward";
    case ActivityKind::Backward: return "backward";
    case ActivityKind::Transfer: return "transfer";
    case ActivityKind::Allreduce: return "allreduce";
    case ActivityKind::Update: return "update";
  }
  return "?";
}

namespace {

// Layer times by (layer, per-device batch), asked for once each. A layer's shards come in
// very few sizes, so each layer keeps a short list.
class LayerTimes {
 public:
  explicit LayerTimes(const PlanContext& context)
      : context_(context), cache_(context.graph.size()) {}

  const cost::LayerTime& at(graph::LayerId id, int64_t batch) {
    auto& known = cache_[static_cast<size_t>(id)];
    for (const auto& [size, time] : known) {
      if (size == batch) return time;
    }
    known.emplace_back(batch, context_.cost.require(context_.graph, id, batch).time);
    return known.back().second;
  }

 private:
  const PlanContext& context_;
  std::vector<std::deque<std::pair<int64_t, cost::LayerTime>>> cache_;  // deque: stable references
};

bool same_placement(const LayerPlacement& a, const LayerPlacement& b) {
  return std::equal(a.shards.begin(), a.shards.end(), b.shards.begin(), b.shards.end(),
                    [](const cost::Shard& x, const cost::Shard& y) { return x.rank == y.rank && x.samples == y.samples; });
}

int64_t largest_shard(const LayerPlacement& placement) {
  int64_t largest = 0;
  for (const cost::Shard& shard : placement.shards) largest = std::max(largest, shard.samples.size());
  return largest;
}

}  // namespace

PlanEvaluation evaluate_plan(const Plan& plan, const PlanContext& context,
                             const EvaluateOptions& options) {
  const graph::Graph& graph = context.graph;
  const auto layer_count = static_cast<graph::LayerId>(graph.size());
  BURST_ASSERT(plan.layers.size() == graph.size(), "evaluate_plan needs a validated plan");
  const int devices = context.network.cluster().size();
  LayerTimes times(context);

  PlanEvaluation result;
  result.layers.resize(graph.size());
  if (options.timelines) result.timelines.resize(static_cast<size_t>(devices));
  auto record = [&](int rank, double start, double end, ActivityKind kind, graph::LayerId id) {
    if (options.timelines && end > start) {
      result.timelines[static_cast<size_t>(rank)].push_back(Activity{start, end, kind, id});
    }
  };

  // Static per-layer facts: shard times, input re-shard times, sync groups and times.
  std::map<std::pair<graph::LayerId, graph::LayerId>, Seconds> edge_transfer;
  std::vector<std::vector<int>> groups(graph.size());
  std::map<std::pair<std::vector<int>, int64_t>, Seconds> allreduce_times;  // (group, params)
  for (graph::LayerId id = 0; id < layer_count; ++id) {
    const LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
    LayerTiming& timing = result.layers[static_cast<size_t>(id)];
    timing.devices = static_cast<int>(placement.shards.size());
    timing.per_device_batch = largest_shard(placement);
    const cost::LayerTime& time = times.at(id, timing.per_device_batch);
    timing.forward = time.forward;
    timing.backward = time.backward;
    timing.update = context.cost.update_or_zero(graph, id);
    const cost::LayerTime& whole = times.at(id, plan.global_batch);
    result.one_device_compute += whole.total() + timing.update;
    timing.amplification =
        whole.total().s() > 0 ? timing.devices * time.total().s() / whole.total().s() : 1.0;
    for (const graph::LayerId producer : graph.inputs(id)) {
      Seconds transfer(0);
      if (!same_placement(plan.layers[static_cast<size_t>(producer)], placement)) {
        const Bytes bytes_per_sample(static_cast<double>(graph.info(producer).output_bytes));
        transfer = context.network.reshard(activation_transfers(plan, producer, id), bytes_per_sample);
      }
      edge_transfer[{producer, id}] = transfer;
      timing.transfer = std::max(timing.transfer, transfer);
    }
    std::vector<int>& group = groups[static_cast<size_t>(id)];
    group = sync_group(plan, graph, id);
    if (!group.empty()) {
      const int64_t params = graph.info(id).params;
      auto found = allreduce_times.find({group, params});
      if (found == allreduce_times.end()) {
        const Bytes gradients(static_cast<double>(params) * 4.0);  // fp32 gradients
        found = allreduce_times.emplace(std::make_pair(group, params), context.network.allreduce(group, gradients)).first;
      }
      timing.sync = found->second;
    }
  }

  std::vector<double> compute_free(static_cast<size_t>(devices), 0.0);
  auto run_layer = [&](graph::LayerId id, double ready, bool forward) {
    const LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
    double start = ready;
    for (const cost::Shard& shard : placement.shards) {
      start = std::max(start, compute_free[static_cast<size_t>(shard.rank)]);
    }
    double end = start;
    for (const cost::Shard& shard : placement.shards) {
      const cost::LayerTime& time = times.at(id, shard.samples.size());
      const double finish = start + (forward ? time.forward : time.backward).s();
      compute_free[static_cast<size_t>(shard.rank)] = finish;
      result.device_seconds += Seconds(finish - start);
      record(shard.rank, start, finish, forward ? ActivityKind::Forward : ActivityKind::Backward, id);
      end = std::max(end, finish);
    }
    return std::make_pair(start, end);
  };
  auto record_transfer = [&](graph::LayerId id, double from, double to) {
    if (!options.timelines || to <= from) return;
    for (const cost::Shard& shard : plan.layers[static_cast<size_t>(id)].shards) {
      record(shard.rank, from, to, ActivityKind::Transfer, id);
    }
  };

  // Forward, in graph order (a topological order).
  double forward_done = 0;
  for (graph::LayerId id = 0; id < layer_count; ++id) {
    LayerTiming& timing = result.layers[static_cast<size_t>(id)];
    double ready = 0, sent = 0;
    for (const graph::LayerId producer : graph.inputs(id)) {
      const double producer_end = result.layers[static_cast<size_t>(producer)].forward_end_s;
      sent = std::max(sent, producer_end);
      ready = std::max(ready, producer_end + edge_transfer[{producer, id}].s());
    }
    record_transfer(id, sent, ready);
    std::tie(timing.forward_start_s, timing.forward_end_s) = run_layer(id, ready, true);
    forward_done = std::max(forward_done, timing.forward_end_s);
  }

  // Backward, in reverse graph order; all-reduces on per-rank communication queues.
  std::vector<double> comm_free(static_cast<size_t>(devices), 0.0);
  double iteration_end = forward_done;
  for (graph::LayerId id = layer_count - 1; id >= 0; --id) {
    LayerTiming& timing = result.layers[static_cast<size_t>(id)];
    double ready = graph.consumers(id).empty() ? forward_done : 0, sent = ready;
    for (const graph::LayerId consumer : graph.consumers(id)) {
      const double consumer_end = result.layers[static_cast<size_t>(consumer)].backward_end_s;
      sent = std::max(sent, consumer_end);
      ready = std::max(ready, consumer_end + edge_transfer[{id, consumer}].s());
    }
    record_transfer(id, sent, ready);
    std::tie(timing.backward_start_s, timing.backward_end_s) = run_layer(id, ready, false);
    timing.sync_end_s = timing.backward_end_s;
    const std::vector<int>& group = groups[static_cast<size_t>(id)];
    if (!group.empty()) {
      double start = timing.backward_end_s;
      for (const int rank : group) start = std::max(start, comm_free[static_cast<size_t>(rank)]);
      timing.sync_end_s = start + timing.sync.s();
      for (const int rank : group) {
        comm_free[static_cast<size_t>(rank)] = timing.sync_end_s;
        record(rank, start, timing.sync_end_s, ActivityKind::Allreduce, id);
      }
    }
    iteration_end = std::max({iteration_end, timing.backward_end_s, timing.sync_end_s});
  }

  // The optimizer step: each rank updates its layers once its backward and all-reduces are done.
  std::vector<double> rank_update(static_cast<size_t>(devices), 0.0);
  for (graph::LayerId id = 0; id < layer_count; ++id) {
    for (const cost::Shard& shard : plan.layers[static_cast<size_t>(id)].shards) {
      rank_update[static_cast<size_t>(shard.rank)] += result.layers[static_cast<size_t>(id)].update.s();
    }
  }
  for (int rank = 0; rank < devices; ++rank) {
    const double update = rank_update[static_cast<size_t>(rank)];
    if (update <= 0) continue;
    const double start = std::max(compute_free[static_cast<size_t>(rank)], comm_free[static_cast<size_t>(rank)]);
    result.device_seconds += Seconds(update);
    record(rank, start, start + update, ActivityKind::Update, -1);
    iteration_end = std::max(iteration_end, start + update);
  }

  result.iteration_time = Seconds(iteration_end);
  result.idle_device_seconds = Seconds(devices * iteration_end) - result.device_seconds;
  if (options.timelines) {
    for (auto& timeline : result.timelines) {
      std::stable_sort(timeline.begin(), timeline.end(),
                       [](const Activity& a, const Activity& b) { return a.start_s < b.start_s; });
    }
  }
  return result;
}

Plan plan_single_device(const graph::Graph& graph, int devices, int64_t global_batch) {
  Plan plan = plan_data_parallel(graph, 1, global_batch);
  plan.strategy = "single";
  plan.devices = devices;
  return plan;
}

}  // namespace burst::plan
