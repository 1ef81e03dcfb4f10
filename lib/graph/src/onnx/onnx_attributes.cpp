#include "onnx/onnx_attributes.h"

#include <fmt/format.h>

#include "burst/util/error.h"

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
  return attribute ? static_cast<double>(attribute->f()) : fallback;
}

std::string attr_string(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const AttributeProto* attribute = typed(node, name, AttributeProto::STRING);
  return attribute ? attribute->s() : fallback;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name,
                               const std::vector<int64_t>& fallback) {
  const AttributeProto* attribute = typed(node, name, AttributeProto::INTS);
  return attribute ? std::vector<int64_t>(attribute->ints().begin(), attribute->ints().end()) : fallback;
}

}  // namespace burst::graph::onnx_import
