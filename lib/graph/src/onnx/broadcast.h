#pragma once
// Internal: numpy broadcasting of two tensors' dims, for the tensors the importer folds
// (integer masks, float rotary tables).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace burst::graph::onnx_import {

// numpy's broadcast of two shapes, or nullopt when they do not broadcast.
inline std::optional<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = std::max(x, y);
  }
  return out;
}

// The row-major index into a tensor of `dims` (right-aligned, broadcast) of the element at
// `at` of a tensor of `out` dims.
inline size_t broadcast_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& out,
                              const std::vector<int64_t>& at) {
  size_t index = 0;
  const size_t offset = out.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d) {
    index = index * static_cast<size_t>(dims[d]) + static_cast<size_t>(dims[d] == 1 ? 0 : at[d + offset]);
  }
  return index;
}

// Calls visit(a_index, b_index) for each element of `out`, the broadcast of `a` and `b`, in order.
template <typename Visit>
void for_each_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::vector<int64_t>& out,
                        Visit&& visit) {
  int64_t count = 1;
  for (const int64_t dim : out) count *= dim;
  std::vector<int64_t> at(out.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    visit(broadcast_index(a, out, at), broadcast_index(b, out, at));
    for (size_t d = out.size(); d-- > 0 && ++at[d] == out[d];) at[d] = 0;
  }
}

}  // namespace burst::graph::onnx_import
