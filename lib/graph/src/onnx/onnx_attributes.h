#pragma once
// Internal: typed reads of an ONNX node's attributes, with ONNX's defaults given by the
// caller. A present attribute of the wrong type is refused naming the node.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace burst::graph::onnx_import {

// "node 'Conv_3' (Conv)" for messages.
std::string describe(const onnx::NodeProto& node);

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name);
int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
// A float attribute as the shortest decimal that is the same float (0.001f -> 0.001).
double attr_float(const onnx::NodeProto& node, const std::string& name, double fallback);
std::string attr_string(const onnx::NodeProto& node, const std::string& name, const std::string& fallback);
std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name,
                               const std::vector<int64_t>& fallback);

}  // namespace burst::graph::onnx_import
