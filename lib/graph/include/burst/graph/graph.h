#pragma once
// The model graph: a validated DAG of layers with inferred shapes and per-layer costs.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "burst/graph/layer.h"

namespace burst::graph {

// Layer indices are positions in Graph::layers(), a topological order.
using LayerId = int32_t;

class Graph {
 public:
  // Validates `layers` and infers every layer's shape, params, FLOPs and bytes.
  // Layers may come in any order; the graph keeps a stable topological order (file order
  // where it is already topological). Throws UserError naming the layer and the problem:
  // empty/duplicate name, unknown input, cycle, wrong input count, shape mismatch,
  // non-positive size, int64 overflow, bad tie.
  static Graph build(std::string name, std::vector<LayerSpec> layers);

  const std::string& name() const { return name_; }
  size_t size() const { return layers_.size(); }
  const std::vector<LayerSpec>& layers() const { return layers_; }
  const LayerSpec& layer(LayerId id) const { return layers_.at(static_cast<size_t>(id)); }
  const LayerInfo& info(LayerId id) const { return infos_.at(static_cast<size_t>(id)); }
  // Input layer ids of `id`, in the order of its LayerSpec::inputs.
  const std::vector<LayerId>& inputs(LayerId id) const { return inputs_.at(static_cast<size_t>(id)); }
  // Layers that consume `id`'s output, in increasing id order.
  const std::vector<LayerId>& consumers(LayerId id) const {
    return consumers_.at(static_cast<size_t>(id));
  }
  std::optional<LayerId> find(const std::string& layer_name) const;
  // Tied weights (LinearAttrs::tied_to, GPT-2's LM head), resolved once at build: the
  // embedding whose weight linear layer `id` uses (nullopt: none), and the linear layers
  // that use embedding `id`'s weight (usually none).
  std::optional<LayerId> tied_embedding(LayerId id) const;
  const std::vector<LayerId>& tied_heads(LayerId id) const { return tied_heads_.at(static_cast<size_t>(id)); }

  // Totals over all layers (per sample for FLOPs and bytes).
  int64_t total_params() const { return total_params_; }
  // The parameters one token's forward reads: total_params less the experts a mixture of
  // experts does not route it to.
  int64_t total_active_params() const { return total_active_params_; }
  int64_t total_forward_flops() const { return total_forward_flops_; }
  int64_t total_output_bytes() const { return total_output_bytes_; }

 private:
  Graph() = default;

  std::string name_;
  std::vector<LayerSpec> layers_;
  std::vector<LayerInfo> infos_;
  std::vector<std::vector<LayerId>> inputs_;
  std::vector<std::vector<LayerId>> consumers_;
  std::vector<LayerId> tied_embedding_;           // by layer; -1 when untied
  std::vector<std::vector<LayerId>> tied_heads_;  // by embedding
  std::unordered_map<std::string, LayerId> index_;
  int64_t total_params_ = 0;
  int64_t total_active_params_ = 0;
  int64_t total_forward_flops_ = 0;
  int64_t total_output_bytes_ = 0;
};

}  // namespace burst::graph
