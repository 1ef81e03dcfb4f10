#pragma once
// Test helpers: ONNX models built with ONNX's protobuf types, and the refusals of bad ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "burst/graph/onnx_import.h"
#include "burst/util/error.h"

namespace burst::graph::onnx_test {

// A small ONNX model under construction: opset 14, one float input [batch, C, H, W] (or of
// another element type: INT64 for token ids [batch, T]).
class OnnxModel {
 public:
  explicit OnnxModel(std::vector<int64_t> input_shape, int64_t opset = 14,
                     onnx::TensorProto::DataType input_type = onnx::TensorProto::FLOAT) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
    auto* input = model_.mutable_graph()->add_input();
    input->set_name("input");
    auto* tensor = input->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(input_type);
    tensor->mutable_shape()->add_dim()->set_dim_param("batch");
    for (const int64_t dim : input_shape) tensor->mutable_shape()->add_dim()->set_dim_value(dim);
  }

  // A float initializer with values 0, 1, 2, ... (or all `fill`).
  std::string weight(const std::string& name, std::vector<int64_t> dims, float fill = -1) {
    auto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (const int64_t dim : dims) {
      tensor->add_dims(dim);
      count *= dim;
    }
    for (int64_t i = 0; i < count; ++i) tensor->add_float_data(fill >= 0 ? fill : static_cast<float>(i));
    return name;
  }

  onnx::NodeProto* node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
    auto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op);
    node->set_name(op + "_" + std::to_string(model_.graph().node_size() - 1));
    for (const auto& input : inputs) node->add_input(input);
    for (const auto& output : outputs) node->add_output(output);
    return node;
  }

  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }
  onnx::ModelProto& proto() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }
  ImportedModel import() const { return import_onnx_bytes(bytes(), "", "test.onnx"); }

 private:
  onnx::ModelProto model_;
};

inline void set_ints(onnx::NodeProto* node, const std::string& name, std::vector<int64_t> values) {
  auto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (const int64_t v : values) attribute->add_ints(v);
}

inline void set_int(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

inline const LayerSpec& layer(const Graph& graph, const std::string& name) {
  const auto id = graph.find(name);
  if (!id) throw std::runtime_error("the imported graph has no layer '" + name + "'");
  return graph.layer(*id);
}

// An int64 initializer (a shape, indices or axes).
inline std::string ints(OnnxModel& m, const std::string& name, std::vector<int64_t> values, bool scalar = false) {
  auto* tensor = m.proto().mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) tensor->add_dims(static_cast<int64_t>(values.size()));
  for (const int64_t v : values) tensor->add_int64_data(v);
  return name;
}

// A Constant node holding a float tensor of `dims` (a Python number or a table computed in the
// export: exporters write them as Constant nodes, not initializers); returns its output.
inline std::string float_constant(OnnxModel& m, const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<float>& values) {
  auto* attribute = m.node("Constant", {}, {name})->add_attribute();
  attribute->set_name("value");
  attribute->set_type(onnx::AttributeProto::TENSOR);
  attribute->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  for (const int64_t dim : dims) attribute->mutable_t()->add_dims(dim);
  for (const float v : values) attribute->mutable_t()->add_float_data(v);
  return name;
}

// The one-line message of importing `bytes`, or "" if it imported.
inline std::string refusal(const std::string& bytes, const std::string& base_dir = "") {
  try {
    import_onnx_bytes(bytes, base_dir, "bad.onnx");
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.rfind("bad.onnx: ", 0), 0u) << message;
    return message;
  }
  return "";
}

inline void expect_refused(const std::string& bytes, const std::string& fragment, const std::string& base_dir = "") {
  const std::string message = refusal(bytes, base_dir);
  EXPECT_NE(message.find(fragment), std::string::npos) << "got: " << message;
}

}  // namespace burst::graph::onnx_test
