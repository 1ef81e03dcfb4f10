#pragma once
// The model zoo: real architectures built in C++, with options.
//
// A model spec is "NAME" or "NAME:key=value,key=value", e.g. "resnet50:image_size=160",
// "gpt2:layers=24,width=1024,heads=16". Unknown names, unknown keys and bad values
// throw UserError listing what is accepted.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "burst/graph/graph.h"

namespace burst::graph {

// Option values as given ("224", "true"); each model parses what it accepts.
using ZooOptions = std::map<std::string, std::string>;

struct ZooOption {
  std::string key;
  std::string default_value;
  std::string help;
};

struct ZooEntry {
  std::string name;
  std::string description;
  std::vector<ZooOption> options;
  // Builds the model; `options` holds only keys from `options` above, defaults filled in.
  std::function<Graph(const ZooOptions& options)> build;
};

// All zoo models in display order.
const std::vector<ZooEntry>& zoo_entries();

// Whether `spec`'s name part names a zoo model.
bool is_zoo_model(const std::string& spec);

// Builds a model from a spec ("resnet50" or "resnet50:classes=10,image_size=160").
Graph build_zoo_model(const std::string& spec);

// Bounds on zoo options, so no option can overflow a builder's arithmetic or make a model
// too large to hold: any integer option <= 2^20, block counts (layers) <= 1024.
inline constexpr int64_t kMaxZooOptionValue = int64_t{1} << 20;
inline constexpr int64_t kMaxZooBlocks = 1024;

// Option parsing helpers for zoo builders; errors name the model and the key.
// option_int accepts integers in [min_value, max_value]; option_number finite numbers >= 0.
int64_t option_int(const ZooOptions& options, const std::string& model, const std::string& key,
                   int64_t max_value = kMaxZooOptionValue, int64_t min_value = 1);
double option_number(const ZooOptions& options, const std::string& model, const std::string& key);
bool option_bool(const ZooOptions& options, const std::string& model, const std::string& key);

}  // namespace burst::graph
