#pragma once
// Recompute units: the runs of consecutive layers that full recomputation
// (cost::Recompute::Full) runs forward again before their backward, keeping only what enters
// them (docs/step-program.md, "Recomputation"). A unit starts only where exactly one tensor
// crosses (plan::boundary_crossings: a residual stream, a CNN's trunk), so what a unit keeps
// is one tensor. Which of those places start a unit is chosen as Chen et al.'s sqrt(n)
// checkpointing does, for the graph's own sizes: the fewest bytes of kept inputs plus the
// largest unit's activations (what one unit holds while it is recomputed and run backward),
// per sample. No libtorch.
#include <vector>

#include "burst/graph/graph.h"
#include "burst/util/units.h"

namespace burst::program {

struct RecomputeUnits {
  // The first layer of every unit after the first, ascending (the first starts at layer 0).
  std::vector<graph::LayerId> starts;
  // By layer: its unit's index.
  std::vector<int32_t> unit_of;
  // By layer: whether a later unit reads its output (a unit's kept input: its checkpoint).
  std::vector<bool> kept;
  size_t count() const { return starts.size() + 1; }
};

// The units of `graph` (deterministic: the same graph, the same units).
RecomputeUnits recompute_units(const graph::Graph& graph);

// Per sample, in the graph's fp32 bytes: what a layer keeps for its backward when nothing is
// recomputed (its output and what it keeps inside, cost::saved_inside_per_sample).
Bytes kept_per_sample(const graph::Graph& graph, graph::LayerId id);

}  // namespace burst::program
