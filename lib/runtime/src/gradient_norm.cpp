#include "gradient_norm.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "gradient_buckets.h"
#include "state_sources.h"

namespace burst::runtime::detail {
namespace {

// The sum of `gradient`'s squared elements, in float64, added to `total` (on its device:
// one read of the sum per step, not one per parameter).
void add_squares(torch::Tensor& total, const torch::Tensor& gradient) {
  const torch::Tensor squares = gradient.to(torch::kFloat64).square().sum();
  total = total.defined() ? total + squares : squares;
}

// Whether this rank counts its whole gradient of layer `id`'s parameter `name`: it is one of
// the layer's state sources, and the first one unless the parameter is sliced among them.
bool counts_whole(const ExecutorState& s, graph::LayerId id, const std::string& name) {
  const std::vector<int> sources = state_sources(s.plan, id);
  const auto mine = std::find(sources.begin(), sources.end(), s.rank);
  return mine != sources.end() && (mine == sources.begin() || state_slicing(s.plan, id, name).sliced);
}

// Under ZeRO: whether the shards of this rank's group count the parameter. Each part of a
// layer reduces in its own group, so a part's copy of an unsliced parameter counts in part
// 0's (a rank that only holds a tied embedding's copy for its head is part 0).
bool counts_in_shards(const ExecutorState& s, graph::LayerId id, const std::string& name) {
  return s.parts[static_cast<size_t>(id)] == 0 || state_slicing(s.plan, id, name).sliced;
}

struct NamedParameter {
  graph::LayerId layer;
  std::string name;
};

}  // namespace

double local_squared_gradient_norm(const ExecutorState& s) {
  torch::Tensor total;
  std::unordered_set<const void*> seen;  // a tied head's weight is its embedding's tensor
  std::unordered_map<const void*, NamedParameter> sharded;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(s.modules.size()); ++id) {
    const auto& module = s.modules[static_cast<size_t>(id)];
    if (!module) continue;
    for (const auto& item : module->module().named_parameters()) {
      const torch::Tensor& parameter = item.value();
      if (!seen.insert(parameter.unsafeGetTensorImpl()).second) continue;
      if (s.buckets->shards(parameter)) {
        sharded.emplace(parameter.unsafeGetTensorImpl(), NamedParameter{id, item.key()});
        continue;
      }
      // Unused parameters have no gradient: zeros.
      if (parameter.grad().defined() && counts_whole(s, id, item.key())) add_squares(total, parameter.grad());
    }
  }
  s.buckets->for_each_shard_slice([&](const torch::Tensor& parameter, const torch::Tensor& gradient) {
    const NamedParameter& owner = sharded.at(parameter.unsafeGetTensorImpl());
    if (counts_in_shards(s, owner.layer, owner.name)) add_squares(total, gradient);
  });
  return total.defined() ? total.item<double>() : 0.0;
}

void scale_gradients(torch::optim::Optimizer& optimizer, double factor) {
  std::unordered_set<const void*> scaled;
  for (auto& group : optimizer.param_groups()) {
    for (torch::Tensor& parameter : group.params()) {
      if (!parameter.grad().defined() || !scaled.insert(parameter.unsafeGetTensorImpl()).second) continue;
      parameter.mutable_grad().mul_(factor);
    }
  }
}

double clip_factor(double clip, double norm) { return std::min(1.0, clip / (norm + 1e-6)); }

}  // namespace burst::runtime::detail
