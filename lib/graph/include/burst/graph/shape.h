#pragma once
// Per-sample tensor shapes. The batch dimension is never part of a Shape: a layer's
// output for a per-device batch b is b x shape. Images are [C, H, W]; token
// sequences are [T] (ids) or [T, D] (features); a scalar per sample is [].
#include <cstdint>
#include <string>
#include <vector>

namespace burst::graph {

using Shape = std::vector<int64_t>;

enum class DType { Float32, Int64 };

// Size of one element in bytes (4 for float32, 8 for int64 token ids).
int64_t dtype_bytes(DType dtype);
const char* dtype_name(DType dtype);  // "float32" | "int64"

// "[3, 224, 224]"; a scalar prints as "[]".
std::string shape_to_string(const Shape& shape);

// Height and width of a 2-D window, stride, padding or spatial size.
struct Pair {
  int64_t h = 0;
  int64_t w = 0;
  bool operator==(const Pair& other) const { return h == other.h && w == other.w; }
  bool operator!=(const Pair& other) const { return !(*this == other); }
};

}  // namespace burst::graph
