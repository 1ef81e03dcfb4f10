// Float scalars computed from shapes, folded at import. torch 2.x exports
// scaled_dot_product_attention's scale as sqrt(1 / sqrt(d)) with d read off a shape:
// Shape -> Slice -> Cast(float) -> Sqrt -> Div(1, .) -> Cast -> Sqrt, then multiplies the
// queries and the keys by it (onnx_attention_pattern.cpp). Each step here takes constants
// and gives a constant; a tensor anywhere in it is refused as before.
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {

void Lowering::bind_float_scalar(const std::string& tensor, double value) {
  ConstantTensor scalar;
  scalar.name = tensor;
  scalar.is_float = true;
  scalar.floats = {static_cast<float>(value)};
  constants_.push_back(std::move(scalar));
  Value bound;
  bound.constant = &constants_.back();
  values_[tensor] = std::move(bound);
}

std::optional<double> Lowering::folded_scalar(const onnx::NodeProto& node, int index) const {
  if (!has_input(node, index)) return std::nullopt;
  const Value& value = input(node, index);
  if (value.ints) {
    if (value.ints->values.size() != 1 || value.ints->values[0].batch != 0) return std::nullopt;
    return static_cast<double>(value.ints->values[0].constant);
  }
  if (value.constant == nullptr || !value.constant->is_float) return std::nullopt;
  return scalar_value(node.input(index));
}

void Lowering::sqrt(const onnx::NodeProto& node) {
  if (!input(node, 0).layer.empty()) return void(add_layer(node, "", {input(node, 0).layer}, SqrtAttrs{}));
  const std::optional<double> x = folded_scalar(node, 0);
  if (!x) return pattern_only(node);
  if (*x < 0) fail(node, fmt::format("takes the square root of {}", *x));
  bind_float_scalar(node.output(0), std::sqrt(*x));
}

bool Lowering::fold_scalar_division(const onnx::NodeProto& node) {
  const std::optional<double> x = folded_scalar(node, 0), y = folded_scalar(node, 1);
  if (!x || !y || is_integer(node, 0)) return false;  // integer Divs are shape arithmetic
  if (*y == 0) fail(node, "divides a constant by 0");
  bind_float_scalar(node.output(0), *x / *y);
  return true;
}

bool Lowering::fold_scalar_cast(const onnx::NodeProto& node) {
  const int64_t to = attr_int(node, "to", 0);
  const bool to_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
  const std::optional<double> x = folded_scalar(node, 0);
  if (!to_float || !x) return false;
  bind_float_scalar(node.output(0), *x);
  return true;
}

}  // namespace burst::graph::onnx_import
