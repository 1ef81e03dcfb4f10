#include "burst/cost/cost_model.h"

#include <fmt/format.h>

#include "burst/graph/model_json.h"
#include "burst/util/error.h"

namespace burst::cost {

const char* cost_source_name(CostSource source) {
  switch (source) {
    case CostSource::Measured: return "measured";
    case CostSource::Interpolated: return "interpolated";
    case CostSource::Analytic: return "analytic";
  }
  BURST_ASSERT(false, "unknown cost source");
}

LayerEstimate CostModel::require(const graph::Graph& graph, graph::LayerId id, int64_t batch) const {
  BURST_ASSERT(batch >= 1, "per-device batch must be positive");
  if (auto found = estimate(graph, id, batch)) return *found;
  const auto& layer = graph.layer(id);
  throw UserError(fmt::format(
      "no {} cost data for layer '{}' ({}) of model '{}' at batch {} (signature {}); profile it "
      "with `burst profile` or use a device with an analytic model",
      device(), layer.name, graph::op_name(layer.op()), graph.name(), batch,
      graph::layer_signature(graph, id)));
}

LayerEstimate CostModel::require_tensor(const graph::Graph& graph, graph::LayerId id, int64_t batch,
                                       const TensorSplit& split) const {
  if (!split.splits() && !split.divides_tokens()) return require(graph, id, batch);
  BURST_ASSERT(batch >= 1, "per-device batch must be positive");
  if (auto found = estimate_tensor(graph, id, batch, split)) return *found;
  const auto& layer = graph.layer(id);
  throw UserError(fmt::format("no {} cost data for layer '{}' ({}) of model '{}' under a {}-way {} split{} at batch {}; "
                              "use a device with an analytic model",
                              device(), layer.name, graph::op_name(layer.op()), graph.name(), split.parts,
                              split_kind_name(split.kind),
                              split.divides_tokens() ? fmt::format(" over {} context ranks", split.context) : "",
                              batch));
}

}  // namespace burst::cost
