#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "burst/graph/op.h"

namespace burst::graph {

// A layer as written by a user or the zoo: a name unique in its model, the op with its
// attributes, and the names of the layers whose outputs it consumes (in order).
struct LayerSpec {
  std::string name;
  std::vector<std::string> inputs;
  Attrs attrs;

  OpKind op() const { return op_kind(attrs); }
};

// What shape inference derives for one layer, all per sample.
//  - params: trainable parameters owned by the layer (a tied weight counts at its owner).
//  - forward_flops: FLOPs of the forward pass for one sample; a multiply-add counts as
//    2 FLOPs (see docs/model-format.md for every op's formula).
//  - output_bytes: size of the output activation for one sample.
struct LayerInfo {
  Shape output_shape;
  DType output_dtype = DType::Float32;
  int64_t params = 0;
  // Parameters one token's forward reads: params, except in a moe layer (the router, top_k
  // experts and the shared ones) -- the "active parameters" of a mixture of experts.
  int64_t active_params = 0;
  int64_t forward_flops = 0;
  int64_t output_bytes = 0;
};

}  // namespace burst::graph
