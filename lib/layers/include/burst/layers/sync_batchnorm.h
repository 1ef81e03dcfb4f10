#pragma once
// BatchNorm2d whose batch statistics cover the layer's whole share of the global batch,
// across all the ranks that run it, so a split layer normalises exactly as one device
// would (docs/architecture.md, invariant 1). Includes libtorch.
//
// Forward: one all-reduce of the per-channel sums of x and x^2 (float64), giving the mean
// and the biased variance of the whole batch; y in one fused pass. Backward: one all-reduce of the per-channel
// sums of dy and dy * x_hat, since every sample's normalisation depends on all others.
// The weight and bias gradients stay local sums: the layer's gradient all-reduce adds them.
// Running statistics move as torch's do (momentum, unbiased variance), identically on
// every rank of the group.
//
// Here rather than in the runtime so that the profiler can time a split layer's compute as
// the runtime runs it (with a sum over a group of one).
#include <functional>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace burst::layers {

// One split BatchNorm layer's link to its group; the caller owns it (at a stable address:
// backward reads it) for as long as the layer trains.
struct SyncBatchNormContext {
  // Sums a small per-channel tensor over the layer's ranks, in place, and returns when done
  // (the runtime: an all-reduce in the layer's group). Identity for a group of one.
  std::function<void(torch::Tensor&)> sum_over_group;
  int64_t batch = 0;  // samples the group holds together: the global batch
  double count = 0;   // samples x H x W over the group in the last forward
};

// `x`: [b, C, H, W], this rank's samples. `module`: the layer's torch BatchNorm2d (its
// weight, bias, running_mean, running_var, num_batches_tracked). In training mode only.
torch::Tensor sync_batchnorm_forward(const torch::Tensor& x, torch::nn::Module& module, double eps,
                                     double momentum, SyncBatchNormContext& context);

}  // namespace burst::layers
