#include "state_sources.h"

namespace burst::runtime::detail {

bool divided(const plan::Plan& plan, graph::LayerId id) {
  const cost::TensorSplit& split = plan.layers[static_cast<size_t>(id)].split;
  return split.splits() && cost::divides_weights(split.kind);
}

std::vector<int> state_sources(const plan::Plan& plan, graph::LayerId id) {
  const plan::LayerPlacement& placement = plan.layers[static_cast<size_t>(id)];
  const size_t count = divided(plan, id) ? static_cast<size_t>(placement.split.parts) : 1;
  std::vector<int> sources;
  for (size_t p = 0; p < count; ++p) sources.push_back(placement.shards[p].rank);
  return sources;
}

layers::ParameterSlicing state_slicing(const plan::Plan& plan, graph::LayerId id, const std::string& key) {
  if (!divided(plan, id)) return {};
  const size_t colon = key.find(':');
  if (colon != std::string::npos && key.substr(colon + 1) == "step") return {};
  return layers::parameter_slicing(plan.layers[static_cast<size_t>(id)].split.kind, key.substr(0, colon));
}

}  // namespace burst::runtime::detail
