#pragma once
// Stage boundaries that balance a pipeline (the pipeline planner's and the 3-D plans'):
// per-layer times as prefix sums, and the linear partition of them at allowed cuts.
#include <algorithm>
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

// For every stage count 1..max_stages, the boundaries (among `cuts`) that minimise the
// slowest stage: best[p] = {slowest stage time, stage starts}. The linear partition
// problem: slowest[k][i], the best slowest stage of k stages covering layers up to
// positions[i], is min over j < i of max(slowest[k-1][j], time(positions[j], positions[i])).
class Partitions {
 public:
  Partitions(const StageTimes& times, const std::vector<graph::LayerId>& cuts, graph::LayerId layers, int max_stages) {
    std::vector<graph::LayerId> positions{0};
    positions.insert(positions.end(), cuts.begin(), cuts.end());
    positions.push_back(layers);
    const size_t n = positions.size();
    const auto stages = static_cast<size_t>(std::min<int64_t>(max_stages, static_cast<int64_t>(n) - 1));
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> slowest(stages + 1, std::vector<double>(n, inf));
    std::vector<std::vector<size_t>> from(stages + 1, std::vector<size_t>(n, 0));
    for (size_t i = 1; i < n; ++i) slowest[1][i] = times.between(0, positions[i]);
    for (size_t k = 2; k <= stages; ++k) {
      for (size_t i = k; i < n; ++i) {
        for (size_t j = k - 1; j < i; ++j) {
          const double value = std::max(slowest[k - 1][j], times.between(positions[j], positions[i]));
          if (value < slowest[k][i]) {
            slowest[k][i] = value;
            from[k][i] = j;
          }
        }
      }
    }
    best_.resize(stages + 1);
    for (size_t k = 1; k <= stages; ++k) {
      std::vector<graph::LayerId> starts;
      for (size_t i = n - 1, level = k; level > 1; --level) {
        i = from[level][i];
        starts.push_back(positions[i]);
      }
      std::reverse(starts.begin(), starts.end());
      best_[k] = {slowest[k][n - 1], std::move(starts)};
    }
  }
  int max_stages() const { return static_cast<int>(best_.size()) - 1; }
  const std::pair<double, std::vector<graph::LayerId>>& best(int stages) const {
    return best_[static_cast<size_t>(stages)];
  }

 private:
  std::vector<std::pair<double, std::vector<graph::LayerId>>> best_;
};

}  // namespace burst::planner
