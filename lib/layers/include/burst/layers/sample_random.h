#pragma once
// Placement-invariant randomness (docs/runtime.md, "Randomness"; docs/architecture.md,
// invariant 1). A plan splits a layer's batch over ranks in any way, so a random op must not
// draw from a per-process generator: the draws of sample i would then depend on which rank
// computes it. Instead every random op draws from a counter-based generator (Philox
// 4x32-10, as torch's CUDA dropout) keyed by
//   key     = hash(run seed, training step, layer id)
//   counter = (global sample index, element index within the sample)
// so sample i's draws are the same on whichever rank computes it, under any plan, worker
// count, or resume onto another layout. Element j of a sample is word j mod 4 of Philox
// block j / 4. An op that holds a slice of a sample's elements (a tensor split's features
// slice, a heads split's attention weights: docs/tensor-parallel.md) draws each element by
// its index in the whole sample (RandomKey::features), so its draws are those the whole
// layer makes on one device. Includes libtorch.
#include <cstdint>

#include <torch/types.h>

#include "burst/graph/graph.h"

namespace burst::layers {

// What a forward pass's random draws are keyed by, beside the layer.
struct RandomKey {
  uint64_t seed = 0;         // the run's seed
  int64_t step = 0;          // the training step, 0-based, counted across resumes
  int64_t first_sample = 0;  // global batch index of the batch's row 0
  // A slice of each sample's elements: the tensor's last axis holds elements
  // [feature_begin, feature_begin + n) of a last axis of `features` in the whole sample (n:
  // the tensor's last axis), so element (t, f) of a sample is number t x features +
  // feature_begin + f of its stream. 0: the tensor holds whole samples.
  int64_t features = 0;
  int64_t feature_begin = 0;
};

// Dropout of `x` ([B, ...], floating point): each element kept with probability 1 - p and
// scaled by 1 / (1 - p), zeroed otherwise, as torch.dropout in training mode; row b's draws
// are those of global sample key.first_sample + b of layer `layer`. Differentiable in x (the
// gradient is the same mask). p must be in [0, 1); p = 0 returns x.
torch::Tensor sample_dropout(const torch::Tensor& x, double p, const RandomKey& key, graph::LayerId layer);

// The mask sample_dropout multiplies by: x's shape and dtype, values 0 or 1 / (1 - p).
torch::Tensor sample_dropout_mask(const torch::Tensor& x, double p, const RandomKey& key, graph::LayerId layer);

}  // namespace burst::layers
