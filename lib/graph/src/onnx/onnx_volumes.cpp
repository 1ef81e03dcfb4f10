// 3-D convolutions and pools on volumes [C, D, H, W] (a 5-D Conv weight, 3-D pooling
// windows), as torch exports nn.Conv3d, MaxPool3d and AvgPool3d; GlobalAveragePool of a
// volume is the mean over its depth, height and width.
#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {

// Three values (depth, height, width) of attribute `name`, or `fallback` when it is absent.
Shape three(const onnx::NodeProto& node, const char* name, Shape fallback) {
  const std::vector<int64_t> values = attr_ints(node, name, {});
  if (values.empty()) return fallback;
  if (values.size() != 3) {
    throw UserError(fmt::format("{}: {} has {} values, a 3-D window has 3", describe(node), name, values.size()));
  }
  return values;
}

// ONNX pads [d0, h0, w0, d1, h1, w1] as torch's one padding per dim.
Shape symmetric_pads3(const onnx::NodeProto& node) {
  const std::vector<int64_t> pads = attr_ints(node, "pads", {});
  if (pads.empty()) return {0, 0, 0};
  if (pads.size() != 6 || pads[0] != pads[3] || pads[1] != pads[4] || pads[2] != pads[5]) {
    throw UserError(fmt::format("{}: pads {} are not the same at both ends of each dim (burst pads symmetrically, "
                                "as torch.nn does)",
                                describe(node), fmt::join(pads, ",")));
  }
  return {pads[0], pads[1], pads[2]};
}

void require_explicit_pads(const onnx::NodeProto& node) {
  if (attr_string(node, "auto_pad", "NOTSET") != "NOTSET") {
    throw UserError(fmt::format("{}: auto_pad is not supported; export with explicit pads", describe(node)));
  }
}

template <typename Pool3dAttrs>
Pool3dAttrs pool3d_window(const onnx::NodeProto& node) {
  require_explicit_pads(node);
  Pool3dAttrs attrs;
  attrs.kernel = three(node, "kernel_shape", {});
  if (attrs.kernel.empty()) throw UserError(fmt::format("{}: kernel_shape is required", describe(node)));
  attrs.stride = three(node, "strides", {1, 1, 1});
  attrs.padding = symmetric_pads3(node);
  attrs.ceil_mode = attr_int(node, "ceil_mode", 0) != 0;
  if (three(node, "dilations", {1, 1, 1}) != Shape{1, 1, 1}) throw UserError(describe(node) + ": dilated pooling is not supported");
  return attrs;
}

}  // namespace

bool Lowering::is_volume(const std::string& layer) const { return info_of(layer).output_shape.size() == 4; }

void Lowering::conv3d(const onnx::NodeProto& node) {
  require_explicit_pads(node);
  const std::string x = layer_input(node, 0);
  ConstantTensor& weight = constant_input(node, 1);
  if (weight.dims.size() != 5) fail(node, "a volume [C, D, H, W] takes a 3-D convolution (a 5-D weight)");
  const Shape kernel{weight.dims[2], weight.dims[3], weight.dims[4]};
  Conv3dAttrs attrs;
  attrs.out_channels = weight.dims[0];
  attrs.kernel = three(node, "kernel_shape", kernel);
  if (attrs.kernel != kernel) fail(node, "kernel_shape differs from the weight's");
  attrs.stride = three(node, "strides", {1, 1, 1});
  attrs.dilation = three(node, "dilations", {1, 1, 1});
  attrs.padding = symmetric_pads3(node);
  attrs.groups = attr_int(node, "group", 1);
  attrs.bias = has_input(node, 2);
  const std::string layer = add_layer(node, weight.name, {x}, attrs);  // checks groups and sizes
  const int64_t in_channels = info_of(x).output_shape.at(0);
  conv_weights(node, layer, weight, {attrs.out_channels, in_channels / attrs.groups, kernel[0], kernel[1], kernel[2]},
               "[out, in / groups, kd, kh, kw] for its input", attrs.out_channels);
}

void Lowering::max_pool3d(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  auto attrs = pool3d_window<MaxPool3dAttrs>(node);
  only_first_output_used(node, "indices");
  add_layer(node, "", {x}, attrs);
}

void Lowering::average_pool3d(const onnx::NodeProto& node) {
  const std::string x = layer_input(node, 0);
  auto attrs = pool3d_window<AvgPool3dAttrs>(node);
  attrs.count_include_pad = attr_int(node, "count_include_pad", 0) != 0;  // ONNX default: 0
  add_layer(node, "", {x}, attrs);
}

void Lowering::global_average_pool3d(const onnx::NodeProto& node) {
  // [C, D, H, W] -> [C, 1, 1, 1], as adaptive_avg_pool3d(1) (and x.mean((2, 3, 4), keepdim=True)).
  add_layer(node, "", {layer_input(node, 0)}, MeanAttrs{{1, 2, 3}, true});
}

}  // namespace burst::graph::onnx_import
