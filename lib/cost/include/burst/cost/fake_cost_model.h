#pragma once
// A cost model for tests: times stated by hand per layer name, so a test can derive its
// expected answer on paper. time(batch) = fixed + per_sample x batch, for forward and
// backward separately. Layers not in the map have no estimate.
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "burst/cost/cost_model.h"
#include "burst/cost/power.h"

namespace burst::cost {

struct LinearTime {
  Seconds fixed;       // per call, independent of the batch (kernel launch, weights)
  Seconds per_sample;  // added for every sample of the per-device batch
  Seconds at(int64_t batch) const { return fixed + per_sample * static_cast<double>(batch); }
};

struct FakeLayerCost {
  LinearTime forward;
  LinearTime backward;
};

class FakeCostModel : public CostModel {
 public:
  // `update_by_layer_name`: the optimizer's update of a layer's parameters, once per step;
  // layers not in it have no update time (none is charged). `split_by_layer_name`: a shard's
  // time when the layer is split and runs differently (estimate_split).
  FakeCostModel(std::string device, std::map<std::string, FakeLayerCost> by_layer_name,
                std::map<std::string, Seconds> update_by_layer_name = {},
                std::map<std::string, FakeLayerCost> split_by_layer_name = {})
      : device_(std::move(device)),
        by_layer_name_(std::move(by_layer_name)),
        update_by_layer_name_(std::move(update_by_layer_name)),
        split_by_layer_name_(std::move(split_by_layer_name)) {}

  std::string device() const override { return device_; }
  std::optional<LayerEstimate> estimate(const graph::Graph& graph, graph::LayerId id,
                                        int64_t batch) const override {
    const auto found = by_layer_name_.find(graph.layer(id).name);
    if (found == by_layer_name_.end()) return std::nullopt;
    return LayerEstimate{{found->second.forward.at(batch), found->second.backward.at(batch)},
                         CostSource::Measured};
  }
  std::optional<LayerEstimate> estimate_split(const graph::Graph& graph, graph::LayerId id,
                                              int64_t batch) const override {
    const auto found = split_by_layer_name_.find(graph.layer(id).name);
    if (found == split_by_layer_name_.end()) return std::nullopt;
    return LayerEstimate{{found->second.forward.at(batch), found->second.backward.at(batch)},
                         CostSource::Measured};
  }
  // Times stated for (layer name, parts, context) by with_tensor; for the kinds that do not
  // divide weights (samples, replicate, features) without one and without context, estimate().
  std::optional<LayerEstimate> estimate_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                               const TensorSplit& split) const override {
    const auto key = std::make_tuple(graph.layer(id).name, split.parts, split.context);
    const bool stated = tensor_by_layer_name_.count(key) > 0;
    if (!divides_weights(split.kind) && !split.divides_tokens() && !stated) return estimate(graph, id, batch);
    const auto found = tensor_by_layer_name_.find(key);
    if (found == tensor_by_layer_name_.end()) return std::nullopt;
    return LayerEstimate{{found->second.forward.at(batch), found->second.backward.at(batch)}, CostSource::Measured};
  }
  // A part's time of layer `name` split `parts` ways (any divided kind), on its 1/`context`
  // of the tokens.
  FakeCostModel& with_tensor(const std::string& name, int32_t parts, FakeLayerCost cost, int32_t context = 1) {
    tensor_by_layer_name_[std::make_tuple(name, parts, context)] = cost;
    return *this;
  }
  std::optional<Seconds> update(const graph::Graph& graph, graph::LayerId id) const override {
    const auto found = update_by_layer_name_.find(graph.layer(id).name);
    if (found == update_by_layer_name_.end()) return std::nullopt;
    return found->second;
  }

 private:
  std::string device_;
  std::map<std::string, FakeLayerCost> by_layer_name_;
  std::map<std::string, Seconds> update_by_layer_name_;
  std::map<std::string, FakeLayerCost> split_by_layer_name_;
  std::map<std::tuple<std::string, int32_t, int32_t>, FakeLayerCost> tensor_by_layer_name_;
};

// A power model with round numbers for tests to derive energies by hand: idle 100 W,
// maximum 500 W, clocks 200..1000 MHz, m = 0.5, k = 0.25, gamma = 2, u = 0 (power.h), so
// compute-bound work at clock ratio r draws 100 + 400 r^2 W and communication 200 W.
inline PowerSpec round_power_spec() {
  PowerSpec spec;
  spec.kind = "test";
  spec.idle_w = 100;
  spec.max_w = 500;
  spec.min_clock_mhz = 200;
  spec.max_clock_mhz = 1000;
  spec.memory_bound_share = 0.5;
  spec.communication_share = 0.25;
  spec.clock_exponent = 2;
  spec.clock_independent_share = 0;
  return spec;
}

}  // namespace burst::cost
