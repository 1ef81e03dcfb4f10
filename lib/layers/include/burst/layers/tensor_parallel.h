#pragma once
// Parts of tensor-split layers (burst/cost/tensor_split.h, docs/tensor-parallel.md): part p
// of k of a layer is built from the layer's whole one-device module, its weights sliced, so
// that the k parts together compute what the whole layer computes on one device. Includes
// libtorch.
//
//   column  linear, weight rows and bias of output features slice p: [B, .., in] ->
//           [B, .., out / k]; its input gradient is a partial sum, summed over the group
//           in backward (Megatron's "copy to region": identity forward).
//   row     linear, weight columns of input features slice p: [B, .., in / k] -> [B, .., out],
//           summed over the group in forward ("reduce from region": identity backward),
//           then the whole bias added once.
//   heads   self_attention, Q/K/V rows and out_proj columns of heads slice p; its input
//           gradient summed in backward, its output in forward, then out_proj's bias.
//   features, replicate and samples keep the whole module (a features split's dropout
//           draws by the element's index in the whole sample: RandomKey::features).
//
// The sums are blocking all-reduces made inside the layer's forward and backward, as split
// BatchNorm's statistics are (sync_batchnorm.h): the step program's TP_ALLREDUCE ops say
// where they fall.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "burst/cost/tensor_split.h"
#include "burst/graph/graph.h"
#include "burst/layers/layer_module.h"

namespace burst::layers {

// One tensor group's link, for the parts of a split layer; the caller owns it (at a stable
// address: backward reads it) for as long as the layer trains.
struct TensorGroupContext {
  // Sums a tensor over the group's ranks, in place, and returns when done.
  std::function<void(torch::Tensor&)> sum_over_group;
};

// Identity forward; backward sums the gradient over the group.
torch::Tensor copy_to_parts(const torch::Tensor& x, TensorGroupContext& group);
// Forward sums x over the group; backward passes the gradient on unchanged.
torch::Tensor sum_over_parts(const torch::Tensor& x, TensorGroupContext& group);

// How a tensor of a split layer is divided among its parts: not at all (each part holds it
// whole), or along `dim` of the whole tensor viewed as `chunks` equal blocks (a packed Q/K/V
// projection: 3), each block cut into `parts` slices, part p taking slice p of every block.
struct ParameterSlicing {
  bool sliced = false;
  int64_t dim = 0;
  int64_t chunks = 1;
};

// The slicing of parameter `name` (torch.nn's names: "weight", "in_proj_weight",
// "out_proj.weight", ...) of a layer under split `kind`; also for the optimizer state kept per
// parameter (a momentum buffer has its parameter's shape).
ParameterSlicing parameter_slicing(cost::SplitKind kind, const std::string& name);

// Part `part` of `parts` of `whole` (a copy), or `whole` itself when not sliced.
torch::Tensor slice_for_part(const torch::Tensor& whole, const ParameterSlicing& slicing, int32_t part,
                             int32_t parts);
// The whole tensor from every part's slice, in part order (the inverse of slice_for_part).
torch::Tensor join_parts(const std::vector<torch::Tensor>& slices, const ParameterSlicing& slicing);

// Part `part` of layer `id` under `split`, from `whole` (the layer's whole module,
// initialised, in its dtype): the module itself for splits that keep the weights whole;
// for column, row and heads splits a module holding the part's slices, under the same
// parameter names, whose sums go through `group` (which must outlive it).
std::unique_ptr<LayerModule> make_part_module(const graph::Graph& graph, graph::LayerId id,
                                              std::unique_ptr<LayerModule> whole, const cost::TensorSplit& split,
                                              int32_t part, TensorGroupContext* group);

}  // namespace burst::layers
