#include "training_state.h"

#include <cstring>

#include <c10/util/string_utils.h>
#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::runtime::detail {
namespace {

const char* dtype_name(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat32: return "float32";
    case torch::kFloat64: return "float64";
    case torch::kInt64: return "int64";
    case torch::kInt32: return "int32";
    case torch::kUInt8: return "uint8";
    default: break;
  }
  throw UserError(fmt::format("cannot checkpoint a tensor of type {}", c10::toString(type)));
}

torch::ScalarType dtype_of(const std::string& name) {
  if (name == "float32") return torch::kFloat32;
  if (name == "float64") return torch::kFloat64;
  if (name == "int64") return torch::kInt64;
  if (name == "int32") return torch::kInt32;
  if (name == "uint8") return torch::kUInt8;
  throw UserError(fmt::format("unknown tensor dtype '{}'", name));
}

const checkpoint::TensorBytes& find(const std::map<std::string, const checkpoint::TensorBytes*>& state,
                                    const std::string& name) {
  const auto found = state.find(name);
  if (found == state.end()) throw UserError(fmt::format("the checkpoint has no tensor '{}'", name));
  return *found->second;
}

// `value` into `target` (same shape and dtype, else UserError naming `name`).
void assign(torch::Tensor& target, const checkpoint::TensorBytes& value, const std::string& name) {
  const torch::Tensor loaded = tensor_from_bytes(value);
  if (loaded.sizes() != target.sizes() || loaded.scalar_type() != target.scalar_type()) {
    throw UserError(fmt::format("checkpoint tensor '{}' is {} {}, the model's is {} {}", name, value.dtype,
                                fmt::join(value.shape, "x"), dtype_name(target.scalar_type()),
                                fmt::join(target.sizes(), "x")));
  }
  torch::NoGradGuard no_grad;
  target.copy_(loaded);
}

torch::Tensor slot(const std::map<std::string, const checkpoint::TensorBytes*>& state, const std::string& name,
                   const torch::Tensor& like) {
  const torch::Tensor loaded = tensor_from_bytes(find(state, name));
  if (loaded.sizes() != like.sizes()) {
    throw UserError(fmt::format("checkpoint tensor '{}' has shape {}, its parameter {}", name,
                                fmt::join(loaded.sizes(), "x"), fmt::join(like.sizes(), "x")));
  }
  return loaded.to(like.device());  // optimizer state lives where its parameter does
}


// Adam's and AdamW's states: the same slots in two unrelated classes.
template <typename AdamState>
std::unique_ptr<torch::optim::OptimizerParamState> adam_state_like(const AdamState& like,
                                                                   const std::vector<torch::Tensor>& tensors) {
  auto adam = std::make_unique<AdamState>();
  adam->step(like.step());
  adam->exp_avg(tensors.at(0));
  adam->exp_avg_sq(tensors.at(1));
  if (tensors.at(2).defined()) adam->max_exp_avg_sq(tensors.at(2));
  return adam;
}

template <typename AdamState>
void append_adam_state(const AdamState& adam, const std::string& name, std::vector<checkpoint::TensorBytes>& state) {
  state.push_back(tensor_to_bytes(name + ":step", torch::tensor(adam.step(), torch::kInt64)));
  state.push_back(tensor_to_bytes(name + ":exp_avg", adam.exp_avg()));
  state.push_back(tensor_to_bytes(name + ":exp_avg_sq", adam.exp_avg_sq()));
  if (adam.max_exp_avg_sq().defined()) state.push_back(tensor_to_bytes(name + ":max_exp_avg_sq", adam.max_exp_avg_sq()));
}

// The Adam (or AdamW) state of parameter `name` from a checkpoint, or null where it has none.
template <typename AdamState>
std::unique_ptr<AdamState> loaded_adam_state(const std::map<std::string, const checkpoint::TensorBytes*>& state,
                                             const std::string& name, const torch::Tensor& parameter) {
  if (state.count(name + ":step") == 0) return nullptr;
  auto adam = std::make_unique<AdamState>();
  adam->step(tensor_from_bytes(find(state, name + ":step")).item<int64_t>());
  adam->exp_avg(slot(state, name + ":exp_avg", parameter));
  adam->exp_avg_sq(slot(state, name + ":exp_avg_sq", parameter));
  if (state.count(name + ":max_exp_avg_sq") != 0) adam->max_exp_avg_sq(slot(state, name + ":max_exp_avg_sq", parameter));
  return adam;
}

}  // namespace

std::vector<torch::Tensor> optimizer_state_tensors(torch::optim::OptimizerParamState& state) {
  if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(&state)) return {sgd->momentum_buffer()};
  if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(&state)) {
    return {adamw->exp_avg(), adamw->exp_avg_sq(), adamw->max_exp_avg_sq()};
  }
  auto& adam = dynamic_cast<torch::optim::AdamParamState&>(state);
  return {adam.exp_avg(), adam.exp_avg_sq(), adam.max_exp_avg_sq()};
}

std::unique_ptr<torch::optim::OptimizerParamState> optimizer_state_like(const torch::optim::OptimizerParamState& like,
                                                                        const std::vector<torch::Tensor>& tensors) {
  if (dynamic_cast<const torch::optim::SGDParamState*>(&like) != nullptr) {
    auto sgd = std::make_unique<torch::optim::SGDParamState>();
    sgd->momentum_buffer(tensors.at(0));
    return sgd;
  }
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(&like)) {
    return adam_state_like(*adamw, tensors);
  }
  return adam_state_like(dynamic_cast<const torch::optim::AdamParamState&>(like), tensors);
}

checkpoint::TensorBytes tensor_to_bytes(const std::string& name, const torch::Tensor& tensor) {
  const torch::Tensor contiguous = tensor.detach().contiguous().cpu();  // a GPU tensor's bytes, copied out
  checkpoint::TensorBytes bytes;
  bytes.name = name;
  bytes.dtype = dtype_name(contiguous.scalar_type());
  bytes.shape = contiguous.sizes().vec();
  bytes.bytes.assign(static_cast<const char*>(contiguous.data_ptr()), contiguous.nbytes());
  return bytes;
}

torch::Tensor tensor_from_bytes(const checkpoint::TensorBytes& bytes) {
  torch::Tensor tensor = torch::empty(bytes.shape, torch::TensorOptions().dtype(dtype_of(bytes.dtype)));
  BURST_ASSERT(tensor.nbytes() == bytes.bytes.size(), "a checked checkpoint tensor has the bytes of its shape");
  std::memcpy(tensor.data_ptr(), bytes.bytes.data(), bytes.bytes.size());
  return tensor;
}

std::vector<checkpoint::TensorBytes> layer_training_state(const torch::nn::Module& module,
                                                          const torch::optim::Optimizer* optimizer,
                                                          const std::string& prefix) {
  std::vector<checkpoint::TensorBytes> state;
  for (const auto& item : module.named_parameters()) {
    const std::string name = prefix + item.key();
    state.push_back(tensor_to_bytes(name, item.value()));
    if (optimizer == nullptr) continue;
    const auto found = optimizer->state().find(optimizer_state_key(item.value()));
    if (found == optimizer->state().end()) continue;
    if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(found->second.get())) {
      if (sgd->momentum_buffer().defined()) state.push_back(tensor_to_bytes(name + ":momentum_buffer", sgd->momentum_buffer()));
    } else if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(found->second.get())) {
      append_adam_state(*adam, name, state);
    } else if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(found->second.get())) {
      append_adam_state(*adamw, name, state);
    }
  }
  for (const auto& item : module.named_buffers()) state.push_back(tensor_to_bytes(prefix + item.key(), item.value()));
  return state;
}

void load_layer_training_state(torch::nn::Module& module, torch::optim::Optimizer* optimizer,
                               const std::string& prefix,
                               const std::map<std::string, const checkpoint::TensorBytes*>& state) {
  for (auto& item : module.named_parameters()) {
    const std::string name = prefix + item.key();
    assign(item.value(), find(state, name), name);
    if (optimizer == nullptr) continue;
    void* const key = optimizer_state_key(item.value());
    optimizer->state().erase(key);
    if (dynamic_cast<torch::optim::SGD*>(optimizer) != nullptr) {
      if (state.count(name + ":momentum_buffer") == 0) continue;
      auto sgd = std::make_unique<torch::optim::SGDParamState>();
      sgd->momentum_buffer(slot(state, name + ":momentum_buffer", item.value()));
      optimizer->state()[key] = std::move(sgd);
    } else if (dynamic_cast<torch::optim::Adam*>(optimizer) != nullptr) {
      if (auto adam = loaded_adam_state<torch::optim::AdamParamState>(state, name, item.value())) {
        optimizer->state()[key] = std::move(adam);
      }
    } else if (dynamic_cast<torch::optim::AdamW*>(optimizer) != nullptr) {
      if (auto adamw = loaded_adam_state<torch::optim::AdamWParamState>(state, name, item.value())) {
        optimizer->state()[key] = std::move(adamw);
      }
    }
  }
  for (auto& item : module.named_buffers()) {
    const std::string name = prefix + item.key();
    assign(item.value(), find(state, name), name);
  }
}

}  // namespace burst::runtime::detail
