#include "shape_inference.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::graph {
namespace {

// FLOPs charged per output element by cheap element-wise and normalisation ops. They are
// rough operation counts; the matmul-like ops dominate every real model.
constexpr int64_t kReluFlops = 1;
constexpr int64_t kGeluFlops = 8;        // erf/tanh polynomial, multiplies
constexpr int64_t kDropoutFlops = 1;     // mask multiply
constexpr int64_t kBatchNormFlops = 4;   // mean, variance, normalise, affine
constexpr int64_t kLayerNormFlops = 5;   // mean, variance, normalise, scale, shift
constexpr int64_t kSoftmaxFlops = 5;     // max, subtract, exp, sum, divide
constexpr int64_t kCrossEntropyFlops = 4;  // log-softmax pieces per logit
constexpr int64_t kHardtanhFlops = 2;      // two comparisons
constexpr int64_t kSigmoidFlops = 4;       // negate, exp, add, divide
constexpr int64_t kSiluFlops = 5;          // sigmoid and a multiply
constexpr int64_t kHardsigmoidFlops = 3;   // add, clamp, scale
constexpr int64_t kHardswishFlops = 4;     // hardsigmoid and a multiply
constexpr int64_t kLeakyReluFlops = 2;     // compare, scale
constexpr int64_t kEluFlops = 4;           // compare, exp, subtract, scale
constexpr int64_t kTanhFlops = 5;          // two exps' worth, add, divide
constexpr int64_t kSoftplusFlops = 4;      // exp, add, log, compare

// Shape inference for one layer; every failure names the layer.
class Inferrer {
 public:
  Inferrer(const LayerSpec& layer, const std::vector<const LayerInfo*>& inputs)
      : layer_(layer), inputs_(inputs) {}

  [[noreturn]] void fail(const std::string& reason) const {
    throw UserError(fmt::format("layer '{}' ({}): {}", layer_.name, op_name(layer_.op()), reason));
  }

  int64_t mul(int64_t a, int64_t b, const char* what) const {
    const auto product = checked_mul(a, b);
    if (!product) fail(fmt::format("{} overflows int64 ({} x {})", what, a, b));
    return *product;
  }
  int64_t add(int64_t a, int64_t b, const char* what) const {
    const auto sum = checked_add(a, b);
    if (!sum) fail(fmt::format("{} overflows int64 ({} + {})", what, a, b));
    return *sum;
  }
  int64_t numel(const Shape& shape) const {
    int64_t count = 1;
    for (const int64_t dim : shape) count = mul(count, dim, "element count");
    return count;
  }
  void require_positive(int64_t value, const char* what) const {
    if (value <= 0) fail(fmt::format("{} must be positive, got {}", what, value));
  }
  void require_positive(Pair value, const char* what) const {
    if (value.h <= 0 || value.w <= 0) {
      fail(fmt::format("{} must be positive, got [{}, {}]", what, value.h, value.w));
    }
  }
  void require_non_negative(Pair value, const char* what) const {
    if (value.h < 0 || value.w < 0) {
      fail(fmt::format("{} must not be negative, got [{}, {}]", what, value.h, value.w));
    }
  }

  const LayerInfo& only_input() const { return *inputs_.at(0); }

  // The single float input, which must have `rank` dims; `layout` names them for errors.
  const Shape& float_input(size_t rank, const char* layout) const {
    const LayerInfo& in = only_input();
    if (in.output_dtype != DType::Float32) {
      fail(fmt::format("input '{}' is {}, expected float32", layer_.inputs.at(0),
                       dtype_name(in.output_dtype)));
    }
    if (rank != 0 && in.output_shape.size() != rank) {
      fail(fmt::format("input '{}' has shape {}, expected {}", layer_.inputs.at(0),
                       shape_to_string(in.output_shape), layout));
    }
    if (rank == 0 && in.output_shape.empty()) {
      fail(fmt::format("input '{}' is a scalar, expected a tensor", layer_.inputs.at(0)));
    }
    return in.output_shape;
  }

  // Output size along one spatial dim of a sliding window (PyTorch's formula).
  int64_t window_output(int64_t size, int64_t kernel, int64_t stride, int64_t padding,
                        int64_t dilation, bool ceil_mode, const char* dim) const {
    const int64_t padded = add(size, mul(2, padding, "padded size"), "padded size");
    const int64_t span = add(mul(dilation, kernel - 1, "kernel span"), 1, "kernel span");
    if (padded < span) {
      fail(fmt::format("kernel span {} exceeds padded input {} {} (output would be empty)", span,
                       dim, padded));
    }
    int64_t out = (padded - span) / stride + 1;
    if (ceil_mode && (padded - span) % stride != 0) {
      ++out;
      // The last window must start inside the input or its left padding.
      if ((out - 1) * stride >= size + padding) --out;
    }
    return out;
  }

  LayerInfo finish(Shape shape, int64_t params, int64_t flops, DType dtype = DType::Float32) const {
    LayerInfo info;
    info.output_bytes = mul(numel(shape), dtype_bytes(dtype), "output bytes");
    info.output_shape = std::move(shape);
    info.output_dtype = dtype;
    info.params = params;
    info.active_params = params;
    info.forward_flops = flops;
    return info;
  }

  // Output shape of a pooling layer; stride 0 means "equal to the kernel".
  template <typename PoolAttrs>
  Shape pool_shape(const PoolAttrs& a, Pair* stride_out) const {
    const Shape& in = float_input(3, "[C, H, W]");
    require_positive(a.kernel, "kernel");
    const Pair stride = (a.stride.h == 0 && a.stride.w == 0) ? a.kernel : a.stride;
    require_positive(stride, "stride");
    require_non_negative(a.padding, "padding");
    if (a.padding.h > a.kernel.h / 2 || a.padding.w > a.kernel.w / 2) {
      fail(fmt::format("padding [{}, {}] exceeds half the kernel [{}, {}]", a.padding.h,
                       a.padding.w, a.kernel.h, a.kernel.w));
    }
    *stride_out = stride;
    return {in[0],
            window_output(in[1], a.kernel.h, stride.h, a.padding.h, 1, a.ceil_mode, "height"),
            window_output(in[2], a.kernel.w, stride.w, a.padding.w, 1, a.ceil_mode, "width")};
  }

  LayerInfo operator()(const InputAttrs& a) const {
    if (a.shape.empty()) fail("shape must have at least one dimension");
    for (const int64_t dim : a.shape) require_positive(dim, "every shape dimension");
    if (a.dtype == DType::Int64) {
      if (a.shape.size() != 1) fail("token input (int64) must have shape [T]");
      require_positive(a.vocab, "vocab");
    } else if (a.vocab != 0) {
      fail("vocab applies only to int64 token inputs");
    }
    return finish(a.shape, 0, 0, a.dtype);
  }

  // The checks a convolution and a transposed one share; the input [C, H, W].
  template <typename ConvAttrs>
  const Shape& conv_input(const ConvAttrs& a) const {
    const Shape& in = float_input(3, "[C, H, W]");
    require_positive(a.out_channels, "out_channels");
    require_positive(a.kernel, "kernel");
    require_positive(a.stride, "stride");
    require_positive(a.dilation, "dilation");
    require_non_negative(a.padding, "padding");
    require_positive(a.groups, "groups");
    if (in[0] % a.groups != 0 || a.out_channels % a.groups != 0) {
      fail(fmt::format("groups {} must divide in_channels {} and out_channels {}", a.groups, in[0],
                       a.out_channels));
    }
    return in;
  }

  LayerInfo operator()(const Conv2dAttrs& a) const {
    const Shape& in = conv_input(a);
    const Shape out = {
        a.out_channels,
        window_output(in[1], a.kernel.h, a.stride.h, a.padding.h, a.dilation.h, false, "height"),
        window_output(in[2], a.kernel.w, a.stride.w, a.padding.w, a.dilation.w, false, "width")};
    // Weight [out, in/groups, kh, kw] plus bias [out].
    const int64_t fan_in =
        mul(mul(in[0] / a.groups, a.kernel.h, "fan-in"), a.kernel.w, "fan-in");
    const int64_t params =
        add(mul(a.out_channels, fan_in, "parameter count"), a.bias ? a.out_channels : 0,
            "parameter count");
    const int64_t per_output = add(mul(2, fan_in, "FLOPs"), a.bias ? 1 : 0, "FLOPs");
    return finish(out, params, mul(numel(out), per_output, "FLOPs"));
  }

  LayerInfo operator()(const ConvTranspose2dAttrs& a) const {
    const Shape& in = conv_input(a);
    require_non_negative(a.output_padding, "output_padding");
    if (a.output_padding.h >= std::max(a.stride.h, a.dilation.h) || a.output_padding.w >= std::max(a.stride.w, a.dilation.w)) {
      fail("output_padding must be below the stride or the dilation (torch's rule)");
    }
    const auto size = [&](int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op, const char* dim) {
      const int64_t out = (n - 1) * s - 2 * p + d * (k - 1) + op + 1;
      if (out <= 0) fail(fmt::format("output {} would be {} (input {})", dim, out, n));
      return out;
    };
    const Shape out = {a.out_channels,
                       size(in[1], a.kernel.h, a.stride.h, a.padding.h, a.dilation.h, a.output_padding.h, "height"),
                       size(in[2], a.kernel.w, a.stride.w, a.padding.w, a.dilation.w, a.output_padding.w, "width")};
    // Every input element meets out/groups x kh x kw weights (a multiply and an add each).
    const int64_t fan_out = mul(mul(a.out_channels / a.groups, a.kernel.h, "fan-out"), a.kernel.w, "fan-out");
    const int64_t params = add(mul(in[0], fan_out, "parameter count"), a.bias ? a.out_channels : 0, "parameter count");
    const int64_t flops = add(mul(mul(2, fan_out, "FLOPs"), numel(in), "FLOPs"), a.bias ? numel(out) : 0, "FLOPs");
    return finish(out, params, flops);
  }

  LayerInfo operator()(const BatchNorm2dAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (in.size() != 3 && in.size() != 4) {
      fail(fmt::format("input '{}' has shape {}, expected [C, H, W] or a volume [C, D, H, W]", layer_.inputs.at(0),
                       shape_to_string(in)));
    }
    if (!(a.eps > 0)) fail(fmt::format("eps must be positive, got {}", a.eps));
    return finish(in, mul(2, in[0], "parameter count"),
                  mul(kBatchNormFlops, numel(in), "FLOPs"));
  }

  LayerInfo operator()(const ReluAttrs&) const {
    const Shape& in = float_input(0, "");
    return finish(in, 0, mul(kReluFlops, numel(in), "FLOPs"));
  }

  LayerInfo operator()(const GeluAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (a.approximate != "none" && a.approximate != "tanh") {
      fail(fmt::format("approximate must be \"none\" or \"tanh\", got \"{}\"", a.approximate));
    }
    return finish(in, 0, mul(kGeluFlops, numel(in), "FLOPs"));
  }

  LayerInfo operator()(const MaxPool2dAttrs& a) const {
    Pair stride;
    Shape out = pool_shape(a, &stride);
    const int64_t window = mul(a.kernel.h, a.kernel.w, "window");
    return finish(out, 0, mul(numel(out), window, "FLOPs"));
  }

  LayerInfo operator()(const AvgPool2dAttrs& a) const {
    Pair stride;
    Shape out = pool_shape(a, &stride);
    const int64_t window = mul(a.kernel.h, a.kernel.w, "window");
    return finish(out, 0, mul(numel(out), window, "FLOPs"));
  }

  // Three values each (depth, height, width), for the 3-D ops.
  void require_three(const Shape& values, const char* what, int64_t lowest) const {
    if (values.size() != 3) fail(fmt::format("{} must hold 3 values (depth, height, width), got {}", what, shape_to_string(values)));
    for (const int64_t v : values) {
      if (v < lowest) fail(fmt::format("{} {} must be >= {} in every dim", what, shape_to_string(values), lowest));
    }
  }
  // [C, D', H', W'] of a window over a volume [C, D, H, W].
  Shape volume_windows(const Shape& in, int64_t channels, const Shape& kernel, const Shape& stride, const Shape& padding,
                       const Shape& dilation, bool ceil_mode) const {
    static const char* const kDims[3] = {"depth", "height", "width"};
    Shape out{channels};
    for (size_t d = 0; d < 3; ++d) {
      out.push_back(window_output(in[d + 1], kernel[d], stride[d], padding[d], dilation[d], ceil_mode, kDims[d]));
    }
    return out;
  }

  LayerInfo operator()(const Conv3dAttrs& a) const {
    const Shape& in = float_input(4, "[C, D, H, W]");
    require_positive(a.out_channels, "out_channels");
    require_three(a.kernel, "kernel", 1);
    require_three(a.stride, "stride", 1);
    require_three(a.dilation, "dilation", 1);
    require_three(a.padding, "padding", 0);
    require_positive(a.groups, "groups");
    if (in[0] % a.groups != 0 || a.out_channels % a.groups != 0) {
      fail(fmt::format("groups {} must divide in_channels {} and out_channels {}", a.groups, in[0], a.out_channels));
    }
    const Shape out = volume_windows(in, a.out_channels, a.kernel, a.stride, a.padding, a.dilation, false);
    // Weight [out, in/groups, kd, kh, kw] plus bias [out].
    const int64_t fan_in = mul(in[0] / a.groups, numel(a.kernel), "fan-in");
    const int64_t params = add(mul(a.out_channels, fan_in, "parameter count"), a.bias ? a.out_channels : 0, "parameter count");
    const int64_t per_output = add(mul(2, fan_in, "FLOPs"), a.bias ? 1 : 0, "FLOPs");
    return finish(out, params, mul(numel(out), per_output, "FLOPs"));
  }

  template <typename Pool3dAttrs>
  LayerInfo pool3d(const Pool3dAttrs& a) const {
    const Shape& in = float_input(4, "[C, D, H, W]");
    require_three(a.kernel, "kernel", 1);
    const Shape stride = a.stride.empty() ? a.kernel : a.stride;
    require_three(stride, "stride", 1);
    require_three(a.padding, "padding", 0);
    for (size_t d = 0; d < 3; ++d) {
      if (2 * a.padding[d] > a.kernel[d]) {
        fail(fmt::format("padding {} exceeds half the kernel {}", shape_to_string(a.padding), shape_to_string(a.kernel)));
      }
    }
    const Shape out = volume_windows(in, in[0], a.kernel, stride, a.padding, {1, 1, 1}, a.ceil_mode);
    return finish(out, 0, mul(numel(out), numel(a.kernel), "FLOPs"));
  }
  LayerInfo operator()(const MaxPool3dAttrs& a) const { return pool3d(a); }
  LayerInfo operator()(const AvgPool3dAttrs& a) const { return pool3d(a); }

  LayerInfo operator()(const AdaptiveAvgPool2dAttrs& a) const {
    const Shape& in = float_input(3, "[C, H, W]");
    require_positive(a.output, "output");
    return finish({in[0], a.output.h, a.output.w}, 0, numel(in));
  }

  LayerInfo operator()(const LinearAttrs& a) const {
    const Shape& in = float_input(0, "[..., features]");
    require_positive(a.out_features, "out_features");
    Shape out = in;
    out.back() = a.out_features;
    const int64_t rows = numel(in) / in.back();
    const int64_t weight = a.tied_to.empty() ? mul(in.back(), a.out_features, "parameter count") : 0;
    const int64_t params = add(weight, a.bias ? a.out_features : 0, "parameter count");
    const int64_t per_output = add(mul(2, in.back(), "FLOPs"), a.bias ? 1 : 0, "FLOPs");
    return finish(std::move(out), params,
                  mul(mul(rows, a.out_features, "FLOPs"), per_output, "FLOPs"));
  }

  LayerInfo operator()(const FlattenAttrs&) const {
    const Shape& in = float_input(0, "");
    return finish({numel(in)}, 0, 0);
  }

  LayerInfo operator()(const DropoutAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (!(a.p >= 0 && a.p < 1)) fail(fmt::format("p must be in [0, 1), got {}", a.p));
    return finish(in, 0, mul(kDropoutFlops, numel(in), "FLOPs"));
  }

  LayerInfo operator()(const AddAttrs&) const {
    const Shape& first = inputs_.front()->output_shape;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i]->output_dtype != DType::Float32) {
        fail(fmt::format("input '{}' is {}, expected float32", layer_.inputs[i],
                         dtype_name(inputs_[i]->output_dtype)));
      }
      if (inputs_[i]->output_shape != first) {
        fail(fmt::format("input '{}' has shape {} but input '{}' has {}", layer_.inputs[i],
                         shape_to_string(inputs_[i]->output_shape), layer_.inputs[0],
                         shape_to_string(first)));
      }
    }
    const int64_t sums = static_cast<int64_t>(inputs_.size()) - 1;
    return finish(first, 0, mul(sums, numel(first), "FLOPs"));
  }

  LayerInfo operator()(const ConcatAttrs& a) const {
    const Shape& first = inputs_.front()->output_shape;
    const auto rank = static_cast<int64_t>(first.size());
    if (a.axis < 0 || a.axis >= rank) {
      fail(fmt::format("axis {} is outside the {} dims of input '{}' {}", a.axis, rank,
                       layer_.inputs[0], shape_to_string(first)));
    }
    Shape out = first;
    out[a.axis] = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Shape& shape = inputs_[i]->output_shape;
      bool compatible = inputs_[i]->output_dtype == DType::Float32 && shape.size() == first.size();
      for (size_t d = 0; compatible && d < shape.size(); ++d) {
        compatible = static_cast<int64_t>(d) == a.axis || shape[d] == first[d];
      }
      if (!compatible) {
        fail(fmt::format("input '{}' has shape {}, incompatible with input '{}' {} outside axis {}",
                         layer_.inputs[i], shape_to_string(shape), layer_.inputs[0],
                         shape_to_string(first), a.axis));
      }
      out[a.axis] = add(out[a.axis], shape[a.axis], "concatenated size");
    }
    return finish(std::move(out), 0, 0);
  }

  LayerInfo operator()(const LayerNormAttrs& a) const {
    const Shape& in = float_input(0, "[..., features]");
    if (!(a.eps > 0)) fail(fmt::format("eps must be positive, got {}", a.eps));
    return finish(in, mul(a.rms ? 1 : 2, in.back(), "parameter count"),
                  mul(kLayerNormFlops, numel(in), "FLOPs"));
  }

  LayerInfo operator()(const EmbeddingAttrs& a) const {
    const LayerInfo& in = only_input();
    if (in.output_dtype != DType::Int64 || in.output_shape.size() != 1) {
      fail(fmt::format("input '{}' is {} {}, expected int64 token ids [T]", layer_.inputs[0],
                       dtype_name(in.output_dtype), shape_to_string(in.output_shape)));
    }
    require_positive(a.num_embeddings, "num_embeddings");
    require_positive(a.dim, "dim");
    Shape out = {in.output_shape[0], a.dim};
    const int64_t params = mul(a.num_embeddings, a.dim, "parameter count");
    numel(out);  // overflow check before finish() multiplies by the dtype size
    return finish(std::move(out), params, 0);
  }

  LayerInfo operator()(const PositionEmbeddingAttrs& a) const {
    const Shape& in = float_input(2, "[T, D]");
    require_positive(a.max_positions, "max_positions");
    if (in[0] > a.max_positions && a.row < 0) {
      fail(fmt::format("sequence length {} exceeds max_positions {}", in[0], a.max_positions));
    }
    if (a.row < -1 || a.row >= a.max_positions) {
      fail(fmt::format("row {} is outside the table's {} rows (-1: row t for token t)", a.row, a.max_positions));
    }
    return finish(in, mul(a.max_positions, in[1], "parameter count"), numel(in));
  }

  LayerInfo operator()(const ClassTokenAttrs&) const {
    const Shape& in = float_input(2, "[T, D]");
    return finish({add(in[0], 1, "token count"), in[1]}, in[1], 0);
  }

  LayerInfo operator()(const ImageToTokensAttrs&) const {
    const Shape& in = float_input(3, "[C, H, W]");
    return finish({mul(in[1], in[2], "token count"), in[0]}, 0, 0);
  }

  LayerInfo operator()(const TakeTokenAttrs& a) const {
    const Shape& in = float_input(2, "[T, D]");
    if (a.index < 0 || a.index >= in[0]) {
      fail(fmt::format("index {} is outside the {} tokens", a.index, in[0]));
    }
    return finish({in[1]}, 0, 0);
  }

  LayerInfo operator()(const SelfAttentionAttrs& a) const {
    const Shape& in = float_input(2, "[T, D]");
    const AttentionDims dims = attention_dims(a, in[1]);
    const int64_t tokens = in[0];
    const AttentionWeights weights = attention_weights(a, dims, in[1]);
    // Projections: 2 T FLOPs per matrix weight, T per bias. Scores Q K^T and weights x V:
    // 2 T^2 H head_dim and 2 T^2 H v_head_dim; softmax over H x T x T scores. Dense kernels
    // run a causal core whole; a fused (flash) causal core computes the half it keeps.
    const int64_t tokens_sq = mul(tokens, tokens, "FLOPs");
    int64_t flops = mul(mul(2, tokens, "FLOPs"), weights.matrix, "FLOPs");
    flops = add(flops, mul(tokens, weights.vectors, "FLOPs"), "FLOPs");
    const int64_t core_width = add(dims.head_dim, dims.v_head_dim, "FLOPs");
    int64_t core = mul(mul(2, tokens_sq, "FLOPs"), mul(dims.heads, core_width, "FLOPs"), "FLOPs");
    core = add(core, mul(mul(kSoftmaxFlops, dims.heads, "FLOPs"), tokens_sq, "FLOPs"), "FLOPs");
    if (a.flash && a.causal) core /= 2;
    flops = add(flops, core, "FLOPs");
    return finish(in, weights.total, flops);
  }

  // The per-head sizes of an attention layer on width D (graph::attention_heads), checked.
  using AttentionDims = AttentionHeads;
  AttentionDims attention_dims(const SelfAttentionAttrs& a, int64_t width) const {
    require_positive(a.heads, "heads");
    if (!(a.dropout >= 0 && a.dropout < 1)) fail(fmt::format("dropout must be in [0, 1), got {}", a.dropout));
    for (const auto& [value, name] : {std::pair{a.kv_heads, "kv_heads"}, {a.head_dim, "head_dim"},
                                      {a.rotary_dims, "rotary_dims"}, {a.q_lora_rank, "q_lora_rank"},
                                      {a.kv_lora_rank, "kv_lora_rank"}, {a.rope_head_dim, "rope_head_dim"},
                                      {a.v_head_dim, "v_head_dim"}}) {
      if (value < 0) fail(fmt::format("{} must not be negative, got {}", name, value));
    }
    if (!(a.rotary_theta >= 0)) fail(fmt::format("rotary_theta must not be negative, got {}", a.rotary_theta));
    const AttentionDims dims = attention_heads(a, width);
    if (a.heads % dims.kv_heads != 0) {
      fail(fmt::format("{} heads are not divisible by {} kv_heads", a.heads, dims.kv_heads));
    }
    if (a.head_dim == 0 && width % a.heads != 0) {
      fail(fmt::format("width {} is not divisible by {} heads", width, a.heads));
    }
    if (a.kv_lora_rank > 0 && !(a.rope_head_dim > 0 && a.rope_head_dim < dims.head_dim)) {
      fail(fmt::format("latent attention needs 0 < rope_head_dim < head_dim {}, got {}", dims.head_dim,
                       a.rope_head_dim));
    }
    if (a.kv_lora_rank > 0 && a.kv_heads != 0 && a.kv_heads != a.heads) {
      fail("latent attention has one key and value head per query head: leave kv_heads unset");
    }
    if (a.rotary_dims > dims.head_dim || a.rotary_dims % 2 != 0) {
      fail(fmt::format("rotary_dims {} must be even and at most head_dim {}", a.rotary_dims, dims.head_dim));
    }
    return dims;
  }

  // Matrix weights (2 FLOPs a token each), bias and norm vectors (one each) and their sum.
  struct AttentionWeights {
    int64_t matrix = 0, vectors = 0, total = 0;
  };
  AttentionWeights attention_weights(const SelfAttentionAttrs& a, const AttentionDims& d, int64_t width) const {
    AttentionWeights w;
    const auto matrix = [&](int64_t rows, int64_t cols) { w.matrix = add(w.matrix, mul(rows, cols, "parameter count"), "parameter count"); };
    const auto vector = [&](int64_t size) { w.vectors = add(w.vectors, size, "parameter count"); };
    const int64_t q_width = mul(d.heads, d.head_dim, "parameter count");
    const int64_t v_width = mul(d.heads, d.v_head_dim, "parameter count");
    if (a.kv_lora_rank > 0) {
      if (a.q_lora_rank > 0) {
        matrix(width, a.q_lora_rank);
        vector(a.q_lora_rank);  // q_a_layernorm
        matrix(a.q_lora_rank, q_width);
      } else {
        matrix(width, q_width);
      }
      matrix(width, add(a.kv_lora_rank, a.rope_head_dim, "parameter count"));
      vector(a.kv_lora_rank);  // kv_a_layernorm
      const int64_t nope = d.head_dim - a.rope_head_dim;
      matrix(a.kv_lora_rank, mul(d.heads, add(nope, d.v_head_dim, "parameter count"), "parameter count"));
    } else {
      const int64_t kv_width = mul(d.kv_heads, d.head_dim, "parameter count");
      matrix(width, q_width);
      matrix(width, kv_width);
      matrix(width, mul(d.kv_heads, d.v_head_dim, "parameter count"));
      if (a.qkv_bias) vector(add(q_width, add(kv_width, mul(d.kv_heads, d.v_head_dim, "parameter count"), "parameter count"), "parameter count"));
      if (a.qk_norm) vector(mul(2, d.head_dim, "parameter count"));
    }
    matrix(v_width, width);
    if (a.out_bias) vector(width);
    w.total = add(w.matrix, w.vectors, "parameter count");
    return w;
  }

  LayerInfo operator()(const MoeAttrs& a) const {
    const Shape& in = float_input(2, "[T, D]");
    require_positive(a.experts, "experts");
    require_positive(a.top_k, "top_k");
    require_positive(a.expert_ffn, "expert_ffn");
    if (a.top_k > a.experts) fail(fmt::format("top_k {} exceeds the {} experts", a.top_k, a.experts));
    if (a.shared_ffn < 0) fail(fmt::format("shared_ffn must not be negative, got {}", a.shared_ffn));
    if (a.shared_gate && a.shared_ffn == 0) fail("shared_gate needs a shared expert (shared_ffn > 0)");
    if (!(a.capacity_factor == 0 || a.capacity_factor >= 1)) {
      fail(fmt::format("capacity_factor must be 0 (dropless) or at least 1, got {}", a.capacity_factor));
    }
    const int64_t width = in[1], tokens = in[0];
    // A SwiGLU MLP of width F: gate and up D x F, down F x D.
    const int64_t expert = mul(3, mul(width, a.expert_ffn, "parameter count"), "parameter count");
    const int64_t shared = add(mul(3, mul(width, a.shared_ffn, "parameter count"), "parameter count"),
                               a.shared_gate ? width : 0, "parameter count");
    const int64_t router = mul(width, a.experts, "parameter count");
    const int64_t params = add(add(router, mul(a.experts, expert, "parameter count"), "parameter count"), shared,
                               "parameter count");
    const int64_t active = add(add(router, mul(a.top_k, expert, "parameter count"), "parameter count"), shared,
                               "parameter count");
    // 2 T FLOPs per active weight; SiLU and the gate's product on each expert's hidden values;
    // the routing softmax and the weighted sum of top_k outputs.
    int64_t flops = mul(mul(2, tokens, "FLOPs"), active, "FLOPs");
    const int64_t hidden = add(mul(a.top_k, a.expert_ffn, "FLOPs"), a.shared_ffn, "FLOPs");
    flops = add(flops, mul(mul(kSiluFlops + 1, tokens, "FLOPs"), hidden, "FLOPs"), "FLOPs");
    flops = add(flops, mul(tokens, add(mul(kSoftmaxFlops, a.experts, "FLOPs"), mul(2, mul(a.top_k, width, "FLOPs"), "FLOPs"), "FLOPs"), "FLOPs"), "FLOPs");
    LayerInfo info = finish(in, params, flops);
    info.active_params = active;
    return info;
  }

  LayerInfo operator()(const HardtanhAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (!std::isfinite(a.min_val) || !std::isfinite(a.max_val) || !(a.min_val < a.max_val)) {
      fail(fmt::format("min_val {} must be below max_val {}, both finite", a.min_val, a.max_val));
    }
    return finish(in, 0, mul(kHardtanhFlops, numel(in), "FLOPs"));
  }

  LayerInfo element_wise(int64_t flops_per_element) const {
    const Shape& in = float_input(0, "");
    return finish(in, 0, mul(flops_per_element, numel(in), "FLOPs"));
  }
  LayerInfo operator()(const SigmoidAttrs&) const { return element_wise(kSigmoidFlops); }
  LayerInfo operator()(const SiluAttrs&) const { return element_wise(kSiluFlops); }
  LayerInfo operator()(const HardswishAttrs&) const { return element_wise(kHardswishFlops); }
  LayerInfo operator()(const HardsigmoidAttrs&) const { return element_wise(kHardsigmoidFlops); }
  LayerInfo operator()(const LeakyReluAttrs& a) const {
    if (!std::isfinite(a.negative_slope)) fail(fmt::format("negative_slope {} is not finite", a.negative_slope));
    return element_wise(kLeakyReluFlops);
  }
  LayerInfo operator()(const EluAttrs& a) const {
    if (!std::isfinite(a.alpha)) fail(fmt::format("alpha {} is not finite", a.alpha));
    return element_wise(kEluFlops);
  }
  LayerInfo operator()(const TanhAttrs&) const { return element_wise(kTanhFlops); }
  LayerInfo operator()(const ScaleAttrs& a) const { return learned_broadcast(a.shape, a.weight_shape, "scale"); }
  LayerInfo operator()(const ShiftAttrs& a) const { return learned_broadcast(a.shape, a.weight_shape, "shift"); }
  // A learned tensor of `shape` (held as `weight_shape`, when given) broadcast against the input.
  LayerInfo learned_broadcast(const Shape& shape, const Shape& weight_shape, const char* what) const {
    const Shape& in = float_input(0, "");
    if (shape.empty() || shape.size() > in.size()) {
      fail(fmt::format("{} shape {} must have 1 to {} dims (the input is {})", what, shape_to_string(shape), in.size(),
                       shape_to_string(in)));
    }
    if (!weight_shape.empty() && numel(weight_shape) != numel(shape)) {
      fail(fmt::format("{} weight_shape {} does not hold the {} elements of shape {}", what, shape_to_string(weight_shape),
                       numel(shape), shape_to_string(shape)));
    }
    const size_t offset = in.size() - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] != 1 && shape[i] != in[offset + i]) {
        fail(fmt::format("{} shape {} does not broadcast against the input {}", what, shape_to_string(shape),
                         shape_to_string(in)));
      }
    }
    return finish(in, numel(shape), numel(in));
  }
  LayerInfo operator()(const SoftplusAttrs&) const { return element_wise(kSoftplusFlops); }
  LayerInfo operator()(const ErfAttrs&) const { return element_wise(kTanhFlops); }  // a polynomial, as tanh's
  LayerInfo operator()(const PReluAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (a.num_parameters != 1 && a.num_parameters != in[0]) {
      fail(fmt::format("num_parameters {} must be 1 or the {} channels of {}", a.num_parameters, in[0], shape_to_string(in)));
    }
    return finish(in, a.num_parameters, mul(2, numel(in), "FLOPs"));
  }
  LayerInfo operator()(const InstanceNormAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (in.size() < 2 || in.size() > 4) fail(fmt::format("input {} is not [C, L], [C, H, W] or [C, D, H, W]", shape_to_string(in)));
    if (!(a.eps > 0)) fail(fmt::format("eps must be positive, got {}", a.eps));
    return finish(in, a.affine ? mul(2, in[0], "parameter count") : 0, mul(kBatchNormFlops, numel(in), "FLOPs"));
  }
  LayerInfo operator()(const UpsampleAttrs& a) const {
    const Shape& in = float_input(3, "[C, H, W]");
    require_positive(a.scale, "scale");
    if (a.mode != "nearest" && a.mode != "bilinear") fail(fmt::format("mode must be \"nearest\" or \"bilinear\", got \"{}\"", a.mode));
    if (a.mode == "nearest" && a.align_corners) fail("align_corners applies to bilinear up-sampling only");
    const Shape out{in[0], mul(in[1], a.scale.h, "height"), mul(in[2], a.scale.w, "width")};
    // Nearest copies; bilinear blends 4 inputs for each output (3 multiply-adds and a weight).
    return finish(out, 0, a.mode == "bilinear" ? mul(8, numel(out), "FLOPs") : 0);
  }
  LayerInfo operator()(const ExpandAttrs& a) const {
    const Shape& in = float_input(0, "");
    bool fits = a.shape.size() == in.size();
    for (size_t d = 0; fits && d < in.size(); ++d) fits = a.shape[d] >= 1 && (in[d] == a.shape[d] || in[d] == 1);
    if (!fits) {
      fail(fmt::format("input {} does not expand to {} (each dim equal or 1)", shape_to_string(in), shape_to_string(a.shape)));
    }
    return finish(a.shape, 0, 0);  // a view; the layer after it copies
  }

  LayerInfo operator()(const PadAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (a.pads.size() != 2 * in.size()) {
      fail(fmt::format("pads {} must hold {} values (before and after each of {})", shape_to_string(a.pads), 2 * in.size(),
                       shape_to_string(in)));
    }
    if (a.mode != "constant" && a.mode != "reflect" && a.mode != "replicate") {
      fail(fmt::format("mode must be \"constant\", \"reflect\" or \"replicate\", got \"{}\"", a.mode));
    }
    Shape out = in;
    for (size_t d = 0; d < in.size(); ++d) {
      const int64_t before = a.pads[d], after = a.pads[d + in.size()];
      if (before < 0 || after < 0) fail(fmt::format("pads {} crop (a negative pad); burst pads only", shape_to_string(a.pads)));
      if (a.mode == "reflect" && (before >= in[d] || after >= in[d])) {
        fail(fmt::format("reflection pads {} must be below the input's size {} in each dim", shape_to_string(a.pads), shape_to_string(in)));
      }
      out[d] = add(in[d], before + after, "padded size");
    }
    if (a.mode != "constant" && std::any_of(a.pads.begin(), a.pads.begin() + 1, [](int64_t p) { return p != 0; })) {
      fail("reflection and replication pad the spatial dims only, not the channels");
    }
    return finish(out, 0, 0);
  }

  LayerInfo operator()(const MulAttrs&) const {
    const Shape* shapes[2] = {&inputs_[0]->output_shape, &inputs_[1]->output_shape};
    for (size_t i = 0; i < 2; ++i) {
      if (inputs_[i]->output_dtype != DType::Float32) {
        fail(fmt::format("input '{}' is {}, expected float32", layer_.inputs[i],
                         dtype_name(inputs_[i]->output_dtype)));
      }
    }
    const auto incompatible = [&] {
      fail(fmt::format("inputs '{}' {} and '{}' {} do not broadcast (per-sample shapes of one rank, "
                       "each dim equal or 1)",
                       layer_.inputs[0], shape_to_string(*shapes[0]), layer_.inputs[1],
                       shape_to_string(*shapes[1])));
    };
    if (shapes[0]->size() != shapes[1]->size()) incompatible();
    Shape out = *shapes[0];
    for (size_t d = 0; d < out.size(); ++d) {
      const int64_t a = (*shapes[0])[d], b = (*shapes[1])[d];
      if (a != b && a != 1 && b != 1) incompatible();
      out[d] = std::max(a, b);
    }
    const int64_t elements = numel(out);
    return finish(std::move(out), 0, elements);
  }

  LayerInfo operator()(const MatmulAttrs&) const {
    for (size_t i = 0; i < 2; ++i) {
      if (inputs_[i]->output_dtype != DType::Float32) {
        fail(fmt::format("input '{}' is {}, expected float32", layer_.inputs[i], dtype_name(inputs_[i]->output_dtype)));
      }
    }
    const Shape& a = inputs_[0]->output_shape;
    const Shape& b = inputs_[1]->output_shape;
    bool fits = a.size() >= 2 && a.size() == b.size() && a.back() == b[b.size() - 2];
    for (size_t d = 0; fits && d + 2 < a.size(); ++d) fits = a[d] == b[d];
    if (!fits) {
      fail(fmt::format("inputs '{}' {} and '{}' {} do not multiply ([..., n, k] x [..., k, m], the leading "
                       "dims equal)",
                       layer_.inputs[0], shape_to_string(a), layer_.inputs[1], shape_to_string(b)));
    }
    Shape out = a;
    out.back() = b.back();
    // A multiply and an add for each of the k terms of every output element.
    return finish(out, 0, mul(2 * a.back(), numel(out), "FLOPs"));
  }

  LayerInfo operator()(const SoftmaxAttrs&) const { return element_wise(kSoftmaxFlops); }
  LayerInfo operator()(const MulScalarAttrs& a) const {
    if (!std::isfinite(a.factor)) fail(fmt::format("factor {} is not finite", a.factor));
    return element_wise(1);
  }
  LayerInfo operator()(const PowScalarAttrs& a) const {
    if (!std::isfinite(a.exponent)) fail(fmt::format("exponent {} is not finite", a.exponent));
    return element_wise(1);
  }
  LayerInfo operator()(const AddScalarAttrs& a) const {
    if (!std::isfinite(a.value)) fail(fmt::format("value {} is not finite", a.value));
    return element_wise(1);
  }
  LayerInfo operator()(const SqrtAttrs&) const { return element_wise(1); }
  LayerInfo operator()(const ReciprocalAttrs&) const { return element_wise(1); }
  LayerInfo operator()(const RotaryAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (in.size() < 2 || in.back() % 2 != 0) fail(fmt::format("input {} is not [..., T, d] with d even", shape_to_string(in)));
    if (!(a.theta > 1) || !std::isfinite(a.theta)) fail(fmt::format("theta {} must be a finite number above 1", a.theta));
    return element_wise(3);  // x cos + rotate_half(x) sin: two multiplies and an add
  }
  LayerInfo operator()(const CausalMaskAttrs&) const {
    const Shape& in = float_input(0, "");
    if (in.size() < 2 || in[in.size() - 1] != in[in.size() - 2]) {
      fail(fmt::format("input {} is not scores [..., T, T]", shape_to_string(in)));
    }
    return finish(in, 0, 0);  // a select, no arithmetic
  }

  LayerInfo operator()(const StochasticDepthAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (!(a.p >= 0 && a.p < 1)) fail(fmt::format("p must be in [0, 1), got {}", a.p));
    return finish(in, 0, mul(kDropoutFlops, numel(in), "FLOPs"));  // one multiply per element
  }

  LayerInfo operator()(const ReshapeAttrs& a) const {
    const Shape& in = float_input(0, "");
    for (const int64_t dim : a.shape) require_positive(dim, "every dimension of shape");
    if (numel(a.shape) != numel(in)) {
      fail(fmt::format("shape {} holds {} elements, input {} holds {}", shape_to_string(a.shape),
                       numel(a.shape), shape_to_string(in), numel(in)));
    }
    return finish(a.shape, 0, 0);
  }

  LayerInfo operator()(const TransposeAttrs& a) const {
    const Shape& in = float_input(0, "");
    Shape sorted = a.perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted.size() != in.size() || sorted[i] != static_cast<int64_t>(i)) {
        fail(fmt::format("perm {} is not a permutation of the {} dims of {}", shape_to_string(a.perm),
                         in.size(), shape_to_string(in)));
      }
    }
    Shape out;
    for (const int64_t axis : a.perm) out.push_back(in[static_cast<size_t>(axis)]);
    return finish(std::move(out), 0, 0);
  }

  LayerInfo operator()(const SliceAttrs& a) const {
    const Shape& in = float_input(0, "");
    if (a.axis < 0 || a.axis >= static_cast<int64_t>(in.size())) {
      fail(fmt::format("axis {} is outside the {} dims of {}", a.axis, in.size(), shape_to_string(in)));
    }
    const int64_t size = in[static_cast<size_t>(a.axis)];
    if (a.start < 0 || a.end > size || a.start >= a.end) {
      fail(fmt::format("[start, end) = [{}, {}) is not a non-empty range of axis {} (size {})", a.start,
                       a.end, a.axis, size));
    }
    Shape out = in;
    out[static_cast<size_t>(a.axis)] = a.end - a.start;
    return finish(std::move(out), 0, 0);
  }

  LayerInfo operator()(const MeanAttrs& a) const {
    const Shape& in = float_input(0, "");
    std::vector<bool> reduced(in.size(), false);
    for (const int64_t axis : a.axes) {
      if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || reduced[static_cast<size_t>(axis)]) {
        fail(fmt::format("axes {} must be distinct dims of {}", shape_to_string(a.axes), shape_to_string(in)));
      }
      reduced[static_cast<size_t>(axis)] = true;
    }
    Shape out;
    for (size_t d = 0; d < in.size(); ++d) {
      if (!reduced[d]) {
        out.push_back(in[d]);
      } else if (a.keepdims) {
        out.push_back(1);
      }
    }
    return finish(std::move(out), 0, numel(in));  // one add per input element
  }

  LayerInfo operator()(const SoftmaxCrossEntropyAttrs& a) const {
    const Shape& in = float_input(0, "[classes] or [T, classes]");
    if (in.size() > 2) {
      fail(fmt::format("input '{}' has shape {}, expected [classes] or [T, classes]",
                       layer_.inputs[0], shape_to_string(in)));
    }
    if (!(a.weight > 0)) fail(fmt::format("weight must be positive, got {}", a.weight));
    return finish({}, 0, mul(kCrossEntropyFlops, numel(in), "FLOPs"));
  }

 private:
  const LayerSpec& layer_;
  const std::vector<const LayerInfo*>& inputs_;
};

}  // namespace

LayerInfo infer_layer(const LayerSpec& layer, const std::vector<const LayerInfo*>& inputs) {
  return std::visit(Inferrer(layer, inputs), layer.attrs);
}

}  // namespace burst::graph
