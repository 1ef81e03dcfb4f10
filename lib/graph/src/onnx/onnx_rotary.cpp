// Rotary position embeddings as transformers' Llama applies them (apply_rotary_pos_emb):
//
//   q * cos + cat(-q[..., d/2:], q[..., :d/2], -1) * sin
//
// with cos and sin tables folded at import (onnx_constant_fold.cpp). Matched whole at the
// Mul of q and cos; the tables must be those of rotary embeddings with some base theta
// (checked entry by entry), and the layer recomputes them from theta.
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {

void Lowering::lower_ahead(const std::string& tensor, int depth) {
  // Shape arithmetic only: its handlers bind integers and append no layer, so running one
  // before its turn changes nothing else; it is then skipped in order.
  static const std::set<std::string> kShapeOps = {"Shape",  "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast",
                                                  "Div",    "Mul",    "Add",       "Sub",     "Slice",  "Constant"};
  if (values_.count(tensor) != 0 || depth > 64) return;
  const auto producer = producers_.find(tensor);
  if (producer == producers_.end() || fused_.count(producer->second) != 0) return;
  const onnx::NodeProto& node = *producer->second;
  if (kShapeOps.count(node.op_type()) == 0) return;
  for (const std::string& input : node.input()) {
    if (!input.empty()) lower_ahead(input, depth + 1);
  }
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty()) continue;
    const auto value = values_.find(node.input(i));
    if (value == values_.end()) return;
    const bool shape_of_layer = node.op_type() == "Shape" && !value->second.layer.empty();
    if (!value->second.ints && !shape_of_layer) return;  // not shape arithmetic: left to its turn
  }
  const auto handler = handler_of(node.op_type());
  (this->*handler)(node);
  fused_.insert(&node);
}

namespace {

// The cos or sin table's [T, d] entries, from a table of leading 1s then [T, d].
bool rotary_table_shape(const ConstantTensor& table, int64_t tokens, int64_t dim) {
  const size_t rank = table.dims.size();
  if (rank < 2 || table.dims[rank - 2] != tokens || table.dims[rank - 1] != dim) return false;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (table.dims[d] != 1) return false;
  }
  return true;
}

}  // namespace

std::optional<double> Lowering::rotary_theta(const ConstantTensor& cos, const ConstantTensor& sin, int64_t tokens,
                                             int64_t dim) const {
  if (!rotary_table_shape(cos, tokens, dim) || !rotary_table_shape(sin, tokens, dim) || tokens < 2 || dim < 4) {
    return std::nullopt;
  }
  // Frequency 1 at position 1: theta^(-2/d), its angle from the tables; theta rounded to a
  // whole number when within 1e-3 of one (the bases models use: 10,000, 500,000, 10^6).
  const double angle = std::atan2(sin.floats[static_cast<size_t>(dim + 1)], cos.floats[static_cast<size_t>(dim + 1)]);
  if (!(angle > 0)) return std::nullopt;
  double theta = std::pow(angle, -static_cast<double>(dim) / 2);
  if (std::abs(theta - std::round(theta)) < 1e-3 * theta) theta = std::round(theta);
  // Every entry against that theta: float32 tables of angles up to T rad, so 1e-3.
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < dim; ++j) {
      const int64_t i = j % (dim / 2);
      const double a = static_cast<double>(t) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
      const auto at = static_cast<size_t>(t * dim + j);
      if (std::abs(cos.floats[at] - std::cos(a)) > 1e-3 || std::abs(sin.floats[at] - std::sin(a)) > 1e-3) return std::nullopt;
    }
  }
  return theta;
}

// Long: one pattern's nodes checked in the order they connect.
bool Lowering::fuse_rotary(const onnx::NodeProto& mul, int x_input) {
  const std::string q = layer_input(mul, x_input);
  const ConstantTensor* cos = float_table(mul, 1 - x_input);
  const Shape& shape = info_of(q).output_shape;
  if (cos == nullptr || shape.size() < 2 || shape.back() % 2 != 0) return false;
  const int64_t tokens = shape[shape.size() - 2], dim = shape.back();
  // The Add of q * cos and rotate_half(q) * sin.
  const auto* add = only_reader(mul.output(0), "Add");
  const std::string other = add != nullptr ? other_input(*add, mul.output(0)) : "";
  const auto* times_sin = producers_.count(other) != 0 ? producers_.at(other) : nullptr;
  if (times_sin == nullptr || times_sin->op_type() != "Mul" || uses(other) != 1) return false;
  const bool concat_first = producers_.count(times_sin->input(0)) != 0 && producers_.at(times_sin->input(0))->op_type() == "Concat";
  const std::string rotated = times_sin->input(concat_first ? 0 : 1);
  const ConstantTensor* sin = float_table(*times_sin, concat_first ? 1 : 0);
  const auto* join = producers_.count(rotated) != 0 ? producers_.at(rotated) : nullptr;
  if (sin == nullptr || join == nullptr || join->op_type() != "Concat" || join->input_size() != 2 || uses(rotated) != 1) return false;
  const int64_t axis = attr_int(*join, "axis", 0);
  const auto rank = static_cast<int64_t>(shape.size()) + 1;
  const auto* negation = producers_.count(join->input(0)) != 0 ? producers_.at(join->input(0)) : nullptr;
  const auto* first_half = producers_.count(join->input(1)) != 0 ? producers_.at(join->input(1)) : nullptr;
  const auto* second_half = negation != nullptr && negation->op_type() == "Neg" && producers_.count(negation->input(0)) != 0
                                ? producers_.at(negation->input(0)) : nullptr;
  if ((axis != -1 && axis != rank - 1) || second_half == nullptr || first_half == nullptr ||
      second_half->op_type() != "Slice" || first_half->op_type() != "Slice" || second_half->input(0) != mul.input(x_input) ||
      first_half->input(0) != mul.input(x_input) || uses(negation->output(0)) != 1) {
    return false;
  }
  // The halves: [d/2, end) and [0, d/2) of the last axis, their bounds computed ahead.
  const auto half_of = [&](const onnx::NodeProto& slice, int64_t start, int64_t end) {
    for (int i = 1; i < slice.input_size(); ++i) lower_ahead(slice.input(i), 0);
    for (int i = 1; i < slice.input_size(); ++i) {
      if (values_.count(slice.input(i)) == 0 || !values_.at(slice.input(i)).ints) return false;
    }
    const std::vector<int64_t> starts = fixed_integers(slice, 1), ends = fixed_integers(slice, 2);
    const std::vector<int64_t> axes = slice.input_size() > 3 ? fixed_integers(slice, 3) : std::vector<int64_t>{0};
    return starts.size() == 1 && axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1) && starts[0] == start &&
           std::min(ends[0], dim) == end;
  };
  if (!half_of(*second_half, dim / 2, dim) || !half_of(*first_half, 0, dim / 2)) return false;
  const std::optional<double> theta = rotary_theta(*cos, *sin, tokens, dim);
  if (!theta) fail(mul, "multiplies by tables that are not rotary embeddings' cos and sin (of positions 0 .. T - 1)");
  add_layer(*add, "", {q}, RotaryAttrs{*theta});
  for (const auto* node : {add, times_sin, join, negation, second_half, first_half}) fused_.insert(node);
  return true;
}

}  // namespace burst::graph::onnx_import
