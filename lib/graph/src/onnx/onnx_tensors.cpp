#include "onnx/onnx_tensors.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include <unordered_set>

#include <fmt/format.h>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"

namespace burst::graph::onnx_import {
namespace {

using onnx::TensorProto;

[[noreturn]] void refuse(const TensorProto& tensor, const std::string& reason) {
  throw UserError(fmt::format("initializer '{}': {}", tensor.name(), reason));
}

// Elements the dims describe; refuses negative dims and counts past 2^40 (no real weight is
// that large, and the bound keeps every byte count below int64's limit).
int64_t dims_element_count(const TensorProto& tensor) {
  int64_t count = 1;
  for (const int64_t dim : tensor.dims()) {
    if (dim < 0) refuse(tensor, fmt::format("negative dimension {}", dim));
    const auto product = checked_mul(count, dim);
    if (!product || *product > (int64_t{1} << 40)) refuse(tensor, "too many elements");
    count = *product;
  }
  return count;
}

size_t element_size(const TensorProto& tensor) {
  switch (tensor.data_type()) {
    case TensorProto::FLOAT: return 4;
    case TensorProto::DOUBLE: return 8;
    case TensorProto::FLOAT16: return 2;
    case TensorProto::INT64: return 8;
    case TensorProto::INT32: return 4;
    case TensorProto::BOOL: return 1;
    default:
      refuse(tensor, fmt::format("data type {} is not supported (float, double, float16, int64, "
                                 "int32 and bool are)",
                                 TensorProto::DataType_Name(
                                     static_cast<TensorProto::DataType>(tensor.data_type()))));
  }
}

// IEEE half to float (subnormals, infinities and NaN included).
float half_to_float(uint16_t half) {
  const uint32_t sign = (half >> 15) & 1u, exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // mantissa * 2^-24
  } else if (exponent == 31) {
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = static_cast<float>(1024 + mantissa) * std::ldexp(1.0f, static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

// The raw little-endian bytes of an external tensor: key "location" relative to base_dir,
// optional "offset" and "length".
std::string read_external(const TensorProto& tensor, const std::string& base_dir, size_t wanted) {
  std::string location;
  int64_t offset = 0;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = std::atoll(entry.value().c_str());
  }
  if (location.empty()) refuse(tensor, "external data without a location");
  if (location.find("..") != std::string::npos || location.front() == '/') {
    refuse(tensor, fmt::format("external data location '{}' leaves the model's directory", location));
  }
  if (base_dir.empty()) refuse(tensor, "external data, but the model was not read from a file");
  const std::string path = base_dir + "/" + location;
  std::ifstream file(path, std::ios::binary);
  if (!file) refuse(tensor, fmt::format("external data file '{}' cannot be opened", path));
  file.seekg(offset);
  std::string bytes(wanted, '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(wanted));
  if (offset < 0 || static_cast<size_t>(file.gcount()) != wanted) {
    refuse(tensor, fmt::format("external data file '{}' holds fewer than {} bytes at offset {}", path,
                               wanted, offset));
  }
  return bytes;
}

template <typename T>
T load(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

void decode_raw(const TensorProto& tensor, const std::string& raw, ConstantTensor* out) {
  const size_t size = element_size(tensor);
  const auto count = static_cast<size_t>(out->element_count());
  if (raw.size() != count * size) {
    refuse(tensor, fmt::format("holds {} bytes of data, its dims need {}", raw.size(), count * size));
  }
  if (tensor.data_type() == TensorProto::FLOAT) {  // the common case, in one copy
    out->floats.resize(count);
    std::memcpy(out->floats.data(), raw.data(), raw.size());
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const char* at = raw.data() + i * size;
    switch (tensor.data_type()) {
      case TensorProto::FLOAT: out->floats.push_back(load<float>(at)); break;
      case TensorProto::DOUBLE: out->floats.push_back(static_cast<float>(load<double>(at))); break;
      case TensorProto::FLOAT16: out->floats.push_back(half_to_float(load<uint16_t>(at))); break;
      case TensorProto::INT64: out->ints.push_back(load<int64_t>(at)); break;
      case TensorProto::INT32: out->ints.push_back(load<int32_t>(at)); break;
      default: out->ints.push_back(load<uint8_t>(at) != 0); break;  // BOOL
    }
  }
}

// Data in the typed repeated fields (float_data, int64_data, ...).
void decode_typed(const TensorProto& tensor, ConstantTensor* out) {
  switch (tensor.data_type()) {
    case TensorProto::FLOAT: out->floats.assign(tensor.float_data().begin(), tensor.float_data().end()); break;
    case TensorProto::DOUBLE:
      for (const double v : tensor.double_data()) out->floats.push_back(static_cast<float>(v));
      break;
    case TensorProto::FLOAT16:
      for (const int32_t bits : tensor.int32_data()) out->floats.push_back(half_to_float(static_cast<uint16_t>(bits)));
      break;
    case TensorProto::INT64: out->ints.assign(tensor.int64_data().begin(), tensor.int64_data().end()); break;
    default: out->ints.assign(tensor.int32_data().begin(), tensor.int32_data().end()); break;  // INT32, BOOL
  }
  const size_t held = out->is_float ? out->floats.size() : out->ints.size();
  if (held != static_cast<size_t>(out->element_count())) {
    refuse(tensor, fmt::format("holds {} values, its dims need {}", held, out->element_count()));
  }
}

}  // namespace

int64_t ConstantTensor::element_count() const {
  int64_t count = 1;
  for (const int64_t dim : dims) count *= dim;  // bounded by dims_element_count
  return count;
}

double ConstantTensor::scalar() const {
  if (element_count() != 1) {
    throw UserError(fmt::format("tensor '{}' must hold one value, it holds {}", name, element_count()));
  }
  return is_float ? static_cast<double>(floats[0]) : static_cast<double>(ints[0]);
}

ConstantTensor decode_tensor(const TensorProto& tensor, const std::string& base_dir) {
  ConstantTensor out;
  out.name = tensor.name();
  const int64_t count = dims_element_count(tensor);
  out.dims.assign(tensor.dims().begin(), tensor.dims().end());
  const size_t size = element_size(tensor);
  const auto type = tensor.data_type();
  out.is_float = type == TensorProto::FLOAT || type == TensorProto::DOUBLE || type == TensorProto::FLOAT16;
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    decode_raw(tensor, read_external(tensor, base_dir, static_cast<size_t>(count) * size), &out);
  } else if (tensor.has_raw_data()) {
    decode_raw(tensor, tensor.raw_data(), &out);
  } else {
    decode_typed(tensor, &out);
  }
  return out;
}

std::deque<ConstantTensor> decode_initializers(onnx::GraphProto* graph, const std::string& base_dir,
                                               bool weight_values) {
  // Small tensors are kept whatever `weight_values` says: Clip's bounds, Dropout's ratio.
  // So are tables read as data rather than as weights: a causal mask buffer is sliced and
  // compared (Slice, Equal), and lowering reads its values.
  constexpr int64_t kAlwaysDecoded = 64;
  std::unordered_set<std::string> read_as_data;
  for (const onnx::NodeProto& node : graph->node()) {
    if (node.op_type() == "Slice" || node.op_type() == "Equal") read_as_data.insert(node.input().begin(), node.input().end());
  }
  std::deque<ConstantTensor> constants;
  for (TensorProto& tensor : *graph->mutable_initializer()) {
    const bool is_float = tensor.data_type() == TensorProto::FLOAT || tensor.data_type() == TensorProto::DOUBLE ||
                          tensor.data_type() == TensorProto::FLOAT16;
    if (!weight_values && is_float && dims_element_count(tensor) > kAlwaysDecoded &&
        read_as_data.count(tensor.name()) == 0) {
      ConstantTensor shape_only;  // dims and type: what lowering checks
      shape_only.name = tensor.name();
      shape_only.dims.assign(tensor.dims().begin(), tensor.dims().end());
      shape_only.is_float = true;
      constants.push_back(std::move(shape_only));
    } else {
      constants.push_back(decode_tensor(tensor, base_dir));
    }
    if (!constants.back().is_float) continue;
    std::string().swap(*tensor.mutable_raw_data());  // swap: clear() would keep the capacity
    tensor.clear_float_data();
    tensor.clear_double_data();
    tensor.clear_int32_data();
    if (tensor.data_location() == TensorProto::EXTERNAL) {
      tensor.clear_external_data();
      tensor.set_data_location(TensorProto::DEFAULT);
    }
  }
  return constants;
}

}  // namespace burst::graph::onnx_import
