#include "burst/graph/graph.h"

#include <algorithm>
#include <functional>
#include <queue>

#include <fmt/format.h>

#include "burst/util/checked_math.h"
#include "burst/util/error.h"
#include "shape_inference.h"

namespace burst::graph {
namespace {

// Names appear in tables and one-line errors: no newlines, escapes or other controls.
bool has_control_character(const std::string& text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

std::string describe(const LayerSpec& layer) {
  return fmt::format("layer '{}' ({})", layer.name, op_name(layer.op()));
}

void check_input_count(const LayerSpec& layer) {
  const size_t count = layer.inputs.size();
  switch (layer.op()) {
    case OpKind::Input:
      if (count != 0) throw UserError(describe(layer) + ": an input layer takes no inputs");
      return;
    case OpKind::Add:
    case OpKind::Concat:
      if (count < 2) {
        throw UserError(fmt::format("{}: needs at least 2 inputs, got {}", describe(layer), count));
      }
      return;
    case OpKind::Mul:
    case OpKind::Matmul:
      if (count != 2) {
        throw UserError(fmt::format("{}: needs exactly 2 inputs, got {}", describe(layer), count));
      }
      return;
    default:
      if (count != 1) {
        throw UserError(fmt::format("{}: needs exactly 1 input, got {}", describe(layer), count));
      }
  }
}

// Names the layers of one cycle among `unplaced` layers (each has an unplaced input),
// e.g. "a -> b -> c -> a", following each layer to its first unplaced input.
std::string cycle_path(const std::vector<std::vector<LayerId>>& inputs,
                       const std::vector<bool>& placed, const std::vector<LayerSpec>& layers) {
  LayerId current = 0;
  while (placed[current]) ++current;
  std::vector<int> seen_at(layers.size(), -1);
  std::vector<LayerId> walk;
  while (seen_at[current] < 0) {
    seen_at[current] = static_cast<int>(walk.size());
    walk.push_back(current);
    for (const LayerId input : inputs[current]) {
      if (!placed[input]) {
        current = input;
        break;
      }
    }
  }
  // walk[seen_at[current]..] is the cycle, in consumer -> producer order; print it in
  // data-flow order, starting from the layer that comes first in the file.
  std::vector<LayerId> cycle(walk.begin() + seen_at[current], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string text;
  for (const LayerId id : cycle) text += "'" + layers[id].name + "' -> ";
  return text + "'" + layers[cycle.front()].name + "'";
}

}  // namespace

// Long: one pass that checks names, resolves inputs, orders the
// layers and infers their shapes, each step relying on the ones before; its errors come in
// the order a model file is read.
Graph Graph::build(std::string name, std::vector<LayerSpec> specs) {
  if (has_control_character(name)) {
    throw UserError(fmt::format("model name '{}' contains a control character", name));
  }
  if (specs.empty()) throw UserError(fmt::format("model '{}' has no layers", name));
  const size_t count = specs.size();

  // Names: non-empty and unique.
  std::unordered_map<std::string, LayerId> file_index;
  for (size_t i = 0; i < count; ++i) {
    if (specs[i].name.empty()) {
      throw UserError(fmt::format("layer #{} ({}): name is empty", i, op_name(specs[i].op())));
    }
    if (has_control_character(specs[i].name)) {
      throw UserError(fmt::format("layer #{} ({}): name '{}' contains a control character", i,
                                  op_name(specs[i].op()), specs[i].name));
    }
    if (!file_index.emplace(specs[i].name, static_cast<LayerId>(i)).second) {
      throw UserError(fmt::format("layer #{}: name '{}' is used by another layer", i, specs[i].name));
    }
  }

  // Resolve inputs by name (file positions for now).
  std::vector<std::vector<LayerId>> file_inputs(count);
  bool has_input_layer = false;
  for (size_t i = 0; i < count; ++i) {
    check_input_count(specs[i]);
    has_input_layer = has_input_layer || specs[i].op() == OpKind::Input;
    for (const std::string& input : specs[i].inputs) {
      const auto found = file_index.find(input);
      if (found == file_index.end()) {
        throw UserError(fmt::format("{}: unknown input '{}'", describe(specs[i]), input));
      }
      if (found->second == static_cast<LayerId>(i)) {
        throw UserError(fmt::format("{}: consumes its own output (cycle)", describe(specs[i])));
      }
      file_inputs[i].push_back(found->second);
    }
  }
  if (!has_input_layer) throw UserError(fmt::format("model '{}' has no input layer", name));

  // Kahn's algorithm, always taking the lowest file position that is ready: file order is
  // kept wherever it is already topological.
  std::vector<std::vector<LayerId>> file_consumers(count);
  std::vector<size_t> waiting(count, 0);
  for (size_t i = 0; i < count; ++i) {
    waiting[i] = file_inputs[i].size();
    for (const LayerId input : file_inputs[i]) file_consumers[input].push_back(static_cast<LayerId>(i));
  }
  std::priority_queue<LayerId, std::vector<LayerId>, std::greater<>> ready;
  for (size_t i = 0; i < count; ++i) {
    if (waiting[i] == 0) ready.push(static_cast<LayerId>(i));
  }
  std::vector<LayerId> order;
  std::vector<bool> placed(count, false);
  while (!ready.empty()) {
    const LayerId next = ready.top();
    ready.pop();
    order.push_back(next);
    placed[next] = true;
    for (const LayerId consumer : file_consumers[next]) {
      if (--waiting[consumer] == 0) ready.push(consumer);
    }
  }
  if (order.size() != count) {
    throw UserError(fmt::format("model '{}' has a cycle: {}", name,
                                cycle_path(file_inputs, placed, specs)));
  }

  Graph graph;
  graph.name_ = std::move(name);
  std::vector<LayerId> position(count);
  for (size_t i = 0; i < count; ++i) position[order[i]] = static_cast<LayerId>(i);
  graph.layers_.reserve(count);
  graph.inputs_.resize(count);
  graph.consumers_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    graph.layers_.push_back(std::move(specs[order[i]]));
    for (const LayerId input : file_inputs[order[i]]) {
      graph.inputs_[i].push_back(position[input]);
      graph.consumers_[position[input]].push_back(static_cast<LayerId>(i));
    }
    graph.index_.emplace(graph.layers_[i].name, static_cast<LayerId>(i));
  }
  for (auto& consumers : graph.consumers_) {
    std::sort(consumers.begin(), consumers.end());
    consumers.erase(std::unique(consumers.begin(), consumers.end()), consumers.end());
  }

  // Shape inference in topological order, then tied weights, then totals.
  graph.infos_.reserve(count);
  std::vector<const LayerInfo*> input_infos;
  for (size_t i = 0; i < count; ++i) {
    input_infos.clear();
    for (const LayerId input : graph.inputs_[i]) input_infos.push_back(&graph.infos_[input]);
    graph.infos_.push_back(infer_layer(graph.layers_[i], input_infos));
  }
  graph.tied_embedding_.assign(count, -1);
  graph.tied_heads_.assign(count, {});
  for (size_t i = 0; i < count; ++i) {
    const LayerSpec& layer = graph.layers_[i];
    const auto* linear = std::get_if<LinearAttrs>(&layer.attrs);
    if (linear == nullptr || linear->tied_to.empty()) continue;
    const auto owner = graph.find(linear->tied_to);
    const auto* embedding =
        owner ? std::get_if<EmbeddingAttrs>(&graph.layers_[*owner].attrs) : nullptr;
    if (embedding == nullptr) {
      throw UserError(fmt::format("{}: tied_to '{}' is not an embedding layer", describe(layer),
                                  linear->tied_to));
    }
    const int64_t in_features = graph.infos_[graph.inputs_[i][0]].output_shape.back();
    if (embedding->num_embeddings != linear->out_features || embedding->dim != in_features) {
      throw UserError(fmt::format(
          "{}: weight [{}, {}] cannot be tied to embedding '{}' of [{}, {}]", describe(layer),
          linear->out_features, in_features, linear->tied_to, embedding->num_embeddings,
          embedding->dim));
    }
    graph.tied_embedding_[i] = *owner;
    graph.tied_heads_[static_cast<size_t>(*owner)].push_back(static_cast<LayerId>(i));
  }
  for (const LayerInfo& info : graph.infos_) {
    const auto params = checked_add(graph.total_params_, info.params);
    const auto active = checked_add(graph.total_active_params_, info.active_params);
    const auto flops = checked_add(graph.total_forward_flops_, info.forward_flops);
    const auto bytes = checked_add(graph.total_output_bytes_, info.output_bytes);
    if (!params || !active || !flops || !bytes) {
      throw UserError(fmt::format("model '{}': totals overflow int64", graph.name_));
    }
    graph.total_params_ = *params;
    graph.total_active_params_ = *active;
    graph.total_forward_flops_ = *flops;
    graph.total_output_bytes_ = *bytes;
  }
  return graph;
}

std::optional<LayerId> Graph::find(const std::string& layer_name) const {
  const auto found = index_.find(layer_name);
  if (found == index_.end()) return std::nullopt;
  return found->second;
}

std::optional<LayerId> Graph::tied_embedding(LayerId id) const {
  const LayerId embedding = tied_embedding_.at(static_cast<size_t>(id));
  if (embedding < 0) return std::nullopt;
  return embedding;
}

}  // namespace burst::graph
