#include "burst/graph/model_json.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attr_fields.h"
#include "burst/graph/hf_config.h"
#include "burst/graph/onnx_import.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::graph {
namespace {

using nlohmann::json;

constexpr size_t kMaxShapeRank = 8;

// Reads one layer's attributes: JsonObjectReader plus the graph's own field types.
class AttrReader : public JsonObjectReader {
 public:
  using JsonObjectReader::JsonObjectReader;

  void read(const std::string& key, const json& value, int64_t& out) const { out = as_int(key, value); }
  void read(const std::string& key, const json& value, double& out) const { out = as_number(key, value); }
  void read(const std::string& key, const json& value, bool& out) const { out = as_bool(key, value); }
  void read(const std::string& key, const json& value, std::string& out) const {
    out = as_string(key, value);
  }
  void read(const std::string& key, const json& value, Pair& out) const {
    if (value.is_array() && value.size() == 2) {
      out = Pair{as_int(key, value[0]), as_int(key, value[1])};
    } else if (value.is_number()) {
      const int64_t both = as_int(key, value);
      out = Pair{both, both};
    } else {
      fail(key, fmt::format("must be an integer or [h, w], got {}", json_excerpt(value)));
    }
  }
  void read(const std::string& key, const json& value, Shape& out) const {
    if (!value.is_array() || value.empty() || value.size() > kMaxShapeRank) {
      fail(key, fmt::format("must be a list of 1 to {} integers, got {}", kMaxShapeRank,
                            json_excerpt(value)));
    }
    out.clear();
    for (const json& dim : value) out.push_back(as_int(key, dim));
  }
  void read(const std::string& key, const json& value, DType& out) const {
    const std::string name = value.is_string() ? value.get<std::string>() : "";
    if (name == "float32") {
      out = DType::Float32;
    } else if (name == "int64") {
      out = DType::Int64;
    } else {
      fail(key, fmt::format("must be \"float32\" or \"int64\", got {}", json_excerpt(value)));
    }
  }

  template <typename T>
  void operator()(const char* key, T& field, Presence presence) {
    const json* value = presence == Presence::Required ? &require(key) : find(key);
    if (value != nullptr) read(key, *value, field);
  }
};

// Writes fields into a JSON object; OmitIfDefault fields are skipped when unset.
template <typename AttrsT>
class ObjectWriter {
 public:
  explicit ObjectWriter(json& object) : object_(object) {}

  template <typename T>
  void operator()(const char* key, const T& field, Presence presence) {
    if (presence == Presence::OmitIfDefault && field == default_value<T>(key)) return;
    object_[key] = to_json(field);
  }

 private:
  template <typename T>
  T default_value(const char* key) const {
    AttrsT defaults{};
    T result{};
    for_each_field(defaults, [&](const char* k, auto& f, Presence) {
      if constexpr (std::is_same_v<std::decay_t<decltype(f)>, T>) {
        if (std::strcmp(k, key) == 0) result = f;
      }
    });
    return result;
  }
  static json to_json(const Pair& pair) { return json::array({pair.h, pair.w}); }
  static json to_json(DType dtype) { return dtype_name(dtype); }
  template <typename T>
  static json to_json(const T& value) { return value; }

  json& object_;
};

std::string layer_where(size_t index, const std::string& name, const std::string& op) {
  if (name.empty()) return fmt::format("layer #{}", index);
  return op.empty() ? fmt::format("layer #{} '{}'", index, name)
                    : fmt::format("layer #{} '{}' ({})", index, name, op);
}

LayerSpec layer_from_json(const json& object, size_t index) {
  if (!object.is_object()) {
    throw UserError(fmt::format("layer #{}: must be an object, got {}", index, json_excerpt(object)));
  }
  LayerSpec layer;
  layer.name = AttrReader(object, layer_where(index, "", "")).get_string("name");
  const std::string op = AttrReader(object, layer_where(index, layer.name, "")).get_string("op");
  const auto kind = op_from_name(op);
  if (!kind) {
    std::string known;
    for (int i = 0; i < kOpKindCount; ++i) {
      known += (known.empty() ? "" : ", ") + std::string(op_name(static_cast<OpKind>(i)));
    }
    throw UserError(fmt::format("{}: unknown op {} (known: {})", layer_where(index, layer.name, ""),
                                json_excerpt(json(op)), known));
  }
  AttrReader reader(object, layer_where(index, layer.name, op));
  reader.find("name");
  reader.find("op");
  if (const json* inputs = reader.find("inputs")) {
    if (!inputs->is_array()) reader.fail("inputs", "must be a list of layer names");
    for (const json& input : *inputs) {
      if (!input.is_string()) {
        reader.fail("inputs", fmt::format("must hold layer names, got {}", json_excerpt(input)));
      }
      layer.inputs.push_back(input.get<std::string>());
    }
  }
  layer.attrs = default_attrs(*kind);
  std::visit([&](auto& attrs) { for_each_field(attrs, reader); }, layer.attrs);
  reader.reject_unknown_keys();
  return layer;
}

json layer_to_json(const LayerSpec& layer) {
  json object = json::object();
  object["name"] = layer.name;
  object["op"] = op_name(layer.op());
  if (!layer.inputs.empty()) object["inputs"] = layer.inputs;
  std::visit(
      [&](const auto& attrs) {
        using AttrsT = std::decay_t<decltype(attrs)>;
        AttrsT copy = attrs;
        for_each_field(copy, ObjectWriter<AttrsT>(object));
      },
      layer.attrs);
  return object;
}

}  // namespace

std::string layer_signature(const Graph& graph, LayerId id) {
  json attrs = layer_to_json(graph.layer(id));
  for (const char* ignored : {"name", "op", "inputs", "tied_to", "weight"}) attrs.erase(ignored);
  std::string signature = op_name(graph.layer(id).op()) + attrs.dump();
  for (const LayerId input : graph.inputs(id)) {
    signature += shape_to_string(graph.info(input).output_shape);
  }
  if (graph.layer(id).op() == OpKind::Input) signature += shape_to_string(graph.info(id).output_shape);
  signature.erase(std::remove(signature.begin(), signature.end(), ' '), signature.end());
  return signature;
}

json model_to_json(const Graph& graph) {
  json layers = json::array();
  for (const LayerSpec& layer : graph.layers()) layers.push_back(layer_to_json(layer));
  return json{{"format", kModelFormat},
              {"version", kModelFormatVersion},
              {"name", graph.name()},
              {"layers", std::move(layers)}};
}

Graph model_from_json(const json& document) {
  JsonObjectReader reader(document, "model file");
  check_format(reader, kModelFormat, kModelFormatVersion);
  std::string name = reader.get_string("name");
  const json& layers = reader.require("layers");
  reader.reject_unknown_keys();
  if (!layers.is_array()) reader.fail("layers", "must be a list of layer objects");

  std::vector<LayerSpec> specs;
  specs.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) specs.push_back(layer_from_json(layers[i], i));
  return Graph::build(std::move(name), std::move(specs));
}

Graph model_from_text(const std::string& text) { return model_from_json(parse_json_text(text)); }

Graph load_model_file(const std::string& path) {
  const std::string text = read_text_file(path, "model file");
  try {
    return model_from_text(text);
  } catch (const UserError& error) {
    throw UserError(fmt::format("{}: {}", path, error.what()));
  }
}

void save_model_file(const Graph& graph, const std::string& path) {
  write_text_file_atomically(path, model_to_json(graph).dump(2) + "\n");
}

Graph load_model(const std::string& zoo_spec_or_path) {
  if (is_hf_spec(zoo_spec_or_path)) return build_hf_model(zoo_spec_or_path);
  if (is_zoo_model(zoo_spec_or_path)) return build_zoo_model(zoo_spec_or_path);
  if (is_onnx_path(zoo_spec_or_path)) return import_onnx_file(zoo_spec_or_path, /*weights=*/false).graph;
  std::ifstream probe(zoo_spec_or_path);
  if (probe || zoo_spec_or_path.find('/') != std::string::npos ||
      zoo_spec_or_path.find(".json") != std::string::npos) {
    return load_model_file(zoo_spec_or_path);
  }
  return build_zoo_model(zoo_spec_or_path);  // throws "unknown model ... zoo models: ..."
}

std::string with_sequence_length(const std::string& spec, int64_t seq) {
  if (seq < 1) throw UserError(fmt::format("--seq {}: give a positive number of tokens", seq));
  if (is_hf_spec(spec)) {
    const auto suffix = spec.rfind(":seq=");
    return fmt::format("{}:seq={}", suffix == std::string::npos || suffix < 3 ? spec : spec.substr(0, suffix), seq);
  }
  const std::string name = spec.substr(0, spec.find(':'));
  const auto& entries = zoo_entries();
  const auto entry = std::find_if(entries.begin(), entries.end(), [&](const ZooEntry& e) { return e.name == name; });
  const bool takes_seq = entry != entries.end() && std::any_of(entry->options.begin(), entry->options.end(),
                                                              [](const ZooOption& o) { return o.key == "seq"; });
  if (!takes_seq) {
    throw UserError(fmt::format("--seq {}: model '{}' has no sequence length to set (the zoo's gpt2 and llama "
                                "and hf: configs take one; a model file fixes its own)",
                                seq, text_excerpt(spec)));
  }
  // Drop any seq=... the spec holds, then add the new one.
  const auto colon = spec.find(':');
  std::string options;
  if (colon != std::string::npos) {
    std::stringstream stream(spec.substr(colon + 1));
    std::string item;
    while (std::getline(stream, item, ',')) {
      if (item.rfind("seq=", 0) != 0) options += item + ",";
    }
  }
  return fmt::format("{}:{}seq={}", name, options, seq);
}

}  // namespace burst::graph
