#include "burst/layers/tensor_parallel.h"

#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "torch_modules.h"

namespace burst::layers {
namespace {

using cost::SplitKind;

TensorGroupContext* context_of(torch::autograd::AutogradContext* ctx) {
  return reinterpret_cast<TensorGroupContext*>(ctx->saved_data["group"].toInt());
}

int64_t address_of(TensorGroupContext& group) {
  static_assert(sizeof(int64_t) >= sizeof(void*), "pointers fit in int64");
  return reinterpret_cast<int64_t>(&group);
}

// A contiguous copy of `x` summed over the group.
torch::Tensor summed(const torch::Tensor& x, TensorGroupContext& group) {
  torch::Tensor sum = x.clone(at::MemoryFormat::Contiguous);
  group.sum_over_group(sum);
  return sum;
}

class CopyToParts : public torch::autograd::Function<CopyToParts> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, int64_t group) {
    ctx->saved_data["group"] = group;
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list gradients) {
    return {summed(gradients[0], *context_of(ctx)), torch::Tensor()};
  }
};

class SumOverParts : public torch::autograd::Function<SumOverParts> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x, int64_t group) {
    return summed(x, *reinterpret_cast<TensorGroupContext*>(group));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list gradients) {
    return {gradients[0], torch::Tensor()};
  }
};

// A handle on the module's parameter `name` (sharing its storage), undefined when absent.
torch::Tensor parameter(torch::nn::Module& module, const std::string& name) {
  const auto all = module.named_parameters();
  const torch::Tensor* found = all.find(name);
  return found != nullptr ? *found : torch::Tensor();
}

// Column and row parallel linear layers (see the header).
class LinearPart final : public LayerModule {
 public:
  LinearPart(torch::nn::Module& module, SplitKind kind, TensorGroupContext& group)
      : LayerModule(module.shared_from_this(), 1),
        weight_(parameter(module, "weight")),
        bias_(parameter(module, "bias")),
        kind_(kind),
        group_(group) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey&) override {
    namespace F = torch::nn::functional;
    if (kind_ == SplitKind::Column) return F::linear(copy_to_parts(inputs[0], group_), weight_, bias_);
    torch::Tensor y = sum_over_parts(F::linear(inputs[0], weight_), group_);  // row: [.., out]
    return bias_.defined() ? y + bias_ : y;
  }
  torch::Tensor weight_;
  torch::Tensor bias_;
  SplitKind kind_;
  TensorGroupContext& group_;
};

// Head-parallel self-attention (see the header).
class AttentionPart final : public LayerModule {
 public:
  AttentionPart(std::shared_ptr<SelfAttentionImpl> attention, graph::LayerId id, int64_t first_head,
                TensorGroupContext& group)
      : LayerModule(attention, 1), attention_(std::move(attention)), id_(id), first_head_(first_head), group_(group) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey& key) override {
    namespace F = torch::nn::functional;
    const torch::Tensor context = attention_->attend(copy_to_parts(inputs[0], group_), key, id_, first_head_);
    return sum_over_parts(F::linear(context, attention_->out_proj->weight), group_) + attention_->out_proj->bias;
  }
  std::shared_ptr<SelfAttentionImpl> attention_;
  graph::LayerId id_;
  int64_t first_head_;
  TensorGroupContext& group_;
};

// Replaces every sliced parameter of `module` by part `part`'s slice (same name, new shape).
void slice_parameters(torch::nn::Module& module, SplitKind kind, int32_t part, int32_t parts) {
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters()) {
    const ParameterSlicing slicing = parameter_slicing(kind, item.key());
    if (slicing.sliced) item.value().set_data(slice_for_part(item.value(), slicing, part, parts));
  }
}

}  // namespace

torch::Tensor copy_to_parts(const torch::Tensor& x, TensorGroupContext& group) {
  return CopyToParts::apply(x, address_of(group));
}

torch::Tensor sum_over_parts(const torch::Tensor& x, TensorGroupContext& group) {
  return SumOverParts::apply(x, address_of(group));
}

ParameterSlicing parameter_slicing(SplitKind kind, const std::string& name) {
  switch (kind) {
    case SplitKind::Column:
      if (name == "weight" || name == "bias") return {true, 0, 1};
      break;
    case SplitKind::Row:
      if (name == "weight") return {true, 1, 1};
      break;
    case SplitKind::Heads:
      if (name == "in_proj_weight" || name == "in_proj_bias") return {true, 0, 3};
      if (name == "out_proj.weight") return {true, 1, 1};
      break;
    default: break;
  }
  return {};
}

torch::Tensor slice_for_part(const torch::Tensor& whole, const ParameterSlicing& slicing, int32_t part,
                             int32_t parts) {
  if (!slicing.sliced) return whole;
  const int64_t size = whole.size(slicing.dim);
  BURST_ASSERT(size % (slicing.chunks * parts) == 0, "a split divides the tensors it slices");
  const int64_t slice = size / (slicing.chunks * parts);
  std::vector<torch::Tensor> pieces;
  for (int64_t chunk = 0; chunk < slicing.chunks; ++chunk) {
    pieces.push_back(whole.narrow(slicing.dim, chunk * (size / slicing.chunks) + part * slice, slice));
  }
  return torch::cat(pieces, slicing.dim).contiguous();
}

torch::Tensor join_parts(const std::vector<torch::Tensor>& slices, const ParameterSlicing& slicing) {
  BURST_ASSERT(!slices.empty(), "join_parts of no slices");
  if (!slicing.sliced) return slices.front();
  std::vector<torch::Tensor> pieces;
  for (int64_t chunk = 0; chunk < slicing.chunks; ++chunk) {
    for (const torch::Tensor& slice : slices) pieces.push_back(slice.chunk(slicing.chunks, slicing.dim)[chunk]);
  }
  return torch::cat(pieces, slicing.dim);
}

std::unique_ptr<LayerModule> make_part_module(const graph::Graph& graph, graph::LayerId id,
                                              std::unique_ptr<LayerModule> whole, const cost::TensorSplit& split,
                                              int32_t part, TensorGroupContext* group) {
  if (!split.splits() || !cost::divides_weights(split.kind)) return whole;
  BURST_ASSERT(group != nullptr && part >= 0 && part < split.parts, "a divided layer's part has its group");
  torch::nn::Module& module = whole->module();
  slice_parameters(module, split.kind, part, split.parts);
  if (split.kind == SplitKind::Heads) {
    auto attention = std::dynamic_pointer_cast<SelfAttentionImpl>(module.shared_from_this());
    BURST_ASSERT(attention != nullptr, "a heads split is of a self_attention layer");
    const int64_t first_head = attention->heads() / split.parts * part;
    return std::make_unique<AttentionPart>(std::move(attention), id, first_head, *group);
  }
  BURST_ASSERT(graph.layer(id).op() == graph::OpKind::Linear, "column and row splits are of linear layers");
  return std::make_unique<LinearPart>(module, split.kind, *group);
}

}  // namespace burst::layers
