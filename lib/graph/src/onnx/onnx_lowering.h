#pragma once
// Internal: turns the nodes of a checked, topologically ordered ONNX graph into burst
// layers, one handler per ONNX op type (onnx_ops.cpp), with their initial weights.
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "burst/graph/onnx_import.h"
#include "onnx/onnx_tensors.h"

namespace burst::graph::onnx_import {

// What an ONNX tensor name stands for while lowering.
struct Value {
  std::string layer;                          // the output of this burst layer, or
  ConstantTensor* constant = nullptr;   // a constant (initializer or Constant node)
  std::string not_computed;                   // else why burst has no such tensor
};

class Lowering {
 public:
  // `nodes` in topological order; `initializers` decoded (decode_initializers);
  // `base_dir` resolves external data of Constant nodes.
  Lowering(const onnx::GraphProto& graph, std::vector<const onnx::NodeProto*> nodes, int opset,
           std::deque<ConstantTensor> initializers, std::string base_dir);

  // The layers (graph inputs, every node, a loss per graph output) and their weights.
  std::vector<LayerSpec> lower();
  std::map<std::string, LayerWeights> take_weights() { return std::move(weights_); }
  // The burst layer an ONNX tensor became, for the shape check ("" if none).
  std::string layer_of(const std::string& tensor) const;

  // The ONNX op types a handler exists for.
  static bool supports(const std::string& op_type);

  // Handlers, one per op type (onnx_ops.cpp).
  void conv(const onnx::NodeProto& node);
  void batch_normalization(const onnx::NodeProto& node);
  void gemm(const onnx::NodeProto& node);
  void matmul(const onnx::NodeProto& node);
  void add(const onnx::NodeProto& node);
  void mul(const onnx::NodeProto& node);
  void max_pool(const onnx::NodeProto& node);
  void average_pool(const onnx::NodeProto& node);
  void global_average_pool(const onnx::NodeProto& node);
  void flatten(const onnx::NodeProto& node);
  void concat(const onnx::NodeProto& node);
  void dropout(const onnx::NodeProto& node);
  void clip(const onnx::NodeProto& node);
  void hard_sigmoid(const onnx::NodeProto& node);
  void element_wise(const onnx::NodeProto& node);  // Relu, Sigmoid, HardSwish
  void identity(const onnx::NodeProto& node);
  void pad(const onnx::NodeProto& node);
  void constant(const onnx::NodeProto& node);

 private:
  // Inputs of `node`: i must exist and be non-empty unless optional.
  bool has_input(const onnx::NodeProto& node, int index) const;
  const Value& input(const onnx::NodeProto& node, int index) const;
  std::string layer_input(const onnx::NodeProto& node, int index) const;
  ConstantTensor& constant_input(const onnx::NodeProto& node, int index) const;
  const LayerInfo& info_of(const std::string& layer) const;
  LayerSpec& layer_named(const std::string& layer);
  // How many nodes and graph outputs read tensor `name`.
  int uses(const std::string& name) const;
  // Refuses a consumed output of `node` past the first (BatchNorm's statistics, masks).
  void only_first_output_used(const onnx::NodeProto& node, const std::string& what);

  // Appends a layer computing `node`'s first output; the name comes from `weight` (its
  // state_dict prefix) when there is one, else from the node. Shapes are inferred at once.
  std::string add_layer(const onnx::NodeProto& node, const std::string& weight,
                        std::vector<std::string> inputs, Attrs attrs);
  void bind_layer(const std::string& tensor, const std::string& layer);
  // A weight's initial tensor; its values move out of the constant when no other node reads it.
  InitialTensor initial(ConstantTensor& tensor, std::vector<int64_t> shape = {});
  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& reason) const;

  void lower_inputs();
  void lower_outputs();

  const onnx::GraphProto& graph_;
  std::vector<const onnx::NodeProto*> nodes_;
  int opset_;
  std::string base_dir_;

  std::vector<LayerSpec> layers_;
  std::unordered_map<std::string, LayerInfo> infos_;  // by layer name, as layers_ grow
  std::unordered_map<std::string, size_t> layer_index_;  // by layer name, into layers_
  std::map<std::string, LayerWeights> weights_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, int> uses_;
  std::deque<ConstantTensor> constants_;  // stable addresses for Value::constant
};

}  // namespace burst::graph::onnx_import
