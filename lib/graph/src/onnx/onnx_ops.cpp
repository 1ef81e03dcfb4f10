// The ONNX op handlers: each checks that burst's layer computes exactly what the node does
// (refusing attribute values it would not), appends the layer and keeps its weights in
// PyTorch's layout. ONNX semantics: https://onnx.ai/onnx/operators/ (opsets 11-17).
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"
#include "shape_inference.h"

namespace burst::graph::onnx_import {
namespace {

// ONNX pads are [begin per spatial dim..., end per spatial dim...]; burst (and torch.nn)
// pad both sides alike.
Pair symmetric_pads(const onnx::NodeProto& node, const std::vector<int64_t>& pads) {
  if (pads.empty()) return {0, 0};
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) {
    throw UserError(fmt::format("{}: pads {} are not the same at both ends of each dim (burst pads "
                                "symmetrically, as torch.nn does)",
                                describe(node), fmt::join(pads, ",")));
  }
  return {pads[0], pads[1]};
}

Pair two(const onnx::NodeProto& node, const char* name, const std::vector<int64_t>& values, Pair fallback) {
  if (values.empty()) return fallback;
  if (values.size() != 2) {
    throw UserError(fmt::format("{}: {} has {} values, burst handles 2-D windows only", describe(node),
                                name, values.size()));
  }
  return {values[0], values[1]};
}

// A Conv's or ConvTranspose's window attributes (kernel from the 4-D weight, strides,
// dilations, symmetric pads, group, bias); out_channels is the caller's.
template <typename ConvAttrs>
ConvAttrs conv_window(const onnx::NodeProto& node, const ConstantTensor& weight, bool bias) {
  ConvAttrs attrs;
  attrs.kernel = two(node, "kernel_shape", attr_ints(node, "kernel_shape", {}), {weight.dims[2], weight.dims[3]});
  if (attrs.kernel.h != weight.dims[2] || attrs.kernel.w != weight.dims[3]) {
    throw UserError(fmt::format("{}: kernel_shape differs from the weight's", describe(node)));
  }
  attrs.stride = two(node, "strides", attr_ints(node, "strides", {}), {1, 1});
  attrs.dilation = two(node, "dilations", attr_ints(node, "dilations", {}), {1, 1});
  attrs.padding = symmetric_pads(node, attr_ints(node, "pads", {}));
  attrs.groups = attr_int(node, "group", 1);
  attrs.bias = bias;
  return attrs;
}

void require_no_auto_pad(const onnx::NodeProto& node) {
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET") {
    throw UserError(fmt::format("{}: auto_pad {} is not supported; export with explicit pads",
                                describe(node), auto_pad));
  }
}

// A row-major [rows, cols] matrix as [cols, rows].
std::vector<float> transpose_matrix(const std::vector<float>& matrix, int64_t rows, int64_t cols) {
  if (matrix.empty()) return matrix;  // imported without weight values
  BURST_ASSERT(matrix.size() == static_cast<size_t>(rows * cols), "matrix size");
  std::vector<float> result(matrix.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) result[static_cast<size_t>(c * rows + r)] = matrix[static_cast<size_t>(r * cols + c)];
  }
  return result;
}

// A pooling window's kernel, strides (ONNX's default 1, where burst's unset stride is the
// kernel), symmetric pads and ceil mode.
template <typename PoolAttrs>
PoolAttrs window_attrs(const onnx::NodeProto& node) {
  require_no_auto_pad(node);
  PoolAttrs attrs;
  attrs.kernel = two(node, "kernel_shape", attr_ints(node, "kernel_shape", {}), {0, 0});
  if (attrs.kernel.h == 0) throw UserError(fmt::format("{}: kernel_shape is required", describe(node)));
  attrs.stride = two(node, "strides", attr_ints(node, "strides", {}), {1, 1});
  attrs.padding = symmetric_pads(node, attr_ints(node, "pads", {}));
  attrs.ceil_mode = attr_int(node, "ceil_mode", 0) != 0;
  return attrs;
}


}  // namespace

void Lowering::conv(const onnx::NodeProto& node) {
  require_no_auto_pad(node);
  const std::string x = layer_input(node, 0);
  if (is_volume(x)) return conv3d(node);
  ConstantTensor& weight = constant_input(node, 1);
  if (weight.dims.size() != 4) fail(node, "burst converts 2-D convolutions only (a 4-D weight)");
  auto attrs = conv_window<Conv2dAttrs>(node, weight, has_input(node, 2));
  attrs.out_channels = weight.dims[0];
  const std::string layer = add_layer(node, weight.name, {x}, attrs);  // checks groups and sizes
  const int64_t in_channels = info_of(x).output_shape.at(0);
  conv_weights(node, layer, weight, {attrs.out_channels, in_channels / attrs.groups, attrs.kernel.h, attrs.kernel.w},
               "[out, in / groups, kh, kw] for its input", attrs.out_channels);
}

void Lowering::conv_transpose(const onnx::NodeProto& node) {
  // torch.nn.ConvTranspose2d: weight [in, out / groups, kh, kw].
  require_no_auto_pad(node);
  if (!attr_ints(node, "output_shape", {}).empty()) fail(node, "sets output_shape; burst takes pads and output_padding");
  const std::string x = layer_input(node, 0);
  ConstantTensor& weight = constant_input(node, 1);
  if (weight.dims.size() != 4) fail(node, "burst converts 2-D transposed convolutions only (a 4-D weight)");
  auto attrs = conv_window<ConvTranspose2dAttrs>(node, weight, has_input(node, 2));
  attrs.out_channels = weight.dims[1] * attrs.groups;
  attrs.output_padding = two(node, "output_padding", attr_ints(node, "output_padding", {}), {0, 0});
  const std::string layer = add_layer(node, weight.name, {x}, attrs);  // checks groups and sizes
  const int64_t in_channels = info_of(x).output_shape.at(0);
  conv_weights(node, layer, weight, {in_channels, attrs.out_channels / attrs.groups, attrs.kernel.h, attrs.kernel.w},
               "[in, out / groups, kh, kw] for its input", attrs.out_channels);
}

void Lowering::conv_weights(const onnx::NodeProto& node, const std::string& layer, ConstantTensor& weight,
                            const std::vector<int64_t>& weight_shape, const char* layout, int64_t out_channels) {
  LayerWeights weights;
  weights.parameters.push_back(initial(weight));
  require_shape(node, weights.parameters.back(), weight_shape, layout);
  if (has_input(node, 2)) {
    weights.parameters.push_back(initial(constant_input(node, 2)));
    require_shape(node, weights.parameters.back(), {out_channels}, "one value per output channel");
  }
  weights_[layer] = std::move(weights);
}

void Lowering::batch_normalization(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  BatchNorm2dAttrs attrs;
  attrs.eps = attr_float(node, "epsilon", 1e-5);
  // ONNX's running mean is momentum * mean + (1 - momentum) * batch mean; torch's momentum
  // weighs the batch instead: torch momentum = 1 - ONNX momentum.
  attrs.momentum = 1.0 - attr_float(node, "momentum", 0.9);
  if (!(attrs.momentum >= 0 && attrs.momentum <= 1)) fail(node, "momentum must lie in [0, 1]");
  attrs.momentum = std::round(attrs.momentum * 1e9) / 1e9;  // 1 - 0.9 is 0.09999999999999998
  LayerWeights weights;
  ConstantTensor& scale = constant_input(node, 1);
  weights.parameters.push_back(initial(scale));
  weights.parameters.push_back(initial(constant_input(node, 2)));
  weights.buffers.push_back(initial(constant_input(node, 3)));
  weights.buffers.push_back(initial(constant_input(node, 4)));
  only_first_output_used(node, "running statistics");
  const std::string layer = add_layer(node, scale.name, {x}, attrs);
  const int64_t channels = info_of(x).output_shape.at(0);
  for (const auto* group : {&weights.parameters, &weights.buffers}) {
    for (const InitialTensor& tensor : *group) require_shape(node, tensor, {channels}, "one value per channel");
  }
  weights_[layer] = std::move(weights);
}

void Lowering::gemm(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  if (attr_int(node, "transA", 0) != 0) fail(node, "transA=1 is not supported");
  if (!near(attr_float(node, "alpha", 1), 1) || !near(attr_float(node, "beta", 1), 1)) {
    fail(node, "alpha and beta must be 1 (torch.nn.Linear's)");
  }
  ConstantTensor& weight = constant_input(node, 1);
  if (weight.dims.size() != 2) fail(node, "the weight must be a matrix");
  // transB=1 reads B as [out, in], torch's layout; a Transpose before it flips that again.
  const bool as_torch = (attr_int(node, "transB", 0) != 0) != input(node, 1).transposed;
  const int64_t out = as_torch ? weight.dims[0] : weight.dims[1];
  const int64_t in = as_torch ? weight.dims[1] : weight.dims[0];
  LayerWeights weights;
  weights.parameters.push_back(torch_linear_weight(weight, as_torch));
  LinearAttrs attrs{out, has_input(node, 2), ""};
  if (attrs.bias) {
    ConstantTensor& bias = constant_input(node, 2);
    if (bias.element_count() != out) fail(node, fmt::format("the bias must have {} values", out));
    weights.parameters.push_back(initial(bias, {out}));  // [out] or [1, out]: torch's [out]
  }
  if (info_of(x).output_shape != Shape{in}) {
    fail(node, fmt::format("input '{}' has per-sample shape {}; a [{}, {}] weight needs [{}]", x,
                           shape_to_string(info_of(x).output_shape), out, in, in));
  }
  weights_[add_layer(node, weight.name, {x}, attrs)] = std::move(weights);
}

void Lowering::matmul(const onnx::NodeProto& node) {
  // x [..., in] times a constant [in, out], or Transpose(W [out, in]) as torch writes
  // F.linear: a linear layer without bias; an Add of a bias [out] that follows joins it (add()).
  const std::string x = layer_input(node, 0);
  const Value& matrix = input(node, 1);
  if (!matrix.layer.empty()) {  // two computed tensors: a batched product per sample
    add_layer(node, "", {x, matrix.layer}, MatmulAttrs{});
    return;
  }
  ConstantTensor& weight = constant_input(node, 1);
  if (weight.dims.size() != 2) fail(node, "burst takes MatMul with a constant matrix or a computed tensor only");
  const int64_t in = matrix.transposed ? weight.dims[1] : weight.dims[0];
  const int64_t out = matrix.transposed ? weight.dims[0] : weight.dims[1];
  if (info_of(x).output_shape.empty() || info_of(x).output_shape.back() != in) {
    fail(node, fmt::format("input '{}' has per-sample shape {}; a [{}, {}] weight needs [..., {}]", x,
                           shape_to_string(info_of(x).output_shape), in, out, in));
  }
  if (const auto tied = embedding_of_table_.find(weight.name); tied != embedding_of_table_.end()) {
    // The embedding's table [vocab, D] read transposed: a head tied to it (GPTs' LM head), whose
    // weight stays the embedding's.
    if (!matrix.transposed) fail(node, fmt::format("reads embedding table '{}' untransposed; a tied head reads it as x @ table^T", weight.name));
    add_layer(node, "", {x}, LinearAttrs{out, false, tied->second});
    return;
  }
  LayerWeights weights;
  weights.parameters.push_back(torch_linear_weight(weight, matrix.transposed));
  weights_[add_layer(node, weight.name, {x}, LinearAttrs{out, false, ""})] = std::move(weights);
}

InitialTensor Lowering::torch_linear_weight(ConstantTensor& weight, bool as_torch) {
  BURST_ASSERT(weight.dims.size() == 2, "a linear weight is a matrix");
  const int64_t out = as_torch ? weight.dims[0] : weight.dims[1];
  const int64_t in = as_torch ? weight.dims[1] : weight.dims[0];
  InitialTensor w = initial(weight, {out, in});
  if (!as_torch) w.values = transpose_matrix(w.values, in, out);  // [in, out] -> torch's [out, in]
  return w;
}

void Lowering::div(const onnx::NodeProto& node) {
  if (is_integer(node, 0) && is_integer(node, 1)) return integer_arithmetic(node);
  if (fold_scalar_division(node)) return;  // 1 / sqrt(d): attention's scale (torch 2.x)
  if (!input(node, 0).layer.empty() && fuse_gelu(node)) return;
  const std::optional<double> numerator = python_number(node, 0);
  if (numerator && !input(node, 1).layer.empty()) {  // c / x: torch.rsqrt's 1 / sqrt(x)
    const std::string inverse = add_layer(node, "", {input(node, 1).layer}, ReciprocalAttrs{});
    if (*numerator != 1) scalar_multiply(node, inverse, *numerator);
    return;
  }
  // A Python number, not an initializer: a learned divisor (x / self.temperature) must train.
  const std::optional<double> divisor = python_number(node, 1);
  if (!input(node, 0).layer.empty() && divisor && *divisor != 0) {
    return scalar_multiply(node, input(node, 0).layer, 1.0 / *divisor);  // x / c (attention's scale)
  }
  fail(node, "divides a tensor; burst reads a float Div of a tensor by a nonzero Python number (and GELU's x / "
             "sqrt(2)), not by a tensor or a learned one");
}

void Lowering::softmax(const onnx::NodeProto& node) {
  // Over the last dim only. Without an `axis` the default differs by opset (1, flattening
  // what follows, before 13; -1 from 13): both are the last dim only for [B, C].
  const std::string x = layer_input(node, 0);
  const auto rank = static_cast<int64_t>(info_of(x).output_shape.size()) + 1;
  if (find_attribute(node, "axis") == nullptr && rank != 2) {
    fail(node, "has no axis, whose default differs between opsets 11-12 and 13 on; export with an explicit axis");
  }
  int64_t axis = attr_int(node, "axis", -1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) fail(node, fmt::format("softmax over axis {}; burst takes the last axis only", axis));
  add_layer(node, "", {x}, SoftmaxAttrs{});
}

void Lowering::pattern_only(const onnx::NodeProto& node) {
  fail(node, fmt::format("burst reads {} only inside torch's LayerNorm and GELU "
                         "(docs/model-import.md, \"Patterns\")",
                         node.op_type()));
}

void Lowering::add(const onnx::NodeProto& node) {
  if (is_integer(node, 0) && is_integer(node, 1)) return integer_arithmetic(node);
  const Value& a = input(node, 0);
  const Value& b = input(node, 1);
  if (!a.layer.empty() && !b.layer.empty()) {
    add_layer(node, "", {a.layer, b.layer}, AddAttrs{});
    return;
  }
  for (int k = 0; k < 2; ++k) {  // x + a Python number (RMSNorm's eps)
    const std::optional<double> number = python_number(node, k);
    if (number && !input(node, 1 - k).layer.empty()) {
      return void(add_layer(node, "", {input(node, 1 - k).layer}, AddScalarAttrs{*number}));
    }
  }
  for (int k = 0; k < 2; ++k) {  // scores + mask[:T, :T], a table computed from a buffer
    const Value& table = input(node, k);
    if (table.constant != nullptr && table.constant->is_float && producers_.count(node.input(k)) != 0 &&
        !table.table_rows && !input(node, 1 - k).layer.empty() && table.constant->dims.size() >= 2) {
      return additive_mask(node, input(node, 1 - k).layer, *table.constant);
    }
  }
  // A bias after a MatMul that nothing else reads: the linear layer takes it.
  const Value& computed = a.layer.empty() ? b : a;
  const Value& bias = a.layer.empty() ? a : b;
  if (computed.layer.empty() || bias.constant == nullptr) {
    fail(node, "adds a computed tensor and integers, or two constants; burst adds tensors, or folds a bias");
  }
  // x [T, D] + a learned [1, T, D]: ViT's position embedding; + rows 0 .. T - 1 of a
  // learned [T', D]: a GPT's (nn.Embedding of torch.arange(T)).
  const Shape& x_shape = info_of(computed.layer).output_shape;
  if (x_shape.size() == 2 && !bias.table_rows && bias.constant->dims == std::vector<int64_t>{1, x_shape[0], x_shape[1]}) {
    return position_embedding(node, computed.layer, *bias.constant, false);
  }
  if (bias.table_rows) {
    const auto rows = static_cast<int64_t>(bias.table_rows->size());
    if (x_shape.size() != 2 || rows != x_shape[0] || bias.constant->dims.at(1) != x_shape[1]) {
      fail(node, fmt::format("adds {} rows of table '{}' [{}] to {}; burst adds one row [D] to each token of [T, D]",
                             rows, bias.constant->name, fmt::join(bias.constant->dims, ", "), shape_to_string(x_shape)));
    }
    return position_embedding(node, computed.layer, *bias.constant, true, *bias.table_rows);
  }
  auto* linear = layers_.back().name == computed.layer ? std::get_if<LinearAttrs>(&layers_.back().attrs) : nullptr;
  const int64_t features = info_of(computed.layer).output_shape.back();
  const std::string& matmul_output = node.input(a.layer.empty() ? 1 : 0);
  if (linear == nullptr || linear->bias || uses(matmul_output) != 1 || bias.constant->element_count() != features ||
      bias.constant->dims.size() != 1) {
    const int term = a.layer.empty() ? 0 : 1;
    if (is_float_initializer(node, term)) return learned_tensor(node, computed.layer, term, true);  // x + a learned tensor
    fail(node, "adds a constant that is no learned tensor; burst folds a bias [out] into the MatMul just before it, "
               "and adds learned tensors (initializers)");
  }
  linear->bias = true;
  infos_[computed.layer] = infer_layer(layers_.back(), {&info_of(layers_.back().inputs.at(0))});
  weights_[computed.layer].parameters.push_back(initial(*bias.constant));
  bind_layer(node.output(0), computed.layer);
}

void Lowering::mul(const onnx::NodeProto& node) {
  if (is_integer(node, 0) && is_integer(node, 1)) return integer_arithmetic(node);
  if (fold_float_arithmetic(node)) return;  // tables of constants (rotary cos and sin)
  for (int k = 0; k < 2; ++k) {
    if (is_float_initializer(node, k) && !input(node, 1 - k).layer.empty()) {
      return learned_tensor(node, layer_input(node, 1 - k), k, false);
    }
    if (float_table(node, k) != nullptr && float_table(node, k)->element_count() > 1 && !input(node, 1 - k).layer.empty()) {
      if (fuse_rotary(node, 1 - k)) return;
      fail(node, "multiplies a tensor by a constant table; burst reads such tables only as rotary embeddings' cos "
                 "and sin (q * cos + rotate_half(q) * sin)");
    }
    // A Python number (a Constant node or one folded at import): att * (1 / sqrt(d)).
    const std::optional<double> factor = python_number(node, k);
    if (factor && !input(node, 1 - k).layer.empty()) return scalar_multiply(node, input(node, 1 - k).layer, *factor);
  }
  const std::string a = layer_input(node, 0);
  const std::string b = layer_input(node, 1);
  // x * sigmoid(x), the sigmoid read by nothing else: torch's SiLU, one silu layer.
  for (int k = 0; k < 2; ++k) {
    const std::string& gate = k == 0 ? b : a;
    const std::string& x = k == 0 ? a : b;
    LayerSpec& spec = layer_named(gate);
    if (spec.op() == OpKind::Sigmoid && spec.inputs.at(0) == x && uses(node.input(k == 0 ? 1 : 0)) == 1) {
      spec.attrs = SiluAttrs{};
      infos_[gate] = infer_layer(spec, {&info_of(x)});
      bind_layer(node.output(0), gate);
      return;
    }
  }
  add_layer(node, "", {a, b}, MulAttrs{});
}

void Lowering::pad(const onnx::NodeProto& node) {
  // torch exports avg_pool2d as a Pad of zeros before AveragePool: with all pads 0 it is the
  // identity; with count_include_pad and padding p (inception_v3's branch pools) the Pad
  // has p on H and W, and the pools that read it take it as their own padding. Any other
  // Pad (F.pad: constant, reflect, replicate) is a pad layer.
  const std::string x = layer_input(node, 0);
  const std::vector<int64_t> p = fixed_integers(node, 1);  // [begin of each dim (batch first)..., end of each...]
  const bool zeros = attr_string(node, "mode", "constant") == "constant" &&
                     (!has_input(node, 2) || folded_scalar(node, 2) == std::optional<double>(0.0));
  if (zeros && std::all_of(p.begin(), p.end(), [](int64_t amount) { return amount == 0; })) {
    return bind_layer(node.output(0), x);
  }
  const auto readers = readers_.find(node.output(0));
  const bool pooled = readers != readers_.end() &&
                      std::all_of(readers->second.begin(), readers->second.end(),
                                  [](const onnx::NodeProto* r) { return r->op_type() == "AveragePool"; });
  const bool spatial = p.size() == 8 && p[0] == 0 && p[1] == 0 && p[4] == 0 && p[5] == 0 && p[2] == p[6] &&
                       p[3] == p[7] && p[2] >= 0 && p[3] >= 0;
  if (!zeros || !pooled || !spatial) return padding(node);
  bind_layer(node.output(0), x);
  pool_pads_[node.output(0)] = {p[2], p[3]};
}

void Lowering::max_pool(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  if (is_volume(x)) return max_pool3d(node);
  auto attrs = window_attrs<MaxPool2dAttrs>(node);
  if (two(node, "dilations", attr_ints(node, "dilations", {}), {1, 1}) != Pair{1, 1}) {
    fail(node, "dilated pooling is not supported");
  }
  only_first_output_used(node, "indices");
  add_layer(node, "", {x}, attrs);
}

void Lowering::average_pool(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  if (is_volume(x)) return average_pool3d(node);
  auto attrs = window_attrs<AvgPool2dAttrs>(node);
  attrs.count_include_pad = attr_int(node, "count_include_pad", 0) != 0;  // ONNX default: 0
  const auto padded = pool_pads_.find(node.input(0));
  if (padded != pool_pads_.end()) {  // the Pad before it: zeros the window counts
    if (attrs.padding.h != 0 || attrs.padding.w != 0) {
      fail(node, "pads an input that a Pad padded already; burst takes one padding");
    }
    attrs.padding = {padded->second.first, padded->second.second};
    attrs.count_include_pad = true;
  }
  add_layer(node, "", {x}, attrs);
}

void Lowering::global_average_pool(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  if (is_volume(x)) return global_average_pool3d(node);
  add_layer(node, "", {x}, AdaptiveAvgPool2dAttrs{{1, 1}});
}

void Lowering::flatten(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  const auto rank = static_cast<int64_t>(info_of(x).output_shape.size()) + 1;  // with the batch
  int64_t axis = attr_int(node, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis != 1) fail(node, fmt::format("axis {} is not supported; burst flattens from axis 1", axis));
  add_layer(node, "", {x}, FlattenAttrs{});
}

void Lowering::concat(const onnx::NodeProto& node) {
  if (has_input(node, 0) && input(node, 0).over_batch) return class_token(node);
  if (fold_float_concat(node)) return;
  if (is_integer(node, 0)) {  // shape pieces: rank-1 integers joined along axis 0
    SymbolicTensor joined{{0}, {}};
    for (int i = 0; i < node.input_size(); ++i) {
      const SymbolicTensor& piece = integer_input(node, i);
      if (piece.dims.size() != 1) fail(node, "burst joins 1-D integer tensors only");
      joined.values.insert(joined.values.end(), piece.values.begin(), piece.values.end());
    }
    joined.dims[0] = static_cast<int64_t>(joined.values.size());
    bind_integers(node.output(0), std::move(joined));
    return;
  }
  std::vector<std::string> inputs;
  for (int i = 0; i < node.input_size(); ++i) inputs.push_back(layer_input(node, i));
  const auto rank = static_cast<int64_t>(info_of(inputs[0]).output_shape.size()) + 1;
  int64_t axis = attr_int(node, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 1 || axis >= rank) fail(node, fmt::format("axis {} must be a per-sample axis", axis));
  if (inputs.size() == 1) {
    bind_layer(node.output(0), inputs[0]);
    return;
  }
  add_layer(node, "", inputs, ConcatAttrs{axis - 1});
}

void Lowering::dropout(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  double p = attr_float(node, "ratio", 0.5);  // opset < 12
  if (has_input(node, 1)) p = constant_input(node, 1).scalar();
  only_first_output_used(node, "mask");
  if (p == 0.0) {
    bind_layer(node.output(0), x);
    return;
  }
  add_layer(node, "", {x}, DropoutAttrs{p});
}

void Lowering::clip(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  double low = -INFINITY, high = INFINITY;  // opset 11 on: the bounds are inputs
  if (has_input(node, 1)) low = constant_input(node, 1).scalar();
  if (has_input(node, 2)) high = constant_input(node, 2).scalar();
  if (low == 0 && std::isinf(high) && high > 0) {
    add_layer(node, "", {x}, ReluAttrs{});
    return;
  }
  if (!std::isfinite(low) || !std::isfinite(high)) {
    fail(node, fmt::format("clips to [{}, {}]; burst needs both bounds (hardtanh) or [0, inf) (relu)", low, high));
  }
  add_layer(node, "", {x}, HardtanhAttrs{low, high});
}

void Lowering::hard_sigmoid(const onnx::NodeProto& node) {
  // torch's hardsigmoid is relu6(x + 3) / 6: ONNX alpha 1/6, beta 0.5.
  const double alpha = attr_float(node, "alpha", 0.2), beta = attr_float(node, "beta", 0.5);
  if (!near(alpha, 1.0 / 6) || !near(beta, 0.5)) {
    fail(node, fmt::format("alpha {} and beta {} differ from torch's hardsigmoid (1/6, 0.5)", alpha, beta));
  }
  add_layer(node, "", {layer_input(node, 0)}, HardsigmoidAttrs{});
}

void Lowering::element_wise(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  const std::string& op = node.op_type();
  if (op == "Relu") {
    add_layer(node, "", {x}, ReluAttrs{});
  } else if (op == "Sigmoid") {
    add_layer(node, "", {x}, SigmoidAttrs{});
  } else if (op == "Tanh") {
    add_layer(node, "", {x}, TanhAttrs{});
  } else if (op == "Softplus") {  // torch writes softplus with beta 1 as this op, others as arithmetic
    add_layer(node, "", {x}, SoftplusAttrs{});
  } else if (op == "LeakyRelu") {
    add_layer(node, "", {x}, LeakyReluAttrs{attr_float(node, "alpha", 0.01)});
  } else if (op == "Elu") {
    add_layer(node, "", {x}, EluAttrs{attr_float(node, "alpha", 1.0)});
  } else {
    BURST_ASSERT(op == "HardSwish", "element_wise handles Relu, Sigmoid, Tanh, Softplus, LeakyRelu, Elu and HardSwish");
    add_layer(node, "", {x}, HardswishAttrs{});
  }
}

void Lowering::layer_normalization(const onnx::NodeProto& node) {
  // Opset 17's LayerNormalization over the last dim (torch.nn.LayerNorm, exported with
  // opset_version=17): scale and bias [D] become the layer's weight and bias.
  const std::string x = layer_input(node, 0);
  const auto rank = static_cast<int64_t>(info_of(x).output_shape.size()) + 1;
  const int64_t axis = attr_int(node, "axis", -1);
  if (axis != -1 && axis != rank - 1) fail(node, fmt::format("normalises from axis {}; burst normalises the last dim", axis));
  if (!has_input(node, 2)) fail(node, "has no bias; burst's layernorm has one");
  ConstantTensor& scale = constant_input(node, 1);
  LayerWeights weights;
  weights.parameters.push_back(initial(scale));
  weights.parameters.push_back(initial(constant_input(node, 2)));
  only_first_output_used(node, "mean and inverse standard deviation");
  const std::string layer = add_layer(node, scale.name, {x}, LayerNormAttrs{attr_float(node, "epsilon", 1e-5)});
  const int64_t width = info_of(x).output_shape.back();
  for (const InitialTensor& tensor : weights.parameters) require_shape(node, tensor, {width}, "one value per feature");
  weights_[layer] = std::move(weights);
}

void Lowering::require_shape(const onnx::NodeProto& node, const InitialTensor& tensor,
                             const std::vector<int64_t>& expected, const char* why) const {
  if (tensor.shape != expected) {
    fail(node, fmt::format("'{}' has shape [{}], expected [{}] ({})", tensor.name, fmt::join(tensor.shape, ", "),
                           fmt::join(expected, ", "), why));
  }
}

void Lowering::identity(const onnx::NodeProto& node) {
  const Value& value = input(node, 0);
  values_[node.output(0)] = value;
}

void Lowering::constant(const onnx::NodeProto& node) {
  const auto* attribute = find_attribute(node, "value");
  if (attribute == nullptr || attribute->type() != onnx::AttributeProto::TENSOR) {
    fail(node, "burst reads Constant nodes with a 'value' tensor only");
  }
  constants_.push_back(decode_tensor(attribute->t(), base_dir_));
  constants_.back().name = node.output(0);
  bind_constant(&constants_.back());
}

}  // namespace burst::graph::onnx_import
