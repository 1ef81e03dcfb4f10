#pragma once
// Internal: ONNX tensors (initializers, Constant nodes and attributes) decoded into values
// the importer can use: float data for weights, int64 data for shapes and axes.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace burst::graph::onnx_import {

struct ConstantTensor {
  std::string name;
  std::vector<int64_t> dims;
  bool is_float = false;        // FLOAT, DOUBLE or FLOAT16 data, held as float
  std::vector<float> floats;    // is_float
  std::vector<int64_t> ints;    // INT64, INT32 and BOOL data otherwise

  int64_t element_count() const;
  // The single value of a scalar or one-element tensor, as a double.
  double scalar() const;
};

// Decodes `tensor`; data held externally is read from `base_dir`. Throws UserError naming
// the tensor for an unsupported type, a size that does not match its dims, or an external
// file that is missing or too short.
ConstantTensor decode_tensor(const onnx::TensorProto& tensor, const std::string& base_dir);

// Decodes every initializer of `graph` and frees its data in the proto as it goes (shape
// inference needs only the dims and types of weights), so a model's weights are held once.
// Integer initializers (shapes, axes) keep their data. Without `weight_values`, float
// tensors of more than 64 elements keep only dims and type (their values stay empty).
std::deque<ConstantTensor> decode_initializers(onnx::GraphProto* graph, const std::string& base_dir,
                                               bool weight_values);

}  // namespace burst::graph::onnx_import
