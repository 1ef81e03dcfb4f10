// Patterns of several ONNX nodes that are one burst layer: torch.onnx.export writes
// nn.LayerNorm (before opset 17) and nn.GELU as arithmetic, and ViT's class token, position
// embedding and token selection as Expand + Concat, Add and Gather. Each pattern is matched
// whole (op types, constants, wiring, and that nothing else reads its inner tensors) or
// not at all: a partial match leaves the nodes to their own handlers, which refuse what
// burst cannot compute.
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"

namespace burst::graph::onnx_import {
namespace {


// The name of a fused pattern's layer: its first node's name without the node's own part
// ("/encoder/layers/encoder_layer_0/mlp/mlp.1/Div" -> ".../mlp/mlp.1").
std::string pattern_name(const onnx::NodeProto& first) {
  const std::string& name = first.name();
  const size_t slash = name.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? name : name.substr(0, slash);
}

}  // namespace

std::string Lowering::other_input(const onnx::NodeProto& node, const std::string& tensor) {
  if (node.input_size() != 2) return "";
  if (node.input(0) == tensor) return node.input(1);
  if (node.input(1) == tensor) return node.input(0);
  return "";
}

const onnx::NodeProto* Lowering::only_reader(const std::string& tensor, const char* op_type) const {
  const auto found = readers_.find(tensor);
  if (found == readers_.end() || found->second.size() != 1 || uses(tensor) != 1) return nullptr;
  const onnx::NodeProto* reader = found->second.front();
  const bool default_domain = reader->domain().empty() || reader->domain() == "ai.onnx";
  return default_domain && reader->op_type() == op_type ? reader : nullptr;
}

std::optional<double> Lowering::scalar_value(const std::string& tensor) const {
  ConstantTensor decoded;
  const ConstantTensor* constant = nullptr;
  const auto value = values_.find(tensor);
  if (value != values_.end()) {
    constant = value->second.constant;
  } else if (const auto producer = producers_.find(tensor); producer != producers_.end()) {
    // A Constant node the file lists after the pattern's first node.
    const onnx::NodeProto& node = *producer->second;
    const auto* attribute = node.op_type() == "Constant" ? find_attribute(node, "value") : nullptr;
    if (attribute == nullptr || attribute->type() != onnx::AttributeProto::TENSOR) return std::nullopt;
    decoded = decode_tensor(attribute->t(), base_dir_);
    constant = &decoded;
  }
  if (constant == nullptr || constant->element_count() != 1 || (constant->is_float && constant->floats.empty())) {
    return std::nullopt;
  }
  const double scalar = constant->scalar();
  // float32 1e-6 is 9.99999997e-07: the shortest decimal that is the same float recovers 1e-6.
  return constant->is_float ? std::strtod(fmt::format("{}", static_cast<float>(scalar)).c_str(), nullptr) : scalar;
}

bool Lowering::fuse_layer_norm(const onnx::NodeProto& mean) {
  // y = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * weight + bias, over the last dim:
  // ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div -> Mul -> Add.
  const std::string& x = mean.input(0);
  const auto last_axis_only = [](const onnx::NodeProto& node) {
    return attr_ints(node, "axes", {}) == std::vector<int64_t>{-1} && attr_int(node, "keepdims", 1) == 1;
  };
  if (!last_axis_only(mean)) return false;
  const auto* centre = only_reader(mean.output(0), "Sub");
  if (centre == nullptr || centre->input(0) != x || centre->input(1) != mean.output(0)) return false;
  const auto readers = readers_.find(centre->output(0));
  if (readers == readers_.end() || readers->second.size() != 2 || uses(centre->output(0)) != 2) return false;
  const onnx::NodeProto* square = readers->second[0];
  const onnx::NodeProto* divide = readers->second[1];
  if (square->op_type() != "Pow") std::swap(square, divide);
  if (square->op_type() != "Pow" || square->input(0) != centre->output(0) || scalar_value(square->input(1)) != 2.0) {
    return false;
  }
  const auto* variance = only_reader(square->output(0), "ReduceMean");
  if (variance == nullptr || !last_axis_only(*variance)) return false;
  const auto* plus_eps = only_reader(variance->output(0), "Add");
  const auto* root = plus_eps ? only_reader(plus_eps->output(0), "Sqrt") : nullptr;
  if (root == nullptr || divide->op_type() != "Div" || divide->input(0) != centre->output(0) ||
      divide->input(1) != root->output(0) || only_reader(root->output(0), "Div") != divide) {
    return false;
  }
  const auto eps = scalar_value(other_input(*plus_eps, variance->output(0)));
  const auto* scale = only_reader(divide->output(0), "Mul");
  const auto* shift = scale ? only_reader(scale->output(0), "Add") : nullptr;
  if (!eps || shift == nullptr) return false;
  const auto weight = values_.find(other_input(*scale, divide->output(0)));
  const auto bias = values_.find(other_input(*shift, scale->output(0)));
  if (weight == values_.end() || bias == values_.end() || weight->second.constant == nullptr ||
      bias->second.constant == nullptr) {
    return false;
  }
  const std::string input = layer_input(mean, 0);
  const int64_t width = info_of(input).output_shape.back();
  LayerWeights weights;
  weights.parameters.push_back(initial(*weight->second.constant));
  weights.parameters.push_back(initial(*bias->second.constant));
  std::string name = state_dict_prefix(weights.parameters[0].name);
  if (name.empty()) name = pattern_name(mean);
  const std::string layer = add_named_layer(*shift, name, {input}, LayerNormAttrs{*eps});
  for (const InitialTensor& tensor : weights.parameters) require_shape(mean, tensor, {width}, "one value per feature");
  weights_[layer] = std::move(weights);
  for (const auto* node : {centre, square, variance, plus_eps, root, divide, scale, shift}) fused_.insert(node);
  return true;
}

bool Lowering::fuse_gelu(const onnx::NodeProto& div) {
  // torch's exact GELU: Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5).
  const std::string& x = div.input(0);
  if (!near(scalar_value(div.input(1)).value_or(0), std::sqrt(2.0))) return false;
  const auto* erf = only_reader(div.output(0), "Erf");
  const auto* plus_one = erf ? only_reader(erf->output(0), "Add") : nullptr;
  const auto* times_x = plus_one ? only_reader(plus_one->output(0), "Mul") : nullptr;
  const auto* half = times_x ? only_reader(times_x->output(0), "Mul") : nullptr;
  if (half == nullptr || scalar_value(other_input(*plus_one, erf->output(0))) != 1.0 ||
      other_input(*times_x, plus_one->output(0)) != x || scalar_value(other_input(*half, times_x->output(0))) != 0.5) {
    return false;
  }
  add_named_layer(*half, pattern_name(div), {layer_input(div, 0)}, GeluAttrs{"none"});
  for (const auto* node : {erf, plus_one, times_x, half}) fused_.insert(node);
  return true;
}

void Lowering::class_token(const onnx::NodeProto& concat) {
  // Concat([token over the batch [B, 1, D], x [B, T, D]], axis 1) -> [B, T + 1, D].
  ConstantTensor& token = constant_input(concat, 0);
  if (concat.input_size() != 2 || input(concat, 1).layer.empty()) {
    fail(concat, "burst joins a class token over the batch with one computed tensor only");
  }
  const std::string x = layer_input(concat, 1);
  const Shape& shape = info_of(x).output_shape;
  const int64_t axis = attr_int(concat, "axis", 0);
  if (shape.size() != 2 || (axis != 1 && axis != -2) || token.dims != std::vector<int64_t>{1, 1, shape[1]}) {
    fail(concat, fmt::format("joins a [{}] constant over the batch with [{}] on axis {}; burst's class token "
                             "is [1, 1, D] before tokens [T, D] on axis 1",
                             fmt::join(token.dims, ", "), fmt::join(shape, ", "), axis));
  }
  LayerWeights weights;
  weights.parameters.push_back(initial(token));
  weights_[add_named_layer(concat, token.name, {x}, ClassTokenAttrs{})] = std::move(weights);
}

bool Lowering::is_float_initializer(const onnx::NodeProto& node, int index) const {
  if (!has_input(node, index)) return false;
  const Value& value = input(node, index);
  if (value.constant == nullptr || !value.constant->is_float) return false;
  return producers_.count(node.input(index)) == 0 || !value.view_dims.empty();  // an initializer, or a view of one
}

void Lowering::learned_view(const onnx::NodeProto& unsqueeze) {
  Value view = input(unsqueeze, 0);
  view.view_dims = unsqueezed(unsqueeze, view.view_dims.empty() ? view.constant->dims : view.view_dims);
  values_[unsqueeze.output(0)] = view;
}

namespace {

// A learned tensor's broadcast shape and, when its own differs, its state_dict shape: the
// dims it is used with (an unsqueezed view's, or its own), less a leading batch dim of 1
// ([1, C, 1, 1] as [C, 1, 1]); a scalar as [1].
std::pair<Shape, Shape> learned_shapes(const Value& value, size_t input_rank) {
  Shape shape = value.view_dims.empty() ? value.constant->dims : value.view_dims;
  if (shape.size() == input_rank + 1 && shape.front() == 1) shape.erase(shape.begin());
  if (shape.empty()) shape = {1};
  const Shape& own = value.constant->dims;
  return {shape, own == shape || own.empty() ? Shape{} : own};
}

}  // namespace

void Lowering::learned_tensor(const onnx::NodeProto& node, const std::string& x, int index, bool adds) {
  const auto [shape, weight_shape] = learned_shapes(input(node, index), info_of(x).output_shape.size());
  ConstantTensor& tensor = *input(node, index).constant;
  LayerWeights weights;
  weights.parameters.push_back(initial(tensor, weight_shape.empty() ? shape : weight_shape));
  const Attrs attrs = adds ? Attrs{ShiftAttrs{shape, weight_shape}} : Attrs{ScaleAttrs{shape, weight_shape}};
  weights_[add_named_layer(node, tensor.name, {x}, attrs)] = std::move(weights);
}

void Lowering::position_embedding(const onnx::NodeProto& add, const std::string& x, ConstantTensor& table,
                                  bool table_2d, const std::vector<int64_t>& rows) {
  // x [T, D] + table [1, T, D]: torch's learned absolute positions (ViT's pos_embedding); or
  // + rows of an nn.Embedding's table [T', D] (a GPT's positions by torch.arange: rows
  // 0 .. T - 1; BERT's token types: row 0 for every token).
  const int64_t positions = table_2d ? table.dims.at(0) : info_of(x).output_shape.at(0);
  bool in_order = true, one_row = !rows.empty();
  for (size_t t = 0; t < rows.size(); ++t) {
    in_order = in_order && rows[t] == static_cast<int64_t>(t);
    one_row = one_row && rows[t] == rows[0];
  }
  if (!in_order && !one_row) {
    fail(add, fmt::format("adds rows [{}] of table '{}'; burst adds row t to token t, or one row to every token",
                          fmt::join(rows, ", "), table.name));
  }
  LayerWeights weights;
  weights.parameters.push_back(initial(table));
  const PositionEmbeddingAttrs attrs{positions, table_2d, in_order ? -1 : rows[0]};
  weights_[add_named_layer(add, table.name, {x}, attrs)] = std::move(weights);
}

void Lowering::take_token(const onnx::NodeProto& gather) {
  // x[:, i] of x [B, T, D] -> [B, D] (ViT's head reads the class token).
  const std::string x = layer_input(gather, 0);
  const Shape& shape = info_of(x).output_shape;
  const int64_t axis = attr_int(gather, "axis", 0);
  const SymbolicTensor& indices = integer_input(gather, 1);
  const std::vector<int64_t> index = fixed_integers(gather, 1);
  if (shape.size() != 2 || (axis != 1 && axis != -2) || !indices.dims.empty() || index.size() != 1) {
    fail(gather, fmt::format("gathers from a computed [{}] on axis {}; burst takes one token (a scalar index "
                             "on axis 1 of [T, D]) only",
                             fmt::join(shape, ", "), axis));
  }
  const int64_t at = index[0] < 0 ? index[0] + shape[0] : index[0];
  if (at < 0 || at >= shape[0]) fail(gather, fmt::format("token {} is outside the {} tokens", index[0], shape[0]));
  add_layer(gather, "", {x}, TakeTokenAttrs{at});
}

}  // namespace burst::graph::onnx_import
