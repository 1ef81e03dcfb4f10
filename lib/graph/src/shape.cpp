#include "burst/graph/shape.h"

#include "burst/util/error.h"

namespace burst::graph {

int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Int64: return 8;
  }
  BURST_ASSERT(false, "unknown dtype");
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Int64: return "int64";
  }
  BURST_ASSERT(false, "unknown dtype");
}

std::string shape_to_string(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace burst::graph
