#pragma once
// Internal: per-layer shape inference and cost formulas (see docs/model-format.md).
#include <vector>

#include "burst/graph/layer.h"

namespace burst::graph {

// Infers `layer`'s output shape, dtype, params, forward FLOPs and output bytes (per sample)
// from its inputs' infos, given in the order of layer.inputs. The input count has already
// been checked. A tied linear layer counts only its bias here. Throws UserError
// "layer 'NAME' (OP): REASON" for shape mismatches, non-positive sizes and overflow.
LayerInfo infer_layer(const LayerSpec& layer, const std::vector<const LayerInfo*>& inputs);

}  // namespace burst::graph
