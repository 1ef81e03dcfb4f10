#pragma once
// What a planner, an evaluation or a simulation needs to know about the world.
#include "burst/cost/cost_model.h"
#include "burst/cost/network.h"
#include "burst/graph/graph.h"

namespace burst::plan {

// References: the caller keeps the three alive.
struct PlanContext {
  const graph::Graph& graph;
  const cost::CostModel& cost;
  const cost::NetworkModel& network;  // and through it the cluster
};

}  // namespace burst::plan
