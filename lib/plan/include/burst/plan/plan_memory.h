#pragma once
// The memory each device of a plan needs (cost/memory.h's per-layer counts summed over the
// layers it holds, at its shard's batch times the micro-batches its stage keeps in flight),
// and the check that a plan fits its devices.
#include <string>
#include <vector>

#include "burst/cost/memory.h"
#include "burst/plan/plan.h"

namespace burst::plan {

struct DeviceMemory {
  int rank = 0;
  cost::LayerMemory use;
  graph::LayerId largest_layer = 0;  // the layer that takes the most of it
  Bytes largest_layer_bytes;
};

// One entry per rank of the plan's cluster (plan.devices), rank order; a rank that holds
// no layer needs nothing.
std::vector<DeviceMemory> plan_memory(const Plan& plan, const graph::Graph& graph, cost::Optimizer optimizer);

// The rank that needs the most (the lowest such rank).
const DeviceMemory& peak_memory(const std::vector<DeviceMemory>& devices);

// What a device holds: its kind and capacity.
struct MemoryCapacity {
  std::string device;  // "a100", ...
  Bytes capacity;
};

// One line: "rank 0 needs 12.3 GB (weights ..., gradients ..., optimizer state ...,
// activations ...; layer 'fc1' the most, 4.00 GB) of 40.0 GB per a100".
std::string memory_text(const DeviceMemory& peak, const graph::Graph& graph, const MemoryCapacity& capacity);

// A plan that fits its devices' memory: `planned` itself if it fits; else data parallelism
// on the same devices if that fits, with a note on why (data parallelism holds the fewest
// samples per device); else UserError "no plan fits in memory" with the smallest requirement
// found, its rank and largest layer. `strategy` names `planned` in messages ("burst").
struct FittedPlan {
  Plan plan;
  std::vector<DeviceMemory> memory;  // per rank
  std::string note;                  // why the plan is not `planned`; empty when it is
};
FittedPlan fit_in_memory(Plan planned, const std::string& strategy, const graph::Graph& graph,
                         cost::Optimizer optimizer, const MemoryCapacity& capacity);

}  // namespace burst::plan
