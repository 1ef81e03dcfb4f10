#pragma once
// Hand-written plans for tests: one placement per layer, in graph order.
#include <cstdint>
#include <vector>

#include "burst/graph/graph.h"
#include "burst/plan/plan.h"

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

}  // namespace burst::plan::testing
