#pragma once
// What one profile measurement runs (internal to lib/profiler): a way to build the module
// (a whole layer, or one part of it under a tensor split) and its inputs at a batch.
// Includes libtorch.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "burst/layers/layer_module.h"

namespace burst::profiler::detail {

struct Subject {
  // A new module, initialised from torch's generator (seed it first for equal weights).
  std::function<std::unique_ptr<layers::LayerModule>()> build;
  // Random inputs for forward() at `batch`: the graph inputs first (then a loss's labels).
  std::function<std::vector<torch::Tensor>(int64_t batch)> inputs;
  size_t graph_inputs = 0;  // how many of `inputs` are graph inputs (differentiable if float)
};

}  // namespace burst::profiler::detail
