#pragma once
// What a planner, an evaluation or a simulation needs to know about the world.
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/cost/network.h"
#include "burst/graph/graph.h"
#include "burst/util/error.h"

namespace burst::plan {

// References: the caller keeps the graph, the models and the network alive.
struct PlanContext {
  const graph::Graph& graph;
  // Every rank's cost model on a cluster of one kind. On a mixed cluster, the reference
  // model: what "one device" means in reports (amplification, one-device time), the
  // kind_costs entry of the kind the caller chose (burst's commands: the fastest).
  const cost::CostModel& cost;
  const cost::NetworkModel& network;  // and through it the cluster
  // On a cluster of several kinds, the cost model of each of cluster().kinds(), by index
  // (not owned). Empty: `cost` for every rank.
  std::vector<const cost::CostModel*> kind_costs = {};

  // The cost model of the device kind kinds()[kind] / of rank `rank`.
  const cost::CostModel& cost_of_kind(int kind) const {
    if (kind_costs.empty()) return cost;
    BURST_ASSERT(kind >= 0 && static_cast<size_t>(kind) < kind_costs.size() && kind_costs[static_cast<size_t>(kind)],
                 "a device kind without a cost model");
    return *kind_costs[static_cast<size_t>(kind)];
  }
  const cost::CostModel& cost_of(int rank) const {
    return kind_costs.empty() ? cost : cost_of_kind(network.cluster().kind_index(rank));
  }
  // Whether ranks may differ in speed (a mixed cluster with a model per kind).
  bool heterogeneous() const { return kind_costs.size() > 1; }
};

}  // namespace burst::plan
