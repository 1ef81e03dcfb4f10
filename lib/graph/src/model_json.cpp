#include "burst/graph/model_json.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attr_fields.h"
#include "burst/graph/zoo.h"
#include "burst/util/error.h"

namespace burst::graph {
namespace {

using nlohmann::json;

constexpr int kMaxNestingDepth = 64;
constexpr size_t kMaxShapeRank = 8;

// A JSON value shortened for error messages.
std::string excerpt(const json& value) {
  std::string text = value.dump(-1, ' ', true, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// A user string (a key, a name) shortened for error messages.
std::string excerpt(const std::string& text) {
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// Reads the typed fields of one JSON object; every error names `where_` and the key.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw UserError(fmt::format("{}: field '{}' {}", where_, key, problem));
  }

  const json* find(const std::string& key) {
    used_.insert(key);
    const auto found = object_.find(key);
    return found == object_.end() ? nullptr : &*found;
  }
  const json& require(const std::string& key) {
    const json* value = find(key);
    if (value == nullptr) fail(key, "is missing");
    return *value;
  }

  int64_t to_int(const std::string& key, const json& value) const {
    if (value.is_number_unsigned()) {
      if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(key, fmt::format("is too large: {}", excerpt(value)));
      }
      return static_cast<int64_t>(value.get<uint64_t>());
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    fail(key, fmt::format("must be an integer, got {}", excerpt(value)));
  }

  void read(const std::string& key, const json& value, int64_t& out) const { out = to_int(key, value); }
  void read(const std::string& key, const json& value, double& out) const {
    if (!value.is_number()) fail(key, fmt::format("must be a number, got {}", excerpt(value)));
    out = value.get<double>();
  }
  void read(const std::string& key, const json& value, bool& out) const {
    if (!value.is_boolean()) fail(key, fmt::format("must be true or false, got {}", excerpt(value)));
    out = value.get<bool>();
  }
  void read(const std::string& key, const json& value, std::string& out) const {
    if (!value.is_string()) fail(key, fmt::format("must be a string, got {}", excerpt(value)));
    out = value.get<std::string>();
  }
  void read(const std::string& key, const json& value, Pair& out) const {
    if (value.is_array() && value.size() == 2) {
      out = Pair{to_int(key, value[0]), to_int(key, value[1])};
    } else if (value.is_number()) {
      const int64_t both = to_int(key, value);
      out = Pair{both, both};
    } else {
      fail(key, fmt::format("must be an integer or [h, w], got {}", excerpt(value)));
    }
  }
  void read(const std::string& key, const json& value, Shape& out) const {
    if (!value.is_array() || value.empty() || value.size() > kMaxShapeRank) {
      fail(key, fmt::format("must be a list of 1 to {} integers, got {}", kMaxShapeRank,
                            excerpt(value)));
    }
    out.clear();
    for (const json& dim : value) out.push_back(to_int(key, dim));
  }
  void read(const std::string& key, const json& value, DType& out) const {
    const std::string name = value.is_string() ? value.get<std::string>() : "";
    if (name == "float32") {
      out = DType::Float32;
    } else if (name == "int64") {
      out = DType::Int64;
    } else {
      fail(key, fmt::format("must be \"float32\" or \"int64\", got {}", excerpt(value)));
    }
  }

  template <typename T>
  void operator()(const char* key, T& field, Presence presence) {
    const json* value = presence == Presence::Required ? &require(key) : find(key);
    if (value != nullptr) read(key, *value, field);
  }

  // Refuses keys nobody asked for (typos would otherwise be silently ignored).
  void reject_unknown_keys() const {
    for (const auto& item : object_.items()) {
      if (used_.count(item.key()) == 0) {
        std::string accepted;
        for (const auto& key : used_) accepted += (accepted.empty() ? "" : ", ") + key;
        throw UserError(fmt::format("{}: unknown field '{}' (accepted: {})", where_,
                                    excerpt(item.key()), accepted));
      }
    }
  }

 private:
  const json& object_;
  std::string where_;
  std::set<std::string> used_;
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
    throw UserError(fmt::format("layer #{}: must be an object, got {}", index, excerpt(object)));
  }
  LayerSpec layer;
  ObjectReader header(object, layer_where(index, "", ""));
  header.read("name", header.require("name"), layer.name);
  for (const char c : layer.name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      throw UserError(fmt::format("layer #{}: name {} contains a control character", index,
                                  excerpt(json(layer.name))));
    }
  }
  std::string op;
  ObjectReader named(object, layer_where(index, layer.name, ""));
  named.read("op", named.require("op"), op);
  const auto kind = op_from_name(op);
  if (!kind) {
    std::string known;
    for (int i = 0; i < kOpKindCount; ++i) {
      known += (known.empty() ? "" : ", ") + std::string(op_name(static_cast<OpKind>(i)));
    }
    throw UserError(fmt::format("{}: unknown op {} (known: {})", layer_where(index, layer.name, ""),
                                excerpt(json(op)), known));
  }
  ObjectReader reader(object, layer_where(index, layer.name, op));
  reader.find("name");
  reader.find("op");
  if (const json* inputs = reader.find("inputs")) {
    if (!inputs->is_array()) reader.fail("inputs", "must be a list of layer names");
    for (const json& input : *inputs) {
      if (!input.is_string()) {
        reader.fail("inputs", fmt::format("must hold layer names, got {}", excerpt(input)));
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

json model_to_json(const Graph& graph) {
  json layers = json::array();
  for (const LayerSpec& layer : graph.layers()) layers.push_back(layer_to_json(layer));
  return json{{"format", kModelFormat},
              {"version", kModelFormatVersion},
              {"name", graph.name()},
              {"layers", std::move(layers)}};
}

Graph model_from_json(const json& document) {
  if (!document.is_object()) {
    throw UserError(fmt::format("model file must be a JSON object, got {}", excerpt(document)));
  }
  ObjectReader reader(document, "model");
  std::string format;
  reader.read("format", reader.require("format"), format);
  if (format != kModelFormat) {
    throw UserError(fmt::format("not a model file: format is \"{}\", expected \"{}\"", format,
                                kModelFormat));
  }
  int64_t version = 0;
  reader.read("version", reader.require("version"), version);
  if (version != kModelFormatVersion) {
    throw UserError(fmt::format("model format version {} is not supported (this burst reads "
                                "version {})", version, kModelFormatVersion));
  }
  std::string name;
  reader.read("name", reader.require("name"), name);
  const json& layers = reader.require("layers");
  reader.reject_unknown_keys();
  if (!layers.is_array()) reader.fail("layers", "must be a list of layer objects");

  std::vector<LayerSpec> specs;
  specs.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) specs.push_back(layer_from_json(layers[i], i));
  return Graph::build(std::move(name), std::move(specs));
}

Graph model_from_text(const std::string& text) {
  json document;
  try {
    // The callback sees every nesting level: refuse pathological depth before building it.
    document = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxNestingDepth) {
        throw UserError(fmt::format("JSON nesting deeper than {} levels", kMaxNestingDepth));
      }
      return true;
    });
  } catch (const json::exception& error) {
    // nlohmann's messages start with "[json.exception.parse_error.101] ": keep the reason.
    std::string reason = error.what();
    const auto bracket = reason.find("] ");
    if (reason.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) {
      reason = reason.substr(bracket + 2);
    }
    throw UserError("invalid JSON: " + reason);
  }
  return model_from_json(document);
}

Graph load_model_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw UserError(fmt::format("cannot open model file '{}': {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad() || text.fail()) {
    throw UserError(fmt::format("cannot read model file '{}' (is it a regular file?)", path));
  }
  try {
    return model_from_text(text.str());
  } catch (const UserError& error) {
    throw UserError(fmt::format("{}: {}", path, error.what()));
  }
}

void save_model_file(const Graph& graph, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    throw UserError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  file << model_to_json(graph).dump(2) << '\n';
  file.close();
  if (!file) throw UserError(fmt::format("error while writing '{}'", path));
}

Graph load_model(const std::string& zoo_spec_or_path) {
  if (is_zoo_model(zoo_spec_or_path)) return build_zoo_model(zoo_spec_or_path);
  std::ifstream probe(zoo_spec_or_path);
  if (probe || zoo_spec_or_path.find('/') != std::string::npos ||
      zoo_spec_or_path.find(".json") != std::string::npos) {
    return load_model_file(zoo_spec_or_path);
  }
  return build_zoo_model(zoo_spec_or_path);  // throws "unknown model ... zoo models: ..."
}

}  // namespace burst::graph
