#include "onnx/onnx_attributes.h"

#include <cstdlib>

#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/utf8.h"

namespace burst::graph::onnx_import {
namespace {

using onnx::AttributeProto;

const AttributeProto* typed(const onnx::NodeProto& node, const std::string& name,
                            AttributeProto::AttributeType type) {
  const AttributeProto* attribute = find_attribute(node, name);
  if (attribute != nullptr && attribute->type() != type) {
    throw UserError(fmt::format("{}: attribute '{}' is {}, expected {}", describe(node), name,
                                AttributeProto::AttributeType_Name(attribute->type()),
                                AttributeProto::AttributeType_Name(type)));
  }
  return attribute;
}

}  // namespace

std::string describe(const onnx::NodeProto& node) {
  return fmt::format("node '{}' ({})", node.name().empty() ? node.output_size() > 0 ? node.output(0) : "" : node.name(),
                     node.op_type());
}

const AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const AttributeProto* attribute = typed(node, name, AttributeProto::INT);
  return attribute ? attribute->i() : fallback;
}

double attr_float(const onnx::NodeProto& node, const std::string& name, double fallback) {
  const AttributeProto* attribute = typed(node, name, AttributeProto::FLOAT);
  if (attribute == nullptr) return fallback;
  // ONNX stores float32; PyTorch's value was a double (eps=0.001). The shortest decimal that
  // reads back as the same float recovers it: 0.001f becomes 0.001, not 0.0010000000475.
  return std::strtod(fmt::format("{}", attribute->f()).c_str(), nullptr);
}

std::string attr_string(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const AttributeProto* attribute = typed(node, name, AttributeProto::STRING);
  if (attribute == nullptr) return fallback;
  check_utf8(attribute->s(), fmt::format("{}: attribute '{}'", describe(node), name));
  return attribute->s();
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name,
                               const std::vector<int64_t>& fallback) {
  const AttributeProto* attribute = typed(node, name, AttributeProto::INTS);
  return attribute ? std::vector<int64_t>(attribute->ints().begin(), attribute->ints().end()) : fallback;
}

}  // namespace burst::graph::onnx_import
