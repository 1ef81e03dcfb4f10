#pragma once
// ONNX import (see docs/model-import.md): an ONNX model exported from PyTorch becomes a burst
// graph, and its initializers become the layers' initial weights. No protobuf type appears
// here: the importer's ONNX and protobuf use stays inside lib/graph/src/onnx.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "burst/graph/graph.h"

namespace burst::graph {

// One initial tensor of a layer: an ONNX initializer, under its name in the file (which
// torch.onnx.export takes from the state_dict: "layer1.0.conv1.weight") and in PyTorch's
// shape and layout, float32.
struct InitialTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// A layer's initial tensors in the order its torch module lists them: parameters (weight,
// then bias) and buffers (BatchNorm's running_mean and running_var).
struct LayerWeights {
  std::vector<InitialTensor> parameters;
  std::vector<InitialTensor> buffers;
};

struct ImportedModel {
  Graph graph;
  std::map<std::string, LayerWeights> weights;  // by layer name; layers without weights absent
};

// Whether a --model argument names an ONNX file (it ends in ".onnx").
bool is_onnx_path(const std::string& path);

// Reads, checks and converts an ONNX model file. External data files are looked up beside
// it. Anything burst cannot represent exactly is refused with one UserError line naming
// the file: unparseable bytes, a cycle, a missing initializer or external-data file, a
// per-sample shape ONNX leaves unknown, and every unsupported op type (node, op, opset).
// With `weights` false, the weights' values are neither decoded nor returned (planning and
// simulating need only the graph).
ImportedModel import_onnx_file(const std::string& path, bool weights = true);

// The same from bytes already read; `base_dir` resolves external data ("" for none allowed)
// and `source` names the model in messages and becomes the graph's name.
ImportedModel import_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                                const std::string& source, bool weights = true);

}  // namespace burst::graph
