#include "burst/cost/profile_cost_model.h"

#include <algorithm>
#include <cmath>

#include "burst/graph/model_json.h"

namespace burst::cost {

std::optional<Seconds> interpolate_log_log(const std::vector<std::pair<int64_t, Seconds>>& points,
                                           int64_t batch) {
  if (points.empty() || batch < points.front().first) return std::nullopt;
  const auto& last = points.back();
  if (batch >= last.first) {
    // Saturated device: time proportional to the batch beyond the last measurement.
    return last.second * (static_cast<double>(batch) / static_cast<double>(last.first));
  }
  // First point with a batch above `batch`; its predecessor is at or below.
  const auto upper = std::upper_bound(points.begin(), points.end(), batch,
                                      [](int64_t b, const auto& point) { return b < point.first; });
  const auto& [b1, t1] = *upper;
  const auto& [b0, t0] = *(upper - 1);
  if (b0 == batch) return t0;
  if (t0.s() <= 0 || t1.s() <= 0) {  // log undefined: fall back to linear interpolation
    const double w = static_cast<double>(batch - b0) / static_cast<double>(b1 - b0);
    return t0 + (t1 - t0) * w;
  }
  const double w = (std::log(static_cast<double>(batch)) - std::log(static_cast<double>(b0))) /
                   (std::log(static_cast<double>(b1)) - std::log(static_cast<double>(b0)));
  const Seconds interpolated(std::exp(std::log(t0.s()) + w * (std::log(t1.s()) - std::log(t0.s()))));
  return std::clamp(interpolated, t0, t1);  // exp(log(x)) may miss x by an ulp
}

ProfileCostModel::ProfileCostModel(Profile profile) : profile_(std::move(profile)) {
  profile_.index();
  // Running maxima over ascending batches make both curves non-decreasing.
  for (const ProfileEntry& entry : profile_.entries) {
    const std::string key = profile_key(entry.signature, entry.split);
    if (curves_.count(key) != 0) continue;
    Curves& curves = curves_[key];
    curves.measured = profile_.find(entry.signature, entry.split);
    Seconds forward_max, backward_max, split_forward_max, split_backward_max;
    for (const auto& [b, measured] : *curves.measured) {
      forward_max = std::max(forward_max, measured->forward);
      backward_max = std::max(backward_max, measured->backward);
      curves.forward.emplace_back(b, forward_max);
      curves.backward.emplace_back(b, backward_max);
      if (measured->split_forward && measured->split_backward) {
        split_forward_max = std::max(split_forward_max, *measured->split_forward);
        split_backward_max = std::max(split_backward_max, *measured->split_backward);
        curves.split_forward.emplace_back(b, split_forward_max);
        curves.split_backward.emplace_back(b, split_backward_max);
      }
    }
  }
}

std::optional<LayerEstimate> ProfileCostModel::estimate(const graph::Graph& graph,
                                                        graph::LayerId id, int64_t batch) const {
  return estimate_signature(graph::layer_signature(graph, id), batch);
}

std::optional<Seconds> ProfileCostModel::update(const graph::Graph& graph, graph::LayerId id) const {
  const auto* batches = profile_.find(graph::layer_signature(graph, id));
  if (batches == nullptr) return std::nullopt;
  for (const auto& [batch, entry] : *batches) {
    if (entry->update) return entry->update;
  }
  return std::nullopt;
}

std::optional<LayerEstimate> ProfileCostModel::estimate_split(const graph::Graph& graph, graph::LayerId id,
                                                              int64_t batch) const {
  return from_curves(graph::layer_signature(graph, id), batch, true);
}

std::optional<LayerEstimate> ProfileCostModel::estimate_tensor(const graph::Graph& graph, graph::LayerId id,
                                                               int64_t batch, const TensorSplit& split) const {
  if (split.divides_tokens()) return std::nullopt;  // measured on whole samples only
  if (!split.splits() || !divides_weights(split.kind)) return CostModel::estimate_tensor(graph, id, batch, split);
  return from_curves(profile_key(graph::layer_signature(graph, id), split), batch, false);
}

std::optional<LayerEstimate> ProfileCostModel::estimate_signature(const std::string& signature,
                                                                  int64_t batch) const {
  return from_curves(signature, batch, false);
}

std::optional<LayerEstimate> ProfileCostModel::from_curves(const std::string& key, int64_t batch,
                                                           bool split) const {
  const auto found = curves_.find(key);
  if (found == curves_.end()) return std::nullopt;
  const Curves& curves = found->second;
  const auto f = interpolate_log_log(split ? curves.split_forward : curves.forward, batch);
  const auto g = interpolate_log_log(split ? curves.split_backward : curves.backward, batch);
  if (!f || !g) return std::nullopt;
  const CostSource source = curves.measured->count(batch) ? CostSource::Measured : CostSource::Interpolated;
  return LayerEstimate{{*f, *g}, source};
}

}  // namespace burst::cost
