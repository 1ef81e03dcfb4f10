// Float tables computed from constants, folded at import: rotary embeddings' cos and sin
// (positions from Range, cast to float, times inv_freq, joined twice, Cos and Sin, times the
// attention scaling), which exporters write as ops on constants. Each handler takes
// constants and gives a constant; a computed tensor in it goes to the op's usual handler.
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/broadcast.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {

// The largest float table folded at import (a [4096, 128] rotary table is 2^19).
constexpr int64_t kMaxFoldedFloats = int64_t{1} << 24;

}  // namespace

const ConstantTensor* Lowering::float_table(const onnx::NodeProto& node, int index) const {
  // Not an initializer: a model's trainable tensors are initializers, and a product of them
  // changes as they train.
  if (!has_input(node, index) || producers_.count(node.input(index)) == 0) return nullptr;
  const Value& value = input(node, index);
  if (value.constant == nullptr || !value.constant->is_float || !value.layer.empty() || value.table_rows ||
      !value.view_dims.empty()) {
    return nullptr;
  }
  if (value.constant->floats.size() != static_cast<size_t>(value.constant->element_count())) return nullptr;
  return value.constant;
}

void Lowering::bind_float_table(const std::string& tensor, std::vector<int64_t> dims, std::vector<float> values) {
  ConstantTensor table;
  table.name = tensor;
  table.dims = std::move(dims);
  table.is_float = true;
  table.floats = std::move(values);
  constants_.push_back(std::move(table));
  Value bound;
  bound.constant = &constants_.back();
  values_[tensor] = std::move(bound);
}

bool Lowering::fold_float_arithmetic(const onnx::NodeProto& node) {
  // Mul, Add, Sub, Div of two float tables (or a table and a number), broadcast.
  const ConstantTensor* a = float_table(node, 0);
  const ConstantTensor* b = float_table(node, 1);
  if (a == nullptr || b == nullptr) return false;
  const auto dims = broadcast_dims(a->dims, b->dims);
  if (!dims) fail(node, fmt::format("[{}] and [{}] do not broadcast", fmt::join(a->dims, ", "), fmt::join(b->dims, ", ")));
  int64_t count = 1;
  for (const int64_t dim : *dims) count *= dim;
  if (count > kMaxFoldedFloats) fail(node, fmt::format("makes {} numbers; burst folds at most 2^24", count));
  const std::string& op = node.op_type();
  std::vector<float> out;
  out.reserve(static_cast<size_t>(count));
  for_each_broadcast(a->dims, b->dims, *dims, [&](size_t i, size_t j) {
    const float x = a->floats[i], y = b->floats[j];  // float32 arithmetic, as the exported graph's
    out.push_back(op == "Mul" ? x * y : op == "Add" ? x + y : op == "Sub" ? x - y : x / y);
  });
  bind_float_table(node.output(0), *dims, std::move(out));
  return true;
}

void Lowering::fold_float_function(const onnx::NodeProto& node) {
  // Cos, Sin, Neg of a float table.
  const ConstantTensor* x = float_table(node, 0);
  if (x == nullptr) fail(node, fmt::format("burst computes {} of constants only (rotary tables)", node.op_type()));
  const std::string& op = node.op_type();
  std::vector<float> out;
  out.reserve(x->floats.size());
  for (const float v : x->floats) out.push_back(op == "Cos" ? std::cos(v) : op == "Sin" ? std::sin(v) : -v);
  bind_float_table(node.output(0), x->dims, std::move(out));
}

void Lowering::negate(const onnx::NodeProto& node) {
  if (!input(node, 0).layer.empty()) return scalar_multiply(node, input(node, 0).layer, -1);  // rotate_half's -x2
  fold_float_function(node);
}

bool Lowering::fold_integers_to_floats(const onnx::NodeProto& node) {
  // Cast of integers known at import to float (rotary positions).
  const int64_t to = attr_int(node, "to", 0);
  if (!is_integer(node, 0) || (to != onnx::TensorProto::FLOAT && to != onnx::TensorProto::DOUBLE)) return false;
  const std::vector<int64_t> values = fixed_integers(node, 0);
  std::vector<float> out(values.begin(), values.end());
  bind_float_table(node.output(0), integer_input(node, 0).dims, std::move(out));
  return true;
}

std::vector<int64_t> Lowering::unsqueezed(const onnx::NodeProto& node, std::vector<int64_t> dims) const {
  std::vector<int64_t> axes = has_input(node, 1) ? fixed_integers(node, 1) : attr_ints(node, "axes", {});
  const auto rank = static_cast<int64_t>(dims.size() + axes.size());
  for (int64_t& axis : axes) axis = axis < 0 ? axis + rank : axis;
  std::sort(axes.begin(), axes.end());
  for (const int64_t axis : axes) {
    if (axis < 0 || axis > static_cast<int64_t>(dims.size())) fail(node, fmt::format("axis {} is out of range", axis));
    dims.insert(dims.begin() + axis, 1);
  }
  return dims;
}

bool Lowering::fold_float_unsqueeze(const onnx::NodeProto& node) {
  const ConstantTensor* x = float_table(node, 0);
  if (x == nullptr) return false;
  bind_float_table(node.output(0), unsqueezed(node, x->dims), x->floats);
  return true;
}

bool Lowering::fold_float_concat(const onnx::NodeProto& node) {
  // Float tables joined along an axis (the rotary table's cat(freqs, freqs)).
  std::vector<const ConstantTensor*> parts;
  for (int i = 0; i < node.input_size(); ++i) parts.push_back(float_table(node, i));
  if (parts.empty() || std::find(parts.begin(), parts.end(), nullptr) != parts.end()) return false;
  const auto rank = static_cast<int64_t>(parts[0]->dims.size());
  int64_t axis = attr_int(node, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) fail(node, fmt::format("axis {} is out of range", axis));
  std::vector<int64_t> dims = parts[0]->dims;
  dims[static_cast<size_t>(axis)] = 0;
  for (const ConstantTensor* part : parts) {
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && (part->dims.size() != dims.size() || part->dims[static_cast<size_t>(d)] != parts[0]->dims[static_cast<size_t>(d)])) {
        fail(node, "joins tables whose other dims differ");
      }
    }
    dims[static_cast<size_t>(axis)] += part->dims[static_cast<size_t>(axis)];
  }
  // Row-major: each outer index takes each part's inner block in turn.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstantTensor* part : parts) {
      const size_t block = part->floats.size() / static_cast<size_t>(outer);
      out.insert(out.end(), part->floats.begin() + static_cast<std::ptrdiff_t>(o * block),
                 part->floats.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
    }
  }
  bind_float_table(node.output(0), std::move(dims), std::move(out));
  return true;
}

}  // namespace burst::graph::onnx_import
