#pragma once
// Stage boundaries that balance a pipeline (the pipeline planner's and the 3-D plans'):
// per-layer times as prefix sums, and the linear partition of them at allowed cuts.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "burst/graph/graph.h"

namespace burst::planner {

// Per-layer times (seconds) as prefix sums over layers.
class StageTimes {
 public:
  explicit StageTimes(const std::vector<double>& per_layer) : prefix_(per_layer.size() + 1, 0.0) {
    for (size_t id = 0; id < per_layer.size(); ++id) prefix_[id + 1] = prefix_[id] + per_layer[id];
  }
  // Layers [begin, end).
  double between(graph::LayerId begin, graph::LayerId end) const {
    return prefix_[static_cast<size_t>(end)] - prefix_[static_cast<size_t>(begin)];
  }

 private:
  std::vector<double> prefix_;
};

// The linear partition problem over the layer positions 0, cuts..., layers:
// slowest[k][i], the best slowest stage of stages 1..k covering layers up to positions[i],
// is min over j < i of max(slowest[k-1][j], stage_time(k, positions[j], positions[i])), with
// slowest[0][0] = 0. `stage_time(k, begin, end)` is stage k's time for layers [begin, end).
// best(k): {slowest stage time, stage starts} of k stages, for k = 1..stages.
class LinearPartition {
 public:
  template <typename StageTime>
  LinearPartition(const std::vector<graph::LayerId>& cuts, graph::LayerId layers, int max_stages,
                  const StageTime& stage_time) {
    positions_.push_back(0);
    positions_.insert(positions_.end(), cuts.begin(), cuts.end());
    positions_.push_back(layers);
    const size_t n = positions_.size();
    const auto stages = static_cast<size_t>(std::min<int64_t>(max_stages, static_cast<int64_t>(n) - 1));
    slowest_.assign(stages + 1, std::vector<double>(n, std::numeric_limits<double>::infinity()));
    from_.assign(stages + 1, std::vector<size_t>(n, 0));
    slowest_[0][0] = 0;
    for (size_t k = 1; k <= stages; ++k) {
      for (size_t i = k; i < n; ++i) {
        for (size_t j = k - 1; j < i; ++j) {
          const double value = std::max(slowest_[k - 1][j], stage_time(k, positions_[j], positions_[i]));
          if (value < slowest_[k][i]) {
            slowest_[k][i] = value;
            from_[k][i] = j;
          }
        }
      }
    }
  }
  int max_stages() const { return static_cast<int>(slowest_.size()) - 1; }
  std::pair<double, std::vector<graph::LayerId>> best(int stages) const {
    std::vector<graph::LayerId> starts;
    for (size_t i = positions_.size() - 1, level = static_cast<size_t>(stages); level > 1; --level) {
      i = from_[level][i];
      starts.push_back(positions_[i]);
    }
    std::reverse(starts.begin(), starts.end());
    return {slowest_[static_cast<size_t>(stages)].back(), std::move(starts)};
  }

 private:
  std::vector<graph::LayerId> positions_;
  std::vector<std::vector<double>> slowest_;
  std::vector<std::vector<size_t>> from_;
};

// For every stage count 1..max_stages, the boundaries (among `cuts`) that minimise the
// slowest stage when every stage takes `times`: best[p] = {slowest stage time, stage starts}.
class Partitions {
 public:
  Partitions(const StageTimes& times, const std::vector<graph::LayerId>& cuts, graph::LayerId layers, int max_stages) {
    const LinearPartition partition(cuts, layers, max_stages, [&](size_t, graph::LayerId begin, graph::LayerId end) {
      return times.between(begin, end);
    });
    best_.resize(static_cast<size_t>(partition.max_stages()) + 1);
    for (int k = 1; k <= partition.max_stages(); ++k) best_[static_cast<size_t>(k)] = partition.best(k);
  }
  int max_stages() const { return static_cast<int>(best_.size()) - 1; }
  const std::pair<double, std::vector<graph::LayerId>>& best(int stages) const {
    return best_[static_cast<size_t>(stages)];
  }

 private:
  std::vector<std::pair<double, std::vector<graph::LayerId>>> best_;
};

}  // namespace burst::planner
