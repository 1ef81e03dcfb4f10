#pragma once
// Small worlds for planner, timing and simulator tests: clusters with round link numbers and fake per-layer costs.
#include <map>
#include <memory>
#include <string>

#include "burst/cluster/cluster.h"
#include "burst/cost/fake_cost_model.h"
#include "burst/cost/network.h"
#include "burst/graph/graph.h"
#include "burst/plan/plan_context.h"

namespace burst::plan::testing {

// One node of `devices` ranks (or nodes of `per_node`), links of `bytes_per_second` and
// `latency_s` both inside and between nodes.
inline cluster::Cluster test_cluster(int devices, double bytes_per_second, double latency_s,
                                     int per_node = 0) {
  cluster::ClusterSpec spec;
  spec.name = "test";
  spec.device = "test";
  spec.devices_per_node = per_node > 0 ? per_node : devices;
  spec.nodes = (devices + spec.devices_per_node - 1) / spec.devices_per_node;
  spec.devices = devices;
  spec.intra_node = {Bandwidth(bytes_per_second), Seconds(latency_s)};
  spec.inter_node = {Bandwidth(bytes_per_second), Seconds(latency_s)};
  return cluster::Cluster(spec);
}

// Milliseconds as the fake cost model's linear times.
inline cost::LinearTime ms(double fixed, double per_sample = 0) {
  return {Seconds::from_ms(fixed), Seconds::from_ms(per_sample)};
}

// Owns what a PlanContext refers to.
struct World {
  World(graph::Graph g, cluster::Cluster c, std::map<std::string, cost::FakeLayerCost> costs,
        std::map<std::string, Seconds> updates = {}, std::map<std::string, cost::FakeLayerCost> splits = {})
      : graph(std::move(g)),
        cost("test", std::move(costs), std::move(updates), std::move(splits)),
        network(std::move(c)) {}
  PlanContext context() const { return PlanContext{graph, cost, network}; }

  graph::Graph graph;
  cost::FakeCostModel cost;
  cost::NetworkModel network;
};

}  // namespace burst::plan::testing
