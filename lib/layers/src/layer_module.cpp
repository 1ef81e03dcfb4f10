#include "burst/layers/layer_module.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include "burst/util/error.h"
#include "torch_modules.h"

namespace burst::layers {

using graph::Graph;
using graph::LayerId;
using graph::Shape;

LayerModule::LayerModule(std::shared_ptr<torch::nn::Module> module, size_t arity,
                         std::vector<torch::Tensor> extra_weights)
    : module_(std::move(module)), arity_(arity), extra_weights_(std::move(extra_weights)) {}

torch::Tensor LayerModule::forward(const std::vector<torch::Tensor>& inputs, const RandomKey& key) {
  BURST_ASSERT(inputs.size() == arity_,
               fmt::format("layer module takes {} inputs, got {}", arity_, inputs.size()));
  return run(inputs, key);
}

std::vector<torch::Tensor> LayerModule::weight_tensors() const {
  std::vector<torch::Tensor> weights = parameters();
  weights.insert(weights.end(), extra_weights_.begin(), extra_weights_.end());
  return weights;
}

namespace {

// A layer that applies one torch module (a torch::nn ModuleHolder such as torch::nn::Conv2d)
// to its single input.
template <typename Holder>
class UnaryLayer final : public LayerModule {
 public:
  explicit UnaryLayer(Holder holder, std::vector<torch::Tensor> extra_weights = {})
      : LayerModule(holder.ptr(), 1, std::move(extra_weights)), holder_(std::move(holder)) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey&) override {
    return holder_->forward(inputs[0]);
  }
  Holder holder_;
};

// Dropout by the placement-invariant rule (sample_random.h); identity in eval mode.
class DropoutLayer final : public LayerModule {
 public:
  DropoutLayer(double p, LayerId id) : LayerModule(std::make_shared<torch::nn::Module>(), 1), p_(p), id_(id) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey& key) override {
    if (!module().is_training()) return inputs[0];
    return sample_dropout(inputs[0], p_, key, id_);
  }
  double p_;
  LayerId id_;
};

// Stochastic depth: one draw per sample (element 0 of the sample's Philox stream, by the
// rule of sample_random.h), so a sample's branch is dropped on whichever rank computes it.
class StochasticDepthLayer final : public LayerModule {
 public:
  StochasticDepthLayer(double p, LayerId id)
      : LayerModule(std::make_shared<torch::nn::Module>(), 1), p_(p), id_(id) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey& key) override {
    const torch::Tensor& x = inputs[0];
    if (!module().is_training() || p_ == 0.0) return x;
    std::vector<int64_t> sizes(static_cast<size_t>(x.dim()), 1);
    sizes[0] = x.size(0);
    // [B, 1]: one value per sample, 0 or 1 / (1 - p); broadcast over the sample's elements.
    const torch::Tensor keep = sample_dropout_mask(x.new_empty({x.size(0), 1}), p_, key, id_);
    return x * keep.view(sizes);
  }
  double p_;
  LayerId id_;
};

// Self-attention, whose attention-weight dropout draws by the same rule.
class AttentionLayer final : public LayerModule {
 public:
  AttentionLayer(SelfAttention attention, LayerId id)
      : LayerModule(attention.ptr(), 1), attention_(std::move(attention)), id_(id) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey& key) override {
    return attention_->forward(inputs[0], key, id_);
  }
  SelfAttention attention_;
  LayerId id_;
};

// A stateless layer: a function of its inputs, with an empty module (so train()/eval() and
// to() still work uniformly).
class FunctionLayer final : public LayerModule {
 public:
  using Function = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;
  FunctionLayer(size_t arity, Function function)
      : LayerModule(std::make_shared<torch::nn::Module>(), arity), function_(std::move(function)) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey&) override { return function_(inputs); }
  Function function_;
};

// The loss: logits from the graph, labels from the data.
class LossLayer final : public LayerModule {
 public:
  explicit LossLayer(SoftmaxCrossEntropy loss)
      : LayerModule(loss.ptr(), 2), loss_(std::move(loss)) {}

 private:
  torch::Tensor run(const std::vector<torch::Tensor>& inputs, const RandomKey&) override {
    return loss_->forward(inputs[0], inputs[1]);
  }
  SoftmaxCrossEntropy loss_;
};

template <typename Holder>
std::unique_ptr<LayerModule> unary(Holder holder) {
  return std::make_unique<UnaryLayer<Holder>>(std::move(holder));
}

std::unique_ptr<LayerModule> function(size_t arity, FunctionLayer::Function f) {
  return std::make_unique<FunctionLayer>(arity, std::move(f));
}

// "[3, 4]" for error messages.
std::string sizes_text(const torch::Tensor& t) {
  std::string text;
  for (const int64_t size : t.sizes()) text += (text.empty() ? "" : ", ") + std::to_string(size);
  return "[" + text + "]";
}

torch::ExpandingArray<2> pair(graph::Pair p) { return torch::ExpandingArray<2>({p.h, p.w}); }
// Depth, height, width (shape inference checked there are 3).
torch::ExpandingArray<3> triple(const graph::Shape& v) { return torch::ExpandingArray<3>({v.at(0), v.at(1), v.at(2)}); }

// A pooling window's stride: unset (0, 0) means "equal to the kernel", as in torch.nn.
graph::Pair pool_stride(graph::Pair kernel, graph::Pair stride) {
  return (stride.h == 0 && stride.w == 0) ? kernel : stride;
}

// Builds one layer's module; one operator() per op (std::visit makes the list complete).
class Factory {
 public:
  Factory(const Graph& graph, LayerId id, const LayerModuleOptions& options)
      : graph_(graph), id_(id), options_(options) {}

  // Per-sample shape of the layer's i-th graph input.
  const Shape& in(size_t i = 0) const { return graph_.info(graph_.inputs(id_).at(i)).output_shape; }
  size_t input_count() const { return graph_.inputs(id_).size(); }

  std::unique_ptr<LayerModule> operator()(const graph::InputAttrs&) const {
    // The batch from the data pipeline, passed through: [B] + shape.
    return function(1, [](const auto& x) { return x[0]; });
  }

  std::unique_ptr<LayerModule> operator()(const graph::Conv2dAttrs& a) const {
    // [B, C, H, W] -> [B, out, H', W'].
    return unary(torch::nn::Conv2d(torch::nn::Conv2dOptions(in()[0], a.out_channels, pair(a.kernel))
                                       .stride(pair(a.stride))
                                       .padding(pair(a.padding))
                                       .dilation(pair(a.dilation))
                                       .groups(a.groups)
                                       .bias(a.bias)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::ConvTranspose2dAttrs& a) const {
    // [B, C, H, W] -> [B, out, H', W'].
    return unary(torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(in()[0], a.out_channels, pair(a.kernel))
                                                .stride(pair(a.stride))
                                                .padding(pair(a.padding))
                                                .output_padding(pair(a.output_padding))
                                                .dilation(pair(a.dilation))
                                                .groups(a.groups)
                                                .bias(a.bias)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::BatchNorm2dAttrs& a) const {
    // [B, C, H, W] (or volumes [B, C, D, H, W]) -> same; batch statistics in training mode,
    // running ones in eval mode.
    const auto options = torch::nn::BatchNormOptions(in()[0]).eps(a.eps).momentum(a.momentum);
    if (in().size() == 4) return unary(torch::nn::BatchNorm3d(options));
    return unary(torch::nn::BatchNorm2d(options));
  }

  std::unique_ptr<LayerModule> operator()(const graph::Conv3dAttrs& a) const {
    // [B, C, D, H, W] -> [B, out_channels, D', H', W'].
    return unary(torch::nn::Conv3d(torch::nn::Conv3dOptions(in()[0], a.out_channels, triple(a.kernel))
                                       .stride(triple(a.stride))
                                       .padding(triple(a.padding))
                                       .dilation(triple(a.dilation))
                                       .groups(a.groups)
                                       .bias(a.bias)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::MaxPool3dAttrs& a) const {
    return unary(torch::nn::MaxPool3d(torch::nn::MaxPool3dOptions(triple(a.kernel))
                                          .stride(triple(a.stride.empty() ? a.kernel : a.stride))
                                          .padding(triple(a.padding))
                                          .ceil_mode(a.ceil_mode)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::AvgPool3dAttrs& a) const {
    return unary(torch::nn::AvgPool3d(torch::nn::AvgPool3dOptions(triple(a.kernel))
                                          .stride(triple(a.stride.empty() ? a.kernel : a.stride))
                                          .padding(triple(a.padding))
                                          .ceil_mode(a.ceil_mode)
                                          .count_include_pad(a.count_include_pad)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::ReluAttrs&) const {
    return function(1, [](const auto& x) { return torch::relu(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::GeluAttrs& a) const {
    return unary(torch::nn::GELU(torch::nn::GELUOptions().approximate(a.approximate)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::MaxPool2dAttrs& a) const {
    // [B, C, H, W] -> [B, C, H', W'].
    return unary(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(pair(a.kernel))
                                          .stride(pair(pool_stride(a.kernel, a.stride)))
                                          .padding(pair(a.padding))
                                          .ceil_mode(a.ceil_mode)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::AvgPool2dAttrs& a) const {
    return unary(torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(pair(a.kernel))
                                          .stride(pair(pool_stride(a.kernel, a.stride)))
                                          .padding(pair(a.padding))
                                          .ceil_mode(a.ceil_mode)
                                          .count_include_pad(a.count_include_pad)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::AdaptiveAvgPool2dAttrs& a) const {
    // [B, C, H, W] -> [B, C, output.h, output.w].
    return unary(torch::nn::AdaptiveAvgPool2d(
        torch::nn::AdaptiveAvgPool2dOptions({a.output.h, a.output.w})));
  }

  std::unique_ptr<LayerModule> operator()(const graph::LinearAttrs& a) const {
    // [B, ..., in] -> [B, ..., out].
    const int64_t in_features = in().back();
    if (a.weight_in_out) return unary(InOutLinear(in_features, a.out_features, a.bias));  // HF's Conv1D
    if (a.tied_to.empty()) {
      return unary(torch::nn::Linear(
          torch::nn::LinearOptions(in_features, a.out_features).bias(a.bias)));
    }
    torch::Tensor weight = options_.tied_weight;
    if (!weight.defined()) {
      // Untied twin: a stand-in weight initialised like torch.nn.Linear's, kept out of
      // parameters() so the count still matches the graph (the weight is the embedding's).
      weight = torch::empty({a.out_features, in_features});
      torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
      weight.requires_grad_(true);
    } else if (weight.dim() != 2 || weight.size(0) != a.out_features ||
               weight.size(1) != in_features) {
      throw UserError(fmt::format(
          "layer '{}' (linear) is tied to '{}': expected its weight [{}, {}], got {}",
          graph_.layer(id_).name, a.tied_to, a.out_features, in_features, sizes_text(weight)));
    }
    TiedLinear module(weight, a.bias);
    return std::make_unique<UnaryLayer<TiedLinear>>(std::move(module), std::vector{weight});
  }

  std::unique_ptr<LayerModule> operator()(const graph::FlattenAttrs&) const {
    return function(1, [](const auto& x) { return x[0].flatten(1); });  // [B, ...] -> [B, prod]
  }

  std::unique_ptr<LayerModule> operator()(const graph::DropoutAttrs& a) const {
    return std::make_unique<DropoutLayer>(a.p, id_);
  }

  std::unique_ptr<LayerModule> operator()(const graph::AddAttrs&) const {
    return function(input_count(), [](const auto& x) {
      torch::Tensor sum = x[0] + x[1];
      for (size_t i = 2; i < x.size(); ++i) sum = sum + x[i];
      return sum;
    });
  }

  std::unique_ptr<LayerModule> operator()(const graph::ConcatAttrs& a) const {
    // The axis is per sample (0 = channels of [C, H, W]); the batch dim shifts it by one.
    const int64_t dim = a.axis + 1;
    return function(input_count(), [dim](const auto& x) { return torch::cat(x, dim); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::LayerNormAttrs& a) const {
    if (a.rms) refuse_planned_only("RMSNorm (layernorm with rms)");
    // Normalises the last dim: [B, ..., D] -> same.
    return unary(torch::nn::LayerNorm(torch::nn::LayerNormOptions({in().back()}).eps(a.eps)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::EmbeddingAttrs& a) const {
    // int64 [B, T] -> [B, T, dim].
    return unary(torch::nn::Embedding(torch::nn::EmbeddingOptions(a.num_embeddings, a.dim)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::PositionEmbeddingAttrs& a) const {
    return unary(PositionEmbedding(a.max_positions, in()[1], a.table_2d, a.row));  // [B, T, D] -> same
  }

  std::unique_ptr<LayerModule> operator()(const graph::ScaleAttrs& a) const {
    return unary(Scale(a.shape, a.weight_shape, false));  // [B, ...] x [shape] broadcast
  }

  std::unique_ptr<LayerModule> operator()(const graph::ShiftAttrs& a) const {
    return unary(Scale(a.shape, a.weight_shape, true));  // [B, ...] + [shape] broadcast
  }

  std::unique_ptr<LayerModule> operator()(const graph::PReluAttrs& a) const {
    return unary(torch::nn::PReLU(torch::nn::PReLUOptions().num_parameters(a.num_parameters)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::ErfAttrs&) const {
    return function(1, [](const auto& x) { return torch::erf(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::InstanceNormAttrs& a) const {
    // [B, C, ...] -> same; torch.nn.InstanceNorm{1,2,3}d by the per-sample rank.
    const int64_t channels = in()[0];
    if (in().size() == 2) return unary(torch::nn::InstanceNorm1d(torch::nn::InstanceNorm1dOptions(channels).eps(a.eps).affine(a.affine)));
    if (in().size() == 3) return unary(torch::nn::InstanceNorm2d(torch::nn::InstanceNorm2dOptions(channels).eps(a.eps).affine(a.affine)));
    return unary(torch::nn::InstanceNorm3d(torch::nn::InstanceNorm3dOptions(channels).eps(a.eps).affine(a.affine)));
  }

  std::unique_ptr<LayerModule> operator()(const graph::UpsampleAttrs& a) const {
    // [B, C, H, W] -> [B, C, H * scale.h, W * scale.w], as torch.nn.Upsample(scale_factor=...).
    auto options = torch::nn::functional::InterpolateFuncOptions().scale_factor(
        std::vector<double>{static_cast<double>(a.scale.h), static_cast<double>(a.scale.w)});
    if (a.mode == "bilinear") {
      options.mode(torch::kBilinear).align_corners(a.align_corners);
    } else {
      options.mode(torch::kNearest);
    }
    return function(1, [options](const auto& x) { return torch::nn::functional::interpolate(x[0], options); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::MoeAttrs&) const { refuse_planned_only("moe"); }

  // Layers burst plans but does not run yet (docs/llm.md, "What runs").
  [[noreturn]] void refuse_planned_only(const std::string& what) const {
    throw UserError(fmt::format("layer '{}': burst plans {} layers but does not train them yet (docs/llm.md)",
                                graph_.layer(id_).name, what));
  }

  std::unique_ptr<LayerModule> operator()(const graph::ExpandAttrs& a) const {
    std::vector<int64_t> sizes{-1};  // the batch kept
    sizes.insert(sizes.end(), a.shape.begin(), a.shape.end());
    return function(1, [sizes](const auto& x) { return x[0].expand(sizes); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::PadAttrs& a) const {
    // F.pad takes (before, after) pairs from the last dim back; burst's pads are ONNX's order.
    const size_t rank = a.pads.size() / 2;
    std::vector<int64_t> pairs;
    for (size_t d = rank; d-- > 0;) {
      pairs.push_back(a.pads[d]);
      pairs.push_back(a.pads[d + rank]);
    }
    while (pairs.size() > 2 && pairs[pairs.size() - 1] == 0 && pairs[pairs.size() - 2] == 0) pairs.resize(pairs.size() - 2);
    auto options = torch::nn::functional::PadFuncOptions(pairs);
    if (a.mode == "reflect") {
      options.mode(torch::kReflect);
    } else if (a.mode == "replicate") {
      options.mode(torch::kReplicate);
    } else {
      options.mode(torch::kConstant).value(a.value);
    }
    return function(1, [options](const auto& x) { return torch::nn::functional::pad(x[0], options); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::ClassTokenAttrs&) const {
    return unary(ClassToken(in()[1]));  // [B, T, D] -> [B, T + 1, D]
  }

  std::unique_ptr<LayerModule> operator()(const graph::ImageToTokensAttrs&) const {
    // [B, C, H, W] -> [B, C, H*W] -> [B, H*W, C]: token t = h*W + w holds pixel (h, w)'s
    // channels (a view, as torchvision's ViT does).
    return function(1, [](const auto& x) { return x[0].flatten(2).transpose(1, 2); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::TakeTokenAttrs& a) const {
    const int64_t index = a.index;
    return function(1, [index](const auto& x) { return x[0].select(1, index); });  // [B, D]
  }

  std::unique_ptr<LayerModule> operator()(const graph::SelfAttentionAttrs& a) const {
    // The runtime's attention is torch.nn.MultiheadAttention's (flash or not, the same values).
    if (a.kv_heads != 0 || a.head_dim != 0 || !a.qkv_bias || !a.out_bias || a.rotary_theta != 0 || a.qk_norm ||
        a.kv_lora_rank != 0 || a.q_lora_rank != 0 || a.v_head_dim != 0) {
      refuse_planned_only("self_attention with grouped-query, rotary, qk-norm, latent or bias-free projections");
    }
    return std::make_unique<AttentionLayer>(SelfAttention(in()[1], a.heads, a.causal, a.dropout), id_);  // [B, T, D]
  }

  std::unique_ptr<LayerModule> operator()(const graph::HardtanhAttrs& a) const {
    const double low = a.min_val, high = a.max_val;
    return function(1, [low, high](const auto& x) { return torch::hardtanh(x[0], low, high); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::SigmoidAttrs&) const {
    return function(1, [](const auto& x) { return torch::sigmoid(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::SiluAttrs&) const {
    return function(1, [](const auto& x) { return torch::silu(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::HardswishAttrs&) const {
    return function(1, [](const auto& x) { return torch::hardswish(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::HardsigmoidAttrs&) const {
    return function(1, [](const auto& x) { return torch::hardsigmoid(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::LeakyReluAttrs& a) const {
    const double slope = a.negative_slope;
    return function(1, [slope](const auto& x) { return torch::leaky_relu(x[0], slope); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::EluAttrs& a) const {
    const double alpha = a.alpha;
    return function(1, [alpha](const auto& x) { return torch::elu(x[0], alpha); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::TanhAttrs&) const {
    return function(1, [](const auto& x) { return torch::tanh(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::SoftplusAttrs&) const {
    return function(1, [](const auto& x) { return torch::softplus(x[0]); });  // beta 1, threshold 20
  }

  std::unique_ptr<LayerModule> operator()(const graph::MulAttrs&) const {
    // [B, ...] x [B, ...] of one rank: the batch dims match, the others broadcast.
    return function(2, [](const auto& x) { return x[0] * x[1]; });
  }

  std::unique_ptr<LayerModule> operator()(const graph::MatmulAttrs&) const {
    // [B, ..., n, k] x [B, ..., k, m] -> [B, ..., n, m].
    return function(2, [](const auto& x) { return torch::matmul(x[0], x[1]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::SoftmaxAttrs&) const {
    return function(1, [](const auto& x) { return torch::softmax(x[0], -1); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::MulScalarAttrs& a) const {
    const double factor = a.factor;
    return function(1, [factor](const auto& x) { return x[0] * factor; });
  }

  std::unique_ptr<LayerModule> operator()(const graph::PowScalarAttrs& a) const {
    const double exponent = a.exponent;
    return function(1, [exponent](const auto& x) { return torch::pow(x[0], exponent); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::AddScalarAttrs& a) const {
    const double value = a.value;
    return function(1, [value](const auto& x) { return x[0] + value; });
  }

  std::unique_ptr<LayerModule> operator()(const graph::SqrtAttrs&) const {
    return function(1, [](const auto& x) { return torch::sqrt(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::ReciprocalAttrs&) const {
    return function(1, [](const auto& x) { return torch::reciprocal(x[0]); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::RotaryAttrs& a) const {
    const double theta = a.theta;
    return function(1, [theta](const auto& x) { return rotary_embedding(x[0], theta); });  // [B, ..., T, d]
  }

  std::unique_ptr<LayerModule> operator()(const graph::CausalMaskAttrs&) const {
    // [B, ..., T, T]: entries above the diagonal (key j > query i) become -inf.
    return function(1, [](const auto& x) {
      const int64_t tokens = x[0].size(-1);
      const torch::Tensor later = torch::ones({tokens, tokens}, x[0].options().dtype(torch::kBool)).triu(1);
      return x[0].masked_fill(later, -std::numeric_limits<double>::infinity());
    });
  }

  std::unique_ptr<LayerModule> operator()(const graph::StochasticDepthAttrs& a) const {
    return std::make_unique<StochasticDepthLayer>(a.p, id_);
  }

  // Shape ops on [B, ...]: the batch dim stays first, the per-sample axes shift by one.
  std::unique_ptr<LayerModule> operator()(const graph::ReshapeAttrs& a) const {
    std::vector<int64_t> sizes{-1};
    sizes.insert(sizes.end(), a.shape.begin(), a.shape.end());
    return function(1, [sizes](const auto& x) { return x[0].reshape(sizes); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::TransposeAttrs& a) const {
    std::vector<int64_t> dims{0};
    for (const int64_t axis : a.perm) dims.push_back(axis + 1);
    return function(1, [dims](const auto& x) { return x[0].permute(dims); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::SliceAttrs& a) const {
    const int64_t dim = a.axis + 1, start = a.start, length = a.end - a.start;
    return function(1, [dim, start, length](const auto& x) { return x[0].narrow(dim, start, length); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::MeanAttrs& a) const {
    std::vector<int64_t> dims;
    for (const int64_t axis : a.axes) dims.push_back(axis + 1);
    const bool keepdims = a.keepdims;
    return function(1, [dims, keepdims](const auto& x) { return x[0].mean(dims, keepdims); });
  }

  std::unique_ptr<LayerModule> operator()(const graph::SoftmaxCrossEntropyAttrs& a) const {
    return std::make_unique<LossLayer>(SoftmaxCrossEntropy(a.weight));  // -> [B]
  }

 private:
  const Graph& graph_;
  LayerId id_;
  const LayerModuleOptions& options_;
};

// Exclusive upper bound of the token ids layer `producer` (an int64 output) may emit so that
// every embedding reading them accepts them.
int64_t id_bound(const Graph& graph, LayerId producer) {
  int64_t bound = 0;
  if (const auto* input = std::get_if<graph::InputAttrs>(&graph.layer(producer).attrs)) {
    bound = input->vocab;
  }
  for (const LayerId consumer : graph.consumers(producer)) {
    if (const auto* e = std::get_if<graph::EmbeddingAttrs>(&graph.layer(consumer).attrs)) {
      bound = bound == 0 ? e->num_embeddings : std::min(bound, e->num_embeddings);
    }
  }
  BURST_ASSERT(bound > 0, fmt::format("no id range for the int64 output of layer {}", producer));
  return bound;
}

// A random batch of layer `producer`'s output: [batch] + its per-sample shape.
torch::Tensor random_output(const Graph& graph, LayerId producer, int64_t batch) {
  const graph::LayerInfo& info = graph.info(producer);
  std::vector<int64_t> sizes{batch};
  sizes.insert(sizes.end(), info.output_shape.begin(), info.output_shape.end());
  if (info.output_dtype == graph::DType::Int64) {
    return torch::randint(id_bound(graph, producer), sizes, torch::kLong);
  }
  return torch::randn(sizes);
}

}  // namespace

std::unique_ptr<LayerModule> make_layer_module(const Graph& graph, LayerId id,
                                               const LayerModuleOptions& options) {
  std::unique_ptr<LayerModule> layer =
      std::visit(Factory(graph, id, options), graph.layer(id).attrs);
  layer->module().train();
  return layer;
}

void place_layer(LayerModule& layer, torch::Device device, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  // set_data keeps each tensor's identity, so a tied linear that borrows this tensor sees it
  // moved too.
  const auto place = [device, dtype](torch::Tensor& tensor) {
    tensor.set_data(tensor.is_floating_point() ? tensor.to(device, dtype) : tensor.to(device));
  };
  for (auto& parameter : layer.module().named_parameters()) place(parameter.value());
  for (auto& buffer : layer.module().named_buffers()) place(buffer.value());
}

namespace {

void copy_initial(torch::Tensor& target, const graph::InitialTensor& source, const std::string& layer_name) {
  if (target.sizes().vec() != source.shape) {
    throw UserError(fmt::format("layer '{}': initial tensor '{}' has shape [{}], the layer's is {}", layer_name,
                                source.name, fmt::join(source.shape, ", "), sizes_text(target)));
  }
  BURST_ASSERT(static_cast<int64_t>(source.values.size()) == target.numel(), "initial tensor size");
  torch::NoGradGuard no_grad;
  // from_blob does not copy: the values are copied into the module's own tensor here.
  auto* data = const_cast<float*>(source.values.data());
  target.copy_(torch::from_blob(data, {target.numel()}, torch::kFloat32).view(target.sizes()));
}

}  // namespace

std::string state_name(const Graph& graph, LayerId id, const std::string& key) {
  const graph::OpKind op = graph.layer(id).op();
  // Layers that are one learned tensor take its name (the initializer's, as torch names it).
  if (op == graph::OpKind::ClassToken || op == graph::OpKind::PositionEmbedding || op == graph::OpKind::Scale ||
      op == graph::OpKind::Shift) {
    return graph.layer(id).name;
  }
  return graph.layer(id).name + "." + key;
}

void load_initial_weights(LayerModule& layer, const graph::LayerWeights& weights, const std::string& layer_name) {
  std::vector<torch::Tensor> parameters = layer.module().parameters();
  std::vector<torch::Tensor> buffers;
  for (const torch::Tensor& buffer : layer.module().buffers()) {
    if (buffer.is_floating_point()) buffers.push_back(buffer);
  }
  if (parameters.size() != weights.parameters.size() || buffers.size() != weights.buffers.size()) {
    throw UserError(fmt::format("layer '{}': the model file gives {} parameters and {} buffers, the layer has {} and {}",
                                layer_name, weights.parameters.size(), weights.buffers.size(), parameters.size(),
                                buffers.size()));
  }
  for (size_t i = 0; i < parameters.size(); ++i) copy_initial(parameters[i], weights.parameters[i], layer_name);
  for (size_t i = 0; i < buffers.size(); ++i) copy_initial(buffers[i], weights.buffers[i], layer_name);
}

std::vector<torch::Tensor> random_inputs(const Graph& graph, LayerId id, int64_t batch) {
  BURST_ASSERT(batch >= 1, fmt::format("batch must be >= 1, got {}", batch));
  std::vector<torch::Tensor> inputs;
  if (graph.layer(id).op() == graph::OpKind::Input) {
    inputs.push_back(random_output(graph, id, batch));
    return inputs;
  }
  for (const LayerId producer : graph.inputs(id)) {
    inputs.push_back(random_output(graph, producer, batch));
  }
  if (graph.layer(id).op() == graph::OpKind::SoftmaxCrossEntropy) {
    // Labels: one class id per sample ([B]) or per token ([B, T]).
    const torch::Tensor& logits = inputs.at(0);
    std::vector<int64_t> sizes = logits.sizes().vec();
    const int64_t classes = sizes.back();
    sizes.pop_back();
    inputs.push_back(torch::randint(classes, sizes, torch::kLong));
  }
  return inputs;
}

}  // namespace burst::layers
