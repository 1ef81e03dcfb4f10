#include "burst/plan/plan.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/hash.h"

namespace burst::plan {

void validate_plan(const Plan& plan, const graph::Graph& graph, const cluster::Cluster& cluster) {
  if (plan.model != graph.name()) {
    throw UserError(fmt::format("plan is for model '{}', not '{}'", plan.model, graph.name()));
  }
  if (plan.layers.size() != graph.size()) {
    throw UserError(fmt::format("plan has {} layers but model '{}' has {}", plan.layers.size(),
                                graph.name(), graph.size()));
  }
  if (plan.global_batch < 1) {
    throw UserError(fmt::format("plan: global batch must be at least 1, got {}", plan.global_batch));
  }
  for (size_t id = 0; id < plan.layers.size(); ++id) {
    const LayerPlacement& placement = plan.layers[id];
    const std::string& expected = graph.layer(static_cast<graph::LayerId>(id)).name;
    if (placement.layer != expected) {
      throw UserError(fmt::format("plan layer #{} is '{}' but the model's layer #{} is '{}'", id,
                                  placement.layer, id, expected));
    }
    const std::string where = fmt::format("plan layer '{}'", placement.layer);
    if (placement.shards.empty()) throw UserError(where + ": runs on no rank");
    std::set<int> ranks;
    for (const cost::Shard& shard : placement.shards) {
      if (shard.rank < 0 || shard.rank >= cluster.size()) {
        throw UserError(fmt::format("{}: rank {} is not in the cluster of {} devices", where,
                                    shard.rank, cluster.size()));
      }
      if (!ranks.insert(shard.rank).second) {
        throw UserError(fmt::format("{}: rank {} appears twice", where, shard.rank));
      }
    }
    // Coverage: sorted by start, the ranges must tile [0, B) with no gap or overlap.
    std::vector<cost::Shard> sorted = placement.shards;
    std::sort(sorted.begin(), sorted.end(), [](const cost::Shard& a, const cost::Shard& b) {
      return a.samples.begin < b.samples.begin;
    });
    int64_t next = 0;
    for (const cost::Shard& shard : sorted) {
      if (shard.samples.size() <= 0) {
        throw UserError(fmt::format("{}: rank {} has the empty range [{}, {})", where, shard.rank,
                                    shard.samples.begin, shard.samples.end));
      }
      if (shard.samples.begin != next) {
        throw UserError(fmt::format("{}: samples [{}, {}) are {}", where, std::min(next, shard.samples.begin),
                                    std::max(next, shard.samples.begin),
                                    shard.samples.begin > next ? "covered by no rank" : "covered twice"));
      }
      next = shard.samples.end;
    }
    if (next != plan.global_batch) {
      throw UserError(fmt::format("{}: samples [{}, {}) are {}", where, std::min(next, plan.global_batch),
                                  std::max(next, plan.global_batch),
                                  next < plan.global_batch ? "covered by no rank" : "beyond the global batch"));
    }
  }
}

std::vector<cost::Transfer> activation_transfers(const Plan& plan, graph::LayerId producer,
                                                 graph::LayerId consumer) {
  return cost::reshard_transfers(plan.layers.at(static_cast<size_t>(producer)).shards,
                                 plan.layers.at(static_cast<size_t>(consumer)).shards);
}

std::vector<int> weight_holders(const Plan& plan, const graph::Graph& graph, graph::LayerId layer) {
  std::vector<int> ranks;
  for (const cost::Shard& shard : plan.layers.at(static_cast<size_t>(layer)).shards) ranks.push_back(shard.rank);
  for (const graph::LayerId head : graph.tied_heads(layer)) {
    for (const cost::Shard& shard : plan.layers.at(static_cast<size_t>(head)).shards) ranks.push_back(shard.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::vector<int> sync_group(const Plan& plan, const graph::Graph& graph, graph::LayerId layer) {
  if (graph.info(layer).params == 0) return {};
  std::vector<int> ranks = weight_holders(plan, graph, layer);
  if (ranks.size() < 2) return {};
  return ranks;
}

std::vector<cost::Shard> even_split(const std::vector<int>& ranks, int64_t batch) {
  BURST_ASSERT(!ranks.empty() && batch >= static_cast<int64_t>(ranks.size()),
               "even_split needs 1 <= ranks <= batch");
  const auto count = static_cast<int64_t>(ranks.size());
  std::vector<cost::Shard> shards;
  int64_t begin = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t size = batch / count + (i < batch % count ? 1 : 0);
    shards.push_back(cost::Shard{ranks[static_cast<size_t>(i)], {begin, begin + size}});
    begin += size;
  }
  return shards;
}

Plan plan_data_parallel(const graph::Graph& graph, int devices, int64_t global_batch) {
  if (devices < 1) throw UserError(fmt::format("devices must be at least 1, got {}", devices));
  if (global_batch < 1) {
    throw UserError(fmt::format("global batch must be at least 1, got {}", global_batch));
  }
  // More devices than samples would leave some with nothing to do: they stay idle.
  const int used = static_cast<int>(std::min<int64_t>(devices, global_batch));
  std::vector<int> ranks(static_cast<size_t>(used));
  for (int r = 0; r < used; ++r) ranks[static_cast<size_t>(r)] = r;
  const std::vector<cost::Shard> shards = even_split(ranks, global_batch);
  Plan plan;
  plan.model = graph.name();
  plan.strategy = "dp";
  plan.global_batch = global_batch;
  plan.devices = devices;
  for (const graph::LayerSpec& layer : graph.layers()) plan.layers.push_back({layer.name, shards});
  return plan;
}

std::string placement_fingerprint(const Plan& plan) {
  std::string text = std::to_string(plan.devices);
  for (const LayerPlacement& layer : plan.layers) {
    for (const cost::Shard& shard : layer.shards) {
      text += fmt::format(";{}:{}-{}", shard.rank, shard.samples.begin, shard.samples.end);
    }
    text += '|';
  }
  return util::fnv1a_hex(text);
}

}  // namespace burst::plan
