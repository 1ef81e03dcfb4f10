#include "onnx/onnx_lowering.h"

#include <fmt/format.h>

#include "burst/util/error.h"
#include "onnx/onnx_attributes.h"
#include "shape_inference.h"

namespace burst::graph::onnx_import {

std::string state_dict_prefix(const std::string& weight) {
  const std::string suffix = ".weight";
  if (weight.rfind("onnx::", 0) == 0) return "";
  if (weight.size() <= suffix.size() || weight.compare(weight.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return "";
  }
  return weight.substr(0, weight.size() - suffix.size());
}

Lowering::Lowering(const onnx::GraphProto& graph, std::vector<const onnx::NodeProto*> nodes,
                   std::deque<ConstantTensor> initializers, std::string base_dir)
    : graph_(graph),
      nodes_(std::move(nodes)),
      base_dir_(std::move(base_dir)),
      constants_(std::move(initializers)) {
  for (const auto* node : nodes_) {
    for (const std::string& name : node->input()) {
      ++uses_[name];
      readers_[name].push_back(node);
    }
    for (const std::string& name : node->output()) producers_[name] = node;
  }
  for (const auto& output : graph_.output()) ++uses_[output.name()];
}

namespace {

// The one list of ONNX ops burst reads, each with its handler.
// Long: a table, one line per ONNX op; splitting it would make two lists to keep in step.
const std::map<std::string, Lowering::Handler>& handlers() {
  static const std::map<std::string, Lowering::Handler> table = {
      {"Conv", &Lowering::conv},
      {"ConvTranspose", &Lowering::conv_transpose},
      {"BatchNormalization", &Lowering::batch_normalization},
      {"Gemm", &Lowering::gemm},
      {"MatMul", &Lowering::matmul},
      {"Add", &Lowering::add},
      {"Mul", &Lowering::mul},
      {"MaxPool", &Lowering::max_pool},
      {"AveragePool", &Lowering::average_pool},
      {"GlobalAveragePool", &Lowering::global_average_pool},
      {"Flatten", &Lowering::flatten},
      {"Concat", &Lowering::concat},
      {"Dropout", &Lowering::dropout},
      {"Clip", &Lowering::clip},
      {"HardSigmoid", &Lowering::hard_sigmoid},
      {"Relu", &Lowering::element_wise},
      {"Sigmoid", &Lowering::element_wise},
      {"HardSwish", &Lowering::element_wise},
      {"Tanh", &Lowering::element_wise},
      {"Softplus", &Lowering::element_wise},
      {"LeakyRelu", &Lowering::element_wise},
      {"Elu", &Lowering::element_wise},
      {"Identity", &Lowering::identity},
      {"LayerNormalization", &Lowering::layer_normalization},
      {"Pad", &Lowering::pad},
      {"Shape", &Lowering::shape},
      {"Gather", &Lowering::gather},
      {"Unsqueeze", &Lowering::unsqueeze},
      {"Squeeze", &Lowering::squeeze},
      {"Cast", &Lowering::cast},
      {"Sub", &Lowering::subtract},
      {"Mod", &Lowering::integer_arithmetic},  // torch 2.x: unflatten's dim, (-1 + rank) % rank
      {"Div", &Lowering::div},
      {"ConstantOfShape", &Lowering::constant_of_shape},
      {"Equal", &Lowering::equal},
      {"Where", &Lowering::where},
      {"Range", &Lowering::range},
      {"Less", &Lowering::integer_comparison},
      {"LessOrEqual", &Lowering::integer_comparison},
      {"Greater", &Lowering::integer_comparison},
      {"GreaterOrEqual", &Lowering::integer_comparison},
      {"And", &Lowering::integer_comparison},
      {"Or", &Lowering::integer_comparison},
      {"GatherElements", &Lowering::gather_elements},
      {"Cos", &Lowering::fold_float_function},
      {"Sin", &Lowering::fold_float_function},
      {"Neg", &Lowering::negate},
      {"Expand", &Lowering::expand},
      {"Softmax", &Lowering::softmax},
      {"Erf", &Lowering::erf},
      {"PRelu", &Lowering::prelu},
      {"InstanceNormalization", &Lowering::instance_normalization},
      {"Resize", &Lowering::resize},
      {"Pow", &Lowering::power},
      {"Reciprocal", &Lowering::reciprocal},
      {"Sqrt", &Lowering::sqrt},  // constants only (onnx_scalars.cpp); else inside patterns
      {"Reshape", &Lowering::reshape},
      {"Transpose", &Lowering::transpose},
      {"Slice", &Lowering::slice},
      {"Split", &Lowering::split},
      {"ReduceMean", &Lowering::reduce_mean},
      {"Constant", &Lowering::constant},
  };
  return table;
}

}  // namespace

std::vector<LayerSpec> Lowering::lower() {
  for (ConstantTensor& tensor : constants_) bind_constant(&tensor);
  lower_inputs();
  for (const onnx::NodeProto* node : nodes_) {
    if (fused_.count(node) != 0) continue;
    if (reads_trace(*node)) {
      trace_op(*node);
      continue;
    }
    (this->*handler_of(node->op_type()))(*node);
  }
  lower_outputs();
  return std::move(layers_);
}

bool Lowering::supports(const std::string& op_type) { return handlers().count(op_type) != 0; }

Lowering::Handler Lowering::handler_of(const std::string& op_type) {
  const auto handler = handlers().find(op_type);
  BURST_ASSERT(handler != handlers().end(), "unsupported ops are refused before lowering");
  return handler->second;
}

void Lowering::lower_inputs() {
  for (const onnx::ValueInfoProto& input : graph_.input()) {
    if (values_.count(input.name()) != 0) continue;  // an initializer listed as an input
    const auto& type = input.type();
    const bool tokens = type.has_tensor_type() && type.tensor_type().elem_type() == onnx::TensorProto::INT64;
    if (!type.has_tensor_type() || (type.tensor_type().elem_type() != onnx::TensorProto::FLOAT && !tokens)) {
      throw UserError(fmt::format("graph input '{}' must be a float32 tensor or int64 token ids", input.name()));
    }
    const auto& dims = type.tensor_type().shape().dim();
    if (!type.tensor_type().has_shape() || dims.size() < 2) {
      throw UserError(fmt::format("graph input '{}' must have a batch dimension and a per-sample shape",
                                  input.name()));
    }
    InputAttrs attrs;
    for (int d = 1; d < dims.size(); ++d) {
      if (!dims[d].has_dim_value() || dims[d].dim_value() <= 0) {
        throw UserError(fmt::format(
            "graph input '{}': dimension {} is '{}', a dynamic size burst cannot resolve (only the "
            "batch dimension, the first, may be dynamic; export with a fixed input size)",
            input.name(), d, dims[d].has_dim_param() ? dims[d].dim_param() : "unknown"));
      }
      attrs.shape.push_back(dims[d].dim_value());
    }
    if (tokens) {
      attrs.dtype = DType::Int64;
      attrs.vocab = token_vocab(input.name());
    }
    bind_layer(input.name(), append(LayerSpec{input.name(), {}, attrs}));
  }
}

void Lowering::lower_outputs() {
  const int count = graph_.output_size();
  for (int i = 0; i < count; ++i) {
    const std::string& name = graph_.output(i).name();
    const auto found = values_.find(name);
    if (found == values_.end() || found->second.layer.empty()) {
      throw UserError(fmt::format("graph output '{}' is not computed by a layer burst trains", name));
    }
    const std::string& logits = found->second.layer;
    const Shape& shape = info_of(logits).output_shape;
    // A token model (an int64 input [T]) predicts each next token: logits [T, vocab].
    const Shape* tokens = token_input_shape();
    const bool per_token = tokens != nullptr && shape.size() == 2 && shape[0] == tokens->at(0);
    if (shape.size() != 1 && !per_token) {
      throw UserError(fmt::format(
          "graph output '{}' has per-sample shape {}: burst appends a softmax cross-entropy loss "
          "and needs logits [classes] (or [T, vocab] from token ids [T])",
          name, shape_to_string(shape)));
    }
    append(LayerSpec{count == 1 ? "loss" : "loss_" + name, {logits}, SoftmaxCrossEntropyAttrs{}});
  }
}

std::string Lowering::layer_of(const std::string& tensor) const {
  const auto found = values_.find(tensor);
  return found == values_.end() ? "" : found->second.layer;
}

void Lowering::bind_constant(ConstantTensor* tensor) {
  Value value;
  value.constant = tensor;
  if (!tensor->is_float) {
    SymbolicTensor ints{tensor->dims, {}};
    for (const int64_t v : tensor->ints) ints.values.push_back(SymbolicInt{0, v});
    value.ints = std::move(ints);
  }
  values_[tensor->name] = std::move(value);
}

bool Lowering::is_integer(const onnx::NodeProto& node, int index) const {
  return has_input(node, index) && input(node, index).ints.has_value();
}

const SymbolicTensor& Lowering::integer_input(const onnx::NodeProto& node, int index) const {
  const Value& value = input(node, index);
  if (!value.ints) {
    fail(node, fmt::format("input '{}' must be integers known at import time (a shape, axes or indices)",
                           node.input(index)));
  }
  return *value.ints;
}

std::vector<int64_t> Lowering::fixed_integers(const onnx::NodeProto& node, int index) const {
  std::vector<int64_t> result;
  for (const SymbolicInt& v : integer_input(node, index).values) {
    if (v.batch != 0) fail(node, fmt::format("input '{}' depends on the batch size", node.input(index)));
    result.push_back(v.constant);
  }
  return result;
}

void Lowering::bind_integers(const std::string& tensor, SymbolicTensor value) {
  Value bound;
  bound.ints = std::move(value);
  values_[tensor] = std::move(bound);
}

bool Lowering::has_input(const onnx::NodeProto& node, int index) const {
  return index < node.input_size() && !node.input(index).empty();
}

const Value& Lowering::input(const onnx::NodeProto& node, int index) const {
  if (!has_input(node, index)) fail(node, fmt::format("input {} is missing", index));
  const auto found = values_.find(node.input(index));
  BURST_ASSERT(found != values_.end(), "inputs were resolved before lowering");
  if (!found->second.not_computed.empty()) {
    fail(node, fmt::format("reads '{}', {}", node.input(index), found->second.not_computed));
  }
  return found->second;
}

std::string Lowering::layer_input(const onnx::NodeProto& node, int index) const {
  const Value& value = input(node, index);
  if (value.layer.empty()) {
    fail(node, fmt::format("input '{}' is a constant; burst needs a computed tensor there",
                           node.input(index)));
  }
  return value.layer;
}

ConstantTensor& Lowering::constant_input(const onnx::NodeProto& node, int index) const {
  const Value& value = input(node, index);
  if (value.constant == nullptr) {
    fail(node, fmt::format("input '{}' must be a constant (an initializer), it is computed",
                           node.input(index)));
  }
  return *value.constant;
}

const LayerInfo& Lowering::info_of(const std::string& layer) const { return infos_.at(layer); }

LayerSpec& Lowering::layer_named(const std::string& layer) { return layers_.at(layer_index_.at(layer)); }

int Lowering::uses(const std::string& name) const {
  const auto found = uses_.find(name);
  return found == uses_.end() ? 0 : found->second;
}

void Lowering::only_first_output_used(const onnx::NodeProto& node, const std::string& what) {
  for (int i = 1; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    Value hidden;
    hidden.not_computed = fmt::format("the {} of {}, which burst does not expose", what, describe(node));
    values_[node.output(i)] = std::move(hidden);
  }
}

std::string Lowering::append(LayerSpec spec) {
  const std::string base = spec.name;
  for (int suffix = 2; infos_.count(spec.name) != 0; ++suffix) spec.name = fmt::format("{}_{}", base, suffix);
  std::vector<const LayerInfo*> input_infos;
  for (const std::string& input : spec.inputs) input_infos.push_back(&info_of(input));
  infos_[spec.name] = infer_layer(spec, input_infos);
  layer_index_[spec.name] = layers_.size();
  layers_.push_back(std::move(spec));
  return layers_.back().name;
}

std::string Lowering::add_layer(const onnx::NodeProto& node, const std::string& weight,
                                std::vector<std::string> inputs, Attrs attrs) {
  return add_named_layer(node, state_dict_prefix(weight), std::move(inputs), std::move(attrs));
}

std::string Lowering::add_named_layer(const onnx::NodeProto& node, std::string name,
                                      std::vector<std::string> inputs, Attrs attrs) {
  if (name.empty()) name = node.name();
  if (name.empty()) name = node.output(0);
  try {
    name = append(LayerSpec{name, std::move(inputs), std::move(attrs)});
  } catch (const UserError& error) {
    fail(node, error.what());
  }
  bind_layer(node.output(0), name);
  return name;
}

void Lowering::bind_layer(const std::string& tensor, const std::string& layer) {
  Value bound;
  bound.layer = layer;
  values_[tensor] = std::move(bound);
}

InitialTensor Lowering::initial(ConstantTensor& tensor, std::vector<int64_t> shape) {
  if (!tensor.is_float) {
    throw UserError(fmt::format("initializer '{}' holds integers, a weight must be floating point", tensor.name));
  }
  InitialTensor result{tensor.name, shape.empty() ? tensor.dims : std::move(shape), {}};
  if (uses(tensor.name) == 1) {
    // Only this node reads it: the values move (a model's weights are not held twice).
    result.values = std::move(tensor.floats);
  } else {
    result.values = tensor.floats;
  }
  return result;
}

void Lowering::fail(const onnx::NodeProto& node, const std::string& reason) const {
  throw UserError(fmt::format("{}: {}", describe(node), reason));
}

}  // namespace burst::graph::onnx_import
