#pragma once
// One part of a tensor-split layer as a profile subject (docs/profiler.md, "Tensor
// splits"; internal to lib/profiler): the part's module, sliced from the whole layer as the
// runtime slices it (layers/tensor_parallel.h), with its sums over a group of one (the
// all-reduces are the network model's). Includes libtorch.
#include <cstdint>
#include <vector>

#include "burst/cost/profile.h"
#include "burst/cost/tensor_split.h"
#include "burst/graph/graph.h"
#include "burst/layers/tensor_parallel.h"
#include "subject.h"

namespace burst::profiler::detail {

// The splits of layer `id` whose parts the profiler measures for `parts`: a linear's
// column split when parts divides its output features and row split when it divides its
// input features (not a tied linear), a self_attention's heads split when it divides its
// heads; none for other layers.
std::vector<cost::TensorSplit> part_splits(const graph::Graph& graph, graph::LayerId id, int32_t parts);

// Part 0 of layer `id` under `split` (the parts differ only in their slices' values);
// `group` sums nothing and must outlive the modules built.
Subject part_subject(const graph::Graph& graph, graph::LayerId id, const cost::TensorSplit& split,
                     layers::TensorGroupContext& group);

// `whole` (the layer's entry skeleton) as one part's: the split, and its work per sample
// (a k-th of the FLOPs; a row part's input and a column part's output sliced; the part's
// parameters).
cost::ProfileEntry part_entry(cost::ProfileEntry whole, const graph::Graph& graph, graph::LayerId id,
                              const cost::TensorSplit& split);

}  // namespace burst::profiler::detail
