#pragma once
// Which ranks' copies of a layer's state make the whole layer: the parameters gathered for
// --save-params and checkpoints, and each element of the gradient norm counted once
// (gradient_norm.h). Internal to lib/runtime; includes libtorch (through layers).
#include <string>
#include <vector>

#include "burst/layers/tensor_parallel.h"
#include "burst/plan/plan.h"

namespace burst::runtime::detail {

// Whether layer `id`'s parts hold different slices of its weights (a divided tensor split).
bool divided(const plan::Plan& plan, graph::LayerId id);

// The ranks whose state makes layer `id`'s whole: its first shard's, or for a divided
// tensor split the parts of its first sample group, in part order (every other rank holds
// a copy of one of these).
std::vector<int> state_sources(const plan::Plan& plan, graph::LayerId id);

// How layer `id`'s tensor `key` ("weight"; optimizer state "weight:momentum_buffer") is
// divided among the sources: not at all but for divided splits (an Adam step count never).
layers::ParameterSlicing state_slicing(const plan::Plan& plan, graph::LayerId id, const std::string& key);

}  // namespace burst::runtime::detail
