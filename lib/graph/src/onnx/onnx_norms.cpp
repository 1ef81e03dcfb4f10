// Normalisations, activations and resampling of vision models written by hand: InstanceNorm
// (and GroupNorm, which torch exports as one on [groups, rest] between two Reshapes, then a
// learned scale and shift), PReLU, a lone Erf, Resize (nn.Upsample) and Pad (F.pad).
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {

// Whether every value of `tensor` is `value` (InstanceNormalization's constant ones and zeros).
bool all_equal(const ConstantTensor& tensor, float value) {
  if (tensor.floats.size() != static_cast<size_t>(tensor.element_count())) return false;
  return std::all_of(tensor.floats.begin(), tensor.floats.end(), [value](float v) { return v == value; });
}

}  // namespace

void Lowering::instance_normalization(const onnx::NodeProto& node) {
  // Learned scale and bias (InstanceNorm2d(affine=True): initializers named weight and bias),
  // or constant ones and zeros (no affine: InstanceNorm's default, GroupNorm's inner one).
  const std::string x = layer_input(node, 0);
  const int64_t channels = info_of(x).output_shape.at(0);
  InstanceNormAttrs attrs{attr_float(node, "epsilon", 1e-5), false};
  const bool learned = is_float_initializer(node, 1) && is_float_initializer(node, 2);
  if (!learned && !(all_equal(constant_input(node, 1), 1) && all_equal(constant_input(node, 2), 0))) {
    fail(node, "burst reads InstanceNormalization with learned scale and bias, or with constant ones and zeros");
  }
  if (!learned) return void(add_layer(node, "", {x}, attrs));
  attrs.affine = true;
  LayerWeights weights;
  weights.parameters.push_back(initial(constant_input(node, 1)));
  weights.parameters.push_back(initial(constant_input(node, 2)));
  for (const InitialTensor& tensor : weights.parameters) require_shape(node, tensor, {channels}, "one value per channel");
  weights_[add_layer(node, node.input(1), {x}, attrs)] = std::move(weights);
}

void Lowering::prelu(const onnx::NodeProto& node) {
  // nn.PReLU(C): torch exports its weight [C] unsqueezed to [C, 1, 1] (a view, learned_view).
  const std::string x = layer_input(node, 0);
  if (!is_float_initializer(node, 1)) fail(node, "the slope must be a learned tensor (nn.PReLU's weight)");
  ConstantTensor& slope = *input(node, 1).constant;
  const int64_t count = slope.element_count();
  const int64_t channels = info_of(x).output_shape.at(0);
  if (count != 1 && count != channels) {
    fail(node, fmt::format("has {} slopes for {} channels; nn.PReLU has 1 or one a channel", count, channels));
  }
  LayerWeights weights;
  weights.parameters.push_back(initial(slope, {count}));
  weights_[add_layer(node, slope.name, {x}, PReluAttrs{count})] = std::move(weights);
}

void Lowering::erf(const onnx::NodeProto& node) { add_layer(node, "", {layer_input(node, 0)}, ErfAttrs{}); }

void Lowering::resize(const onnx::NodeProto& node) {
  // nn.Upsample(scale_factor=k) of [C, H, W]: scales [1, 1, k_h, k_w], whole; nearest as torch
  // indexes it (asymmetric, floor) or bilinear (half_pixel/pytorch_half_pixel: align_corners
  // false; align_corners: true).
  const std::string x = layer_input(node, 0);
  if (info_of(x).output_shape.size() != 3 || has_input(node, 3)) {
    fail(node, "burst resizes [C, H, W] by scales (nn.Upsample(scale_factor=...)), not to sizes");
  }
  const ConstantTensor* scales = float_table(node, 2);
  if (scales == nullptr) scales = is_float_initializer(node, 2) ? input(node, 2).constant : nullptr;
  if (scales == nullptr || scales->floats.size() != 4 || scales->floats[0] != 1 || scales->floats[1] != 1) {
    fail(node, "the scales must be constants [1, 1, h, w]");
  }
  const float h = scales->floats[2], w = scales->floats[3];
  if (h != std::round(h) || w != std::round(w) || h < 1 || w < 1) fail(node, fmt::format("scales {} x {} are not whole", h, w));
  const std::string mode = attr_string(node, "mode", "nearest");
  const std::string transform = attr_string(node, "coordinate_transformation_mode", "half_pixel");
  UpsampleAttrs attrs{{static_cast<int64_t>(h), static_cast<int64_t>(w)}, "nearest", false};
  if (mode == "nearest" && transform == "asymmetric" && attr_string(node, "nearest_mode", "round_prefer_floor") == "floor") {
    return void(add_layer(node, "", {x}, attrs));
  }
  if (mode == "linear" && (transform == "half_pixel" || transform == "pytorch_half_pixel" || transform == "align_corners")) {
    attrs.mode = "bilinear";
    attrs.align_corners = transform == "align_corners";
    return void(add_layer(node, "", {x}, attrs));
  }
  fail(node, fmt::format("resizes by mode {} with coordinates {}; burst reads torch's nearest and bilinear up-sampling",
                         mode, transform));
}

void Lowering::padding(const onnx::NodeProto& node) {
  // F.pad: pads [batch and each per-sample dim before..., after...], the batch's 0.
  const std::string x = layer_input(node, 0);
  const std::vector<int64_t> pads = fixed_integers(node, 1);
  const size_t rank = info_of(x).output_shape.size() + 1;
  if (pads.size() != 2 * rank || pads[0] != 0 || pads[rank] != 0) fail(node, fmt::format("pads {} the batch", fmt::join(pads, ",")));
  PadAttrs attrs;
  for (size_t d = 1; d < rank; ++d) attrs.pads.push_back(pads[d]);
  for (size_t d = 1; d < rank; ++d) attrs.pads.push_back(pads[d + rank]);
  const std::string mode = attr_string(node, "mode", "constant");
  attrs.mode = mode == "edge" ? "replicate" : mode;
  if (mode == "constant" && has_input(node, 2)) {
    const std::optional<double> value = folded_scalar(node, 2);
    if (!value) fail(node, "pads with a value that is not a number known at import");
    attrs.value = *value;
  }
  add_layer(node, "", {x}, attrs);
}

}  // namespace burst::graph::onnx_import
