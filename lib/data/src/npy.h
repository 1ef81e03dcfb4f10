#pragma once
// NumPy's .npy format (versions 1-3): a magic string, a little-endian header length, an
// ASCII dict {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...)}, then the C-order
// elements. Internal to lib/data.
#include <cstdint>
#include <string>
#include <vector>

#include "mapped_file.h"

namespace burst::data::detail {

struct NpyArray {
  std::string descr;           // numpy's type string: "<f4", "|u1", "<i8", ...
  std::vector<int64_t> shape;  // () for a scalar
  const uint8_t* data = nullptr;
  int64_t elements = 0;        // the product of shape
  int64_t element_bytes = 0;   // from descr
};

// The array in `file`, its header checked and its size exactly the elements the header
// declares: UserError naming the file otherwise (a truncated file says how many bytes it
// has and needs).
NpyArray parse_npy(const MappedFile& file);

}  // namespace burst::data::detail
