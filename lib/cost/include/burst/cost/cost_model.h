#pragma once
// The cost-model interface: how long a layer takes at a per-device batch on a device.
#include <cstdint>
#include <memory>
#include <string>

#include "burst/cost/tensor_split.h"
#include "burst/graph/graph.h"
#include "burst/util/units.h"

namespace burst::cost {

// Time of one layer for one per-device batch. backward = input gradient + weight gradient.
struct LayerTime {
  Seconds forward;
  Seconds backward;
  Seconds total() const { return forward + backward; }
};
inline LayerTime operator+(const LayerTime& a, const LayerTime& b) {
  return LayerTime{a.forward + b.forward, a.backward + b.backward};
}
inline LayerTime operator*(const LayerTime& a, double factor) { return LayerTime{a.forward * factor, a.backward * factor}; }

// Where a time came from, for reports ("measured" profile data or the "analytic" model).
enum class CostSource { Measured, Interpolated, Analytic };
const char* cost_source_name(CostSource source);

struct LayerEstimate {
  LayerTime time;
  CostSource source = CostSource::Measured;
};

class CostModel {
 public:
  virtual ~CostModel() = default;

  // The device kind these times describe ("cpu", "a100", "h100-sxm", ...).
  virtual std::string device() const = 0;

  // Time of layer `id` of `graph` at per-device batch `batch` >= 1. Returns std::nullopt
  // when this model has no data for the layer (a fallback may then answer). Times are
  // non-decreasing in `batch` for a fixed layer.
  virtual std::optional<LayerEstimate> estimate(const graph::Graph& graph, graph::LayerId id,
                                                int64_t batch) const = 0;

  // estimate(), or a UserError naming the layer and its signature when there is no data.
  LayerEstimate require(const graph::Graph& graph, graph::LayerId id, int64_t batch) const;

  // Time of one shard of layer `id` when the layer runs split over several ranks and the
  // runtime then runs it differently from one device: BatchNorm2d with statistics
  // synchronised over the ranks (communication excluded). std::nullopt when this model has no
  // such data; callers then use estimate().
  virtual std::optional<LayerEstimate> estimate_split(const graph::Graph& graph, graph::LayerId id,
                                                      int64_t batch) const {
    (void)graph;
    (void)id;
    (void)batch;
    return std::nullopt;
  }

  // Time of one part of layer `id` under a tensor split (tensor_split.h) at per-device batch
  // `batch`: the part's own work (a k-way column split computes a k-th of the output
  // features, reading the whole input). The collectives are not included. std::nullopt when
  // this model has no such data. The default: estimate() for samples and replicate (each
  // part runs the whole layer on its samples), nothing for the kinds that divide the work.
  virtual std::optional<LayerEstimate> estimate_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                                       const TensorSplit& split) const {
    const bool whole = split.kind == SplitKind::Samples || split.kind == SplitKind::Replicate;
    if (whole && !split.divides_tokens()) return estimate(graph, id, batch);
    return std::nullopt;
  }
  // estimate_tensor(), or a UserError naming the layer and the split when there is no data.
  LayerEstimate require_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                               const TensorSplit& split) const;

  // Time of the optimizer's update of layer `id`'s parameters on one device, once per step
  // on every rank that holds the layer (burst train's default optimizer, SGD without
  // momentum); independent of the batch. std::nullopt when this model has no data for it.
  virtual std::optional<Seconds> update(const graph::Graph& graph, graph::LayerId id) const {
    (void)graph;
    (void)id;
    return std::nullopt;
  }
  // The share of the layer's time at `batch` (at the device's maximum clock) that is
  // compute-bound and so scales with the SM clock, in [0, 1] (power.h); the rest is
  // memory-bound. By default 1: a model that cannot tell takes all of it as compute.
  virtual double compute_bound_share(const graph::Graph& graph, graph::LayerId id, int64_t batch) const {
    (void)graph;
    (void)id;
    (void)batch;
    return 1.0;
  }

  // update(), or 0 when no model knows: such a model's predictions leave the update out.
  Seconds update_or_zero(const graph::Graph& graph, graph::LayerId id) const {
    return update(graph, id).value_or(Seconds(0));
  }
};

}  // namespace burst::cost
