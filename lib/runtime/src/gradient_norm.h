#pragma once
// Gradient clipping by the global norm (ProgramOptions::clip_grad_norm), as
// torch.nn.utils.clip_grad_norm_ on one device: norm = sqrt(sum of every parameter
// gradient's squared elements), and every gradient times min(1, clip / (norm + 1e-6)).
//
// A rank's gradients hold parts of the model's, some held by several ranks: a layer on
// several sample groups has its summed gradient on each (after WAIT_ALLREDUCE), a divided
// tensor split has slices on its parts, and copies of what it does not slice, a tied
// embedding's weight lives on its heads' ranks too, and under ZeRO a bucket's summed
// gradient is cut into its group's shards. Each rank sums the squares of the elements it is
// the one to count (state_sources.h: the first sample group's parts, a part's copy counted
// by part 0; under ZeRO each shard of a bucket, a part's copy again by part 0's group), so
// the world sum counts each element of the model's gradients once. Internal to lib/runtime;
// includes libtorch.
#include "executor_state.h"

namespace burst::runtime::detail {

// This rank's share of the squared global gradient norm (after its gradient waits).
double local_squared_gradient_norm(const ExecutorState& s);

// Scales every gradient the optimizer will read (ZeRO: the shards') by `factor`.
void scale_gradients(torch::optim::Optimizer& optimizer, double factor);

// torch's clip_grad_norm_ factor: min(1, clip / (norm + 1e-6)).
double clip_factor(double clip, double norm);

}  // namespace burst::runtime::detail
