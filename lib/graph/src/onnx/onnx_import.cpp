// ONNX import: parse, check the graph's structure (every input provided, no cycle, ops
// burst has), lower the nodes to layers, and check every shape against ONNX's own shape
// inference, so a mapping that would compute something else is refused, not trained.
#include "burst/graph/onnx_import.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <queue>
#include <set>

#include <fmt/format.h>
#include <onnx/shape_inference/implementation.h>

#include "burst/util/error.h"
#include "burst/util/utf8.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_lowering.h"
#include "onnx/mapped_file.h"

namespace burst::graph {
namespace {

using onnx_import::describe;
using onnx_import::Lowering;

// The opsets whose operator definitions the handlers follow (torch 1.13 writes 7-17;
// docs/model-import.md says what to pass).
constexpr int kMinOpset = 11;
constexpr int kMaxOpset = 17;

onnx::ModelProto parse_model(const char* bytes, size_t size) {
  onnx::ModelProto model;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) || !model.ParseFromArray(bytes, static_cast<int>(size))) {
    throw UserError("not an ONNX model: the bytes do not parse as an ONNX ModelProto (truncated or another format)");
  }
  if (!model.has_graph() || model.graph().node_size() == 0 || model.ir_version() <= 0) {
    throw UserError("not an ONNX model: no graph with nodes and an IR version (is it another format?)");
  }
  return model;
}

// Protobuf does not check that an ONNX string is UTF-8; burst's graph and the JSON it writes
// need it. Checks every name that can become a layer, a tensor or a weight, and op types.
void check_node_names_are_utf8(const onnx::NodeProto& node, int index) {
  check_utf8(node.op_type(), fmt::format("the op type of ONNX node #{}", index));
  check_utf8(node.domain(), fmt::format("the domain of ONNX node #{} ({})", index, node.op_type()));
  const std::string where = fmt::format("ONNX node #{} ({})", index, node.op_type());
  check_utf8(node.name(), "the name of " + where);
  for (int i = 0; i < node.input_size(); ++i) check_utf8(node.input(i), fmt::format("input {} of {}", i, where));
  for (int i = 0; i < node.output_size(); ++i) check_utf8(node.output(i), fmt::format("output {} of {}", i, where));
}

void check_names_are_utf8(const onnx::GraphProto& graph) {
  for (int i = 0; i < graph.input_size(); ++i) {
    check_utf8(graph.input(i).name(), fmt::format("the name of ONNX graph input #{}", i));
  }
  for (int i = 0; i < graph.output_size(); ++i) {
    check_utf8(graph.output(i).name(), fmt::format("the name of ONNX graph output #{}", i));
  }
  for (int i = 0; i < graph.initializer_size(); ++i) {
    check_utf8(graph.initializer(i).name(), fmt::format("the name of ONNX initializer #{}", i));
  }
  for (int i = 0; i < graph.node_size(); ++i) check_node_names_are_utf8(graph.node(i), i);
}

int default_opset(const onnx::ModelProto& model) {
  for (const auto& entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx") {
      const auto version = static_cast<int>(entry.version());
      if (version < kMinOpset || version > kMaxOpset) {
        throw UserError(fmt::format("opset {} is not supported: burst reads opsets {}-{} (torch.onnx.export "
                                    "opset_version=14, see docs/model-import.md)",
                                    entry.version(), kMinOpset, kMaxOpset));
      }
      return version;
    }
  }
  throw UserError("the model imports no version of the default ONNX opset");
}

// Nodes in an order where every input is produced first. Refuses a tensor produced twice,
// an input nothing provides, and cycles.
std::vector<const onnx::NodeProto*> ordered_nodes(const onnx::GraphProto& graph) {
  std::set<std::string> provided;
  for (const auto& tensor : graph.initializer()) provided.insert(tensor.name());
  for (const auto& input : graph.input()) provided.insert(input.name());
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& output : graph.node(i).output()) {
      if (output.empty()) continue;
      if (provided.count(output) != 0 || !producer.emplace(output, i).second) {
        throw UserError(fmt::format("tensor '{}' is produced twice (by {})", output, describe(graph.node(i))));
      }
    }
  }
  std::vector<int> waiting(static_cast<size_t>(graph.node_size()), 0);
  std::vector<std::vector<int>> readers(static_cast<size_t>(graph.node_size()));
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& input : graph.node(i).input()) {
      if (input.empty() || provided.count(input) != 0) continue;
      const auto found = producer.find(input);
      if (found == producer.end()) {
        throw UserError(fmt::format("{} reads '{}', which no node, initializer or graph input provides "
                                    "(a missing initializer?)",
                                    describe(graph.node(i)), input));
      }
      ++waiting[static_cast<size_t>(i)];
      readers[static_cast<size_t>(found->second)].push_back(i);
    }
  }
  std::vector<const onnx::NodeProto*> order;
  // Smallest index first keeps the file's order where it is valid.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (waiting[static_cast<size_t>(i)] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int next = ready.top();
    ready.pop();
    order.push_back(&graph.node(next));
    for (const int reader : readers[static_cast<size_t>(next)]) {
      if (--waiting[static_cast<size_t>(reader)] == 0) ready.push(reader);
    }
  }
  if (order.size() != static_cast<size_t>(graph.node_size())) {
    for (int i = 0; i < graph.node_size(); ++i) {
      if (waiting[static_cast<size_t>(i)] > 0) {
        throw UserError(fmt::format("the graph has a cycle: {} depends on its own output", describe(graph.node(i))));
      }
    }
  }
  return order;
}

// One line for every op type burst has no handler for, with its first node.
void refuse_unsupported(const onnx::GraphProto& graph, int opset) {
  std::map<std::string, std::pair<std::string, int>> unsupported;  // op -> first node, count
  for (const auto& node : graph.node()) {
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (default_domain && Lowering::supports(node.op_type())) continue;
    const std::string op = default_domain ? node.op_type() : node.domain() + "." + node.op_type();
    auto& entry = unsupported[op];
    if (entry.second++ == 0) entry.first = node.name().empty() ? node.output(0) : node.name();
  }
  if (unsupported.empty()) return;
  std::string list;
  for (const auto& [op, entry] : unsupported) {
    list += fmt::format("{}{} (node '{}'{})", list.empty() ? "" : "; ", op, entry.first,
                        entry.second > 1 ? fmt::format(" and {} more", entry.second - 1) : "");
  }
  throw UserError(fmt::format("unsupported ONNX ops at opset {}: {} (see docs/model-import.md for the ops burst reads)",
                              opset, list));
}

// ONNX's inferred shape of `value` without the batch dim, if every per-sample dim is known.
std::optional<Shape> per_sample_shape(const onnx::ValueInfoProto& value) {
  if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return std::nullopt;
  const auto& dims = value.type().tensor_type().shape().dim();
  if (dims.size() < 1) return std::nullopt;
  Shape shape;
  for (int d = 1; d < dims.size(); ++d) {
    if (!dims[d].has_dim_value()) return std::nullopt;
    shape.push_back(dims[d].dim_value());
  }
  return shape;
}

// Every tensor that became a layer's output must have the shape ONNX infers for it.
void check_shapes(onnx::ModelProto&& model, const Lowering& lowering, const Graph& graph) {
  onnx::ShapeInferenceOptions options{/*check_type=*/false, /*error_mode=*/0, /*enable_data_propagation=*/false};
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& error) {
    throw UserError(fmt::format("ONNX shape inference failed: {}", error.what()));
  }
  const auto check = [&](const onnx::ValueInfoProto& value) {
    const std::string layer = lowering.layer_of(value.name());
    const auto onnx_shape = per_sample_shape(value);
    if (layer.empty() || !onnx_shape) return;
    const Shape& ours = graph.info(*graph.find(layer)).output_shape;
    // A layer can stand for several tensors (Identity, Dropout with p = 0): all share its shape.
    if (*onnx_shape != ours) {
      throw UserError(fmt::format("ONNX infers per-sample shape {} for '{}', but burst's layer '{}' gives {}; "
                                  "burst cannot import this model exactly",
                                  shape_to_string(*onnx_shape), value.name(), layer, shape_to_string(ours)));
    }
  };
  for (const auto& value : model.graph().value_info()) check(value);
  for (const auto& value : model.graph().output()) check(value);
}

ImportedModel import_model(onnx::ModelProto model, const std::string& base_dir, const std::string& name,
                           bool weights) {
  check_names_are_utf8(model.graph());
  const int opset = default_opset(model);
  const onnx::GraphProto& graph = model.graph();
  std::vector<const onnx::NodeProto*> nodes = ordered_nodes(graph);
  refuse_unsupported(graph, opset);
  std::deque<onnx_import::ConstantTensor> initializers =
      onnx_import::decode_initializers(model.mutable_graph(), base_dir, weights);
  Lowering lowering(graph, std::move(nodes), std::move(initializers), base_dir);
  std::vector<LayerSpec> layers = lowering.lower();
  ImportedModel imported{Graph::build(name, std::move(layers)), {}};
  if (weights) imported.weights = lowering.take_weights();
  check_shapes(std::move(model), lowering, imported.graph);
  return imported;
}

// Prefixes errors with the model's name.
template <typename Function>
ImportedModel naming_errors(const std::string& source, Function&& function) {
  try {
    return function();
  } catch (const UserError& error) {
    throw UserError(fmt::format("{}: {}", source, error.what()));
  }
}

// The model's name: the file's name without ".onnx", escaped where it is not UTF-8 (file
// names are bytes), so that a good model in a Latin-1-named file still imports.
std::string stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (is_onnx_path(base)) base.resize(base.size() - 5);
  return base.empty() ? "model" : escape_for_terminal(base);
}

}  // namespace

bool is_onnx_path(const std::string& path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

ImportedModel import_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                                const std::string& source, bool weights) {
  return naming_errors(source, [&] {
    return import_model(parse_model(bytes.data(), bytes.size()), base_dir, stem(source), weights);
  });
}

ImportedModel import_onnx_file(const std::string& path, bool weights) {
  const size_t slash = path.find_last_of('/');
  const std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  onnx_import::MappedFile file(path);  // its errors name the path
  return naming_errors(path, [&] {
    onnx::ModelProto model = parse_model(file.data(), file.size());
    file.release();  // the model holds what it needs now
    return import_model(std::move(model), base_dir, stem(path), weights);
  });
}

}  // namespace burst::graph
