#pragma once
// Hand-written plans for tests: one placement per layer, in graph order.
#include <cstdint>
#include <string>
#include <vector>

#include "burst/graph/graph.h"
#include "burst/plan/plan.h"
#include "burst/util/error.h"

namespace burst::plan::testing {

// Samples [begin, end) on `rank`.
inline cost::Shard shard(int rank, int64_t begin, int64_t end) { return cost::Shard{rank, {begin, end}}; }

// A plan (strategy "hand") from {layer: [shard, ...]} in graph order.
inline Plan hand_plan(const graph::Graph& graph, int devices, int64_t batch,
                      const std::vector<std::vector<cost::Shard>>& shards) {
  Plan plan;
  plan.model = graph.name();
  plan.strategy = "hand";
  plan.global_batch = batch;
  plan.devices = devices;
  for (size_t id = 0; id < graph.size(); ++id) {
    plan.layers.push_back(LayerPlacement{graph.layer(static_cast<graph::LayerId>(id)).name, shards.at(id)});
  }
  return plan;
}

// Tensor-split shards: `ranks` in sample groups of `parts` consecutive ranks, the groups
// splitting [0, batch) evenly (plan::even_split over the groups).
inline std::vector<cost::Shard> split_shards(const std::vector<int>& ranks, int32_t parts, int64_t batch) {
  std::vector<int> firsts;
  for (size_t i = 0; i < ranks.size(); i += static_cast<size_t>(parts)) firsts.push_back(ranks[i]);
  std::vector<cost::Shard> shards;
  const std::vector<cost::Shard> groups = even_split(firsts, batch);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t p = 0; p < static_cast<size_t>(parts); ++p) {
      shards.push_back(cost::Shard{ranks[g * static_cast<size_t>(parts) + p], groups[g].samples});
    }
  }
  return shards;
}

// Sets layer `name`'s placement to a tensor split of `ranks` (split_shards).
inline void place_split(Plan& plan, const std::string& name, cost::SplitKind kind, const std::vector<int>& ranks,
                        int32_t parts) {
  for (LayerPlacement& layer : plan.layers) {
    if (layer.layer != name) continue;
    layer.shards = split_shards(ranks, parts, plan.micro_batch());
    layer.split = cost::TensorSplit{kind, parts};
    return;
  }
  BURST_ASSERT(false, "place_split: no such layer");
}

}  // namespace burst::plan::testing
