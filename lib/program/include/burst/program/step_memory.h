#pragma once
// The memory each device needs for one training step of a plan, and the check that a plan
// fits its devices (docs/cost-model.md, "Memory"). Per rank: cost/memory.h's counts of the
// layers it holds, at the step's precision; weights, gradients and optimizer state sharded
// by ZeRO over each layer's data-parallel group (its sample groups); activations at its
// shard's batch times the micro-batches its stage keeps in flight, less what recomputation
// drops, plus what recomputation holds while it runs. No libtorch.
#include <string>
#include <utility>
#include <vector>

#include "burst/cost/memory.h"
#include "burst/plan/plan.h"
#include "burst/program/program_options.h"

namespace burst::program {

struct DeviceMemory {
  int rank = 0;
  cost::LayerMemory use;
  graph::LayerId largest_layer = 0;  // the layer that takes the most of it
  Bytes largest_layer_bytes;
};

// One entry per rank of the plan's cluster (plan.devices), rank order; a rank that holds
// no layer needs nothing. What the step's options change:
//  - precision: value_bytes per weight, gradient and activation, and the fp32 master copy;
//  - zero_stage: cost::shard_state over each layer's sample groups; stage 3 adds, as
//    communication buffers (LayerMemory::buffers), the gathered weights of the two largest
//    layers a rank holds (the one computing and the one being gathered ahead, as FSDP's
//    prefetch);
//  - context parallelism: each rank's token share, and the largest attention's four ring
//    blocks of keys and values as communication buffers;
//  - recompute: selective keeps no attention probabilities, and holds one attention's for
//    one micro-batch while it is recomputed; full keeps only what enters each recompute unit
//    (recompute_units.h) for every micro-batch in flight, and holds the largest unit's
//    activations for one micro-batch.
std::vector<DeviceMemory> plan_memory(const plan::Plan& plan, const graph::Graph& graph, cost::Optimizer optimizer,
                                      const ProgramOptions& options = {});

// Some ranks of a plan, with where their shards are: made once, counted under many step
// options by a search that knows the other ranks mirror these (a 3-D plan's data-parallel
// replicas).
struct RankSelection {
  std::vector<int> ranks;                         // ascending
  std::vector<char> selected;                     // by rank
  std::vector<std::vector<int32_t>> shards;       // by layer: indices of the selected ranks' shards
};
RankSelection select_ranks(const plan::Plan& plan, const std::vector<int>& ranks);

// The same counts for the selected ranks only, one entry each, in rank order.
std::vector<DeviceMemory> plan_memory_of_ranks(const plan::Plan& plan, const graph::Graph& graph,
                                               cost::Optimizer optimizer, const ProgramOptions& options,
                                               const RankSelection& selection);

// The most model state (weights, gradients, optimizer state) a device must hold for one
// layer in any plan that splits no layer's tensors: the layer's whole state, sharded by
// the step's ZeRO stage over as many replicas as there are `devices` (the most any plan
// can give it). A lower bound: when it exceeds a device's capacity, no plan without tensor
// splits fits, whatever its placement.
struct LayerStateBound {
  graph::LayerId layer = 0;
  Bytes bytes;
};
LayerStateBound largest_unsplit_layer_state(const graph::Graph& graph, cost::Optimizer optimizer,
                                            const ProgramOptions& options, int devices);

// A lower bound on the model state some device holds in any pipeline of at most
// `max_stages` stages of consecutive layers that splits no layer's tensors: the largest
// stage holds at least 1/max_stages of the whole model's state unsharded, and a ZeRO-sharded
// term is at least its whole over `devices`; shard_state(whole, ZeRO, devices) / max_stages
// is below both.
Bytes unsplit_pipeline_state_bound(const graph::Graph& graph, cost::Optimizer optimizer, const ProgramOptions& options,
                                   int devices, int max_stages);

// The rank that needs the most (the lowest such rank).
const DeviceMemory& peak_memory(const std::vector<DeviceMemory>& devices);

// What a device holds: its kind and capacity. On a mixed cluster each rank has its own
// (rank_capacity, rank_device), and `device`/`capacity` are the largest kind's: what any
// device can hold, for bounds that no plan can beat.
struct MemoryCapacity {
  MemoryCapacity() = default;
  MemoryCapacity(std::string device_kind, Bytes bytes) : device(std::move(device_kind)), capacity(bytes) {}

  std::string device;  // "a100", ...
  Bytes capacity;
  std::vector<Bytes> rank_capacity;       // empty: `capacity` for every rank
  std::vector<std::string> rank_device;   // empty: `device` for every rank

  Bytes of(int rank) const {
    return rank_capacity.empty() ? capacity : rank_capacity.at(static_cast<size_t>(rank));
  }
  const std::string& device_of(int rank) const {
    return rank_device.empty() ? device : rank_device.at(static_cast<size_t>(rank));
  }
};

// Whether every rank's need is within its own capacity.
bool fits(const std::vector<DeviceMemory>& memory, const MemoryCapacity& capacity);
// The rank whose need is the largest share of its own capacity (the lowest such rank): the
// peak on a cluster of one kind.
const DeviceMemory& tightest_memory(const std::vector<DeviceMemory>& memory, const MemoryCapacity& capacity);

// One line: "rank 0 needs 12.3 GB (weights ..., gradients ..., optimizer state ...,
// activations ...; layer 'fc1' the most, 4.00 GB) of 40.0 GB per a100" (the rank's own
// capacity and kind).
std::string memory_text(const DeviceMemory& peak, const graph::Graph& graph, const MemoryCapacity& capacity);

// A plan that fits its devices' memory: `planned` itself if it fits; else data parallelism
// on the same devices if that fits, with a note on why (data parallelism holds the fewest
// samples per device); else UserError "no plan fits in memory" with the smallest requirement
// found, its rank and largest layer. `strategy` names `planned` in messages ("burst").
struct FittedPlan {
  plan::Plan plan;
  std::vector<DeviceMemory> memory;  // per rank
  std::string note;                  // why the plan is not `planned`; empty when it is
};
FittedPlan fit_in_memory(plan::Plan planned, const std::string& strategy, const graph::Graph& graph,
                         cost::Optimizer optimizer, const MemoryCapacity& capacity, const ProgramOptions& options = {});

}  // namespace burst::program
