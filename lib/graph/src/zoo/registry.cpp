#include <set>
#include <sstream>

#include <fmt/format.h>

#include "burst/graph/zoo.h"
#include "burst/util/error.h"
#include "zoo/zoo_models.h"

namespace burst::graph {
namespace {

std::vector<ZooEntry> collect_entries() {
  std::vector<ZooEntry> all;
  for (auto&& part : {zoo::vgg_entries(), zoo::resnet_entries(), zoo::inception_entries(),
                      zoo::vit_entries(), zoo::gpt2_entries(), zoo::llama_entries(), zoo::fmnist_cnn_entries()}) {
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::string known_names() {
  std::string names;
  for (const auto& entry : zoo_entries()) names += (names.empty() ? "" : ", ") + entry.name;
  return names;
}

const ZooEntry* find_entry(const std::string& name) {
  for (const auto& entry : zoo_entries()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// "a=1,b=2" -> {a: 1, b: 2}, checked against the entry's declared options.
ZooOptions parse_options(const ZooEntry& entry, const std::string& text) {
  ZooOptions options;
  for (const auto& option : entry.options) options[option.key] = option.default_value;
  if (text.empty()) return options;
  std::set<std::string> seen;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const auto equals = item.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw UserError(fmt::format("model '{}': option '{}' is not of the form key=value",
                                  entry.name, item));
    }
    const std::string key = item.substr(0, equals);
    if (options.count(key) == 0) {
      std::string accepted;
      for (const auto& option : entry.options) accepted += (accepted.empty() ? "" : ", ") + option.key;
      throw UserError(fmt::format("model '{}' has no option '{}' (accepted: {})", entry.name, key,
                                  accepted.empty() ? "none" : accepted));
    }
    if (!seen.insert(key).second) {
      throw UserError(fmt::format("model '{}': option '{}' given twice", entry.name, key));
    }
    options[key] = item.substr(equals + 1);
  }
  return options;
}

}  // namespace

const std::vector<ZooEntry>& zoo_entries() {
  static const std::vector<ZooEntry> entries = collect_entries();
  return entries;
}

bool is_zoo_model(const std::string& spec) {
  return find_entry(spec.substr(0, spec.find(':'))) != nullptr;
}

Graph build_zoo_model(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const ZooEntry* entry = find_entry(name);
  if (entry == nullptr) {
    throw UserError(fmt::format("unknown model '{}' (zoo models: {}; or give a model file path)",
                                name, known_names()));
  }
  const std::string option_text = colon == std::string::npos ? "" : spec.substr(colon + 1);
  return entry->build(parse_options(*entry, option_text));
}

int64_t option_int(const ZooOptions& options, const std::string& model, const std::string& key,
                   int64_t max_value, int64_t min_value) {
  const std::string& text = options.at(key);
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < min_value) {
    throw UserError(fmt::format("model '{}': option {}={} is not {}", model, key, text,
                                min_value == 0 ? "a whole number (0 or more)" : "a positive integer"));
  }
  if (value > max_value) {
    throw UserError(fmt::format("model '{}': option {}={} exceeds the limit {}", model, key, text,
                                max_value));
  }
  return value;
}

double option_number(const ZooOptions& options, const std::string& model, const std::string& key) {
  const std::string& text = options.at(key);
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !(value >= 0) || !(value < 1e12)) {
    throw UserError(fmt::format("model '{}': option {}={} is not a number of 0 or more", model, key, text));
  }
  return value;
}

bool option_bool(const ZooOptions& options, const std::string& model, const std::string& key) {
  const std::string& text = options.at(key);
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw UserError(fmt::format("model '{}': option {}={} is not true/false", model, key, text));
}

}  // namespace burst::graph
