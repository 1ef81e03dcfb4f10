#pragma once
// What a planner, an evaluation or a simulation needs to know about the world.
#include <optional>
#include <vector>

#include "burst/cost/cost_model.h"
#include "burst/cost/network.h"
#include "burst/cost/power.h"
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
  // The power model of each of cluster().kinds(), by index (cost/power.h). Empty, or
  // nullopt for a kind: its devices' energy is not modelled and their clocks stay at the
  // maximum. catalog_kind_power fills it for the catalog's kinds.
  std::vector<std::optional<cost::PowerSpec>> kind_power = {};

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
  // The power model of kind kinds()[kind] / of rank `rank`; null where none is known.
  const cost::PowerSpec* power_of_kind(int kind) const {
    if (kind < 0 || static_cast<size_t>(kind) >= kind_power.size() || !kind_power[static_cast<size_t>(kind)]) return nullptr;
    return &*kind_power[static_cast<size_t>(kind)];
  }
  const cost::PowerSpec* power_of(int rank) const { return power_of_kind(network.cluster().kind_index(rank)); }
  // Whether every device's energy is modelled.
  bool energy_known() const {
    for (int kind = 0; kind < static_cast<int>(network.cluster().kinds().size()); ++kind) {
      if (power_of_kind(kind) == nullptr) return false;
    }
    return true;
  }

  // Whether ranks may differ in speed (a mixed cluster with a model per kind).
  bool heterogeneous() const { return kind_costs.size() > 1; }
};

// The catalog's power model (cost::catalog_power) of each of the cluster's kinds, by index.
inline std::vector<std::optional<cost::PowerSpec>> catalog_kind_power(const cluster::Cluster& cluster) {
  std::vector<std::optional<cost::PowerSpec>> power;
  for (const std::string& kind : cluster.kinds()) power.push_back(cost::catalog_power(kind));
  return power;
}

}  // namespace burst::plan
