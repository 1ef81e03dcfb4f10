#pragma once
// A layer's training state as named tensor bytes (what checkpoints hold), and back:
// parameters and buffers under their module names, optimizer state under
// "<param>:<slot>" (SGD: momentum_buffer; Adam: step, exp_avg, exp_avg_sq, max_exp_avg_sq).
// Internal to lib/runtime; includes libtorch.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "burst/checkpoint/checkpoint_file.h"

namespace burst::runtime::detail {

// The optimizer's key for a parameter's state (libtorch 2.x keys it by the tensor's impl).
inline void* optimizer_state_key(const torch::Tensor& parameter) { return parameter.unsafeGetTensorImpl(); }

// The tensors of one parameter's optimizer state, by slot: SGD's momentum buffer; Adam's
// exp_avg, exp_avg_sq and max_exp_avg_sq. Undefined where the state has none (no momentum;
// no amsgrad). Adam's step count is not a tensor.
std::vector<torch::Tensor> optimizer_state_tensors(torch::optim::OptimizerParamState& state);
// A state of the same kind as `like`, holding `tensors` (by slot) and `like`'s step count.
std::unique_ptr<torch::optim::OptimizerParamState> optimizer_state_like(const torch::optim::OptimizerParamState& like,
                                                                        const std::vector<torch::Tensor>& tensors);

checkpoint::TensorBytes tensor_to_bytes(const std::string& name, const torch::Tensor& tensor);
torch::Tensor tensor_from_bytes(const checkpoint::TensorBytes& bytes);

// `module`'s state, each name prefixed with `prefix` ("<layer>."). `optimizer` may be null
// (a rank without parameters) or hold no state yet for a parameter (before the first step,
// or SGD without momentum): then no slots are listed for it.
std::vector<checkpoint::TensorBytes> layer_training_state(const torch::nn::Module& module,
                                                          const torch::optim::Optimizer* optimizer,
                                                          const std::string& prefix);

// Sets `module`'s parameters and buffers, and the optimizer's state for its parameters, from
// `state` (by full name). UserError naming the tensor when one is missing or has another
// shape or dtype; slots absent from `state` leave the optimizer without state for that
// parameter (as before its first step).
void load_layer_training_state(torch::nn::Module& module, torch::optim::Optimizer* optimizer,
                               const std::string& prefix,
                               const std::map<std::string, const checkpoint::TensorBytes*>& state);

}  // namespace burst::runtime::detail
