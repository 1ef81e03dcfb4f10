#include "burst/program/recompute_units.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "burst/cost/memory.h"
#include "burst/plan/plan.h"

namespace burst::program {

Bytes kept_per_sample(const graph::Graph& graph, graph::LayerId id) {
  return Bytes(static_cast<double>(graph.info(id).output_bytes)) + cost::saved_inside_per_sample(graph, id);
}

namespace {

// A place a unit may start: its layer, the bytes the unit would keep there (the one
// crossing tensor) and the activations of the layers up to the next such place.
struct Interval {
  graph::LayerId start = 0;
  double checkpoint = 0;
  double activations = 0;
};

std::vector<Interval> intervals_of(const graph::Graph& graph) {
  const std::vector<plan::BoundaryCrossing> crossings = plan::boundary_crossings(graph);
  std::vector<Interval> intervals{Interval{0, 0, 0}};
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    const plan::BoundaryCrossing& crossing = crossings[static_cast<size_t>(id)];
    if (id > 0 && crossing.count == 1 && graph.layer(crossing.first).op() != graph::OpKind::Input) {
      intervals.push_back(Interval{id, static_cast<double>(graph.info(crossing.first).output_bytes), 0});
    }
    intervals.back().activations += kept_per_sample(graph, id).value();
  }
  return intervals;
}

// Greedy packing under a largest unit of `limit` bytes: the starts and their cost.
struct Packing {
  std::vector<graph::LayerId> starts;
  double cost = std::numeric_limits<double>::infinity();
};
Packing pack(const std::vector<Interval>& intervals, double limit) {
  Packing packing;
  double unit = 0, largest = 0, kept = 0;
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (i > 0 && unit + intervals[i].activations > limit) {
      packing.starts.push_back(intervals[i].start);
      kept += intervals[i].checkpoint;
      largest = std::max(largest, unit);
      unit = 0;
    }
    unit += intervals[i].activations;
  }
  packing.cost = kept + std::max(largest, unit);
  return packing;
}

}  // namespace

RecomputeUnits recompute_units(const graph::Graph& graph) {
  const std::vector<Interval> intervals = intervals_of(graph);
  double smallest = 0, total = 0;
  for (const Interval& interval : intervals) {
    smallest = std::max(smallest, interval.activations);
    total += interval.activations;
  }
  // Largest-unit limits on a geometric grid from the largest interval to the whole graph.
  Packing best;
  constexpr int kLimits = 64;
  for (int i = 0; i < kLimits && smallest > 0; ++i) {
    const double limit = smallest * std::pow(total / smallest, static_cast<double>(i) / (kLimits - 1));
    Packing packing = pack(intervals, limit * (1 + 1e-12));
    if (packing.cost < best.cost) best = std::move(packing);
  }
  RecomputeUnits units;
  units.starts = std::move(best.starts);
  units.unit_of.assign(graph.size(), 0);
  units.kept.assign(graph.size(), false);
  size_t next = 0;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    if (next < units.starts.size() && units.starts[next] == id) ++next;
    units.unit_of[static_cast<size_t>(id)] = static_cast<int32_t>(next);
  }
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(graph.size()); ++id) {
    // The data is kept: the first unit is recomputed from it.
    if (graph.layer(id).op() == graph::OpKind::Input) units.kept[static_cast<size_t>(id)] = true;
    for (const graph::LayerId input : graph.inputs(id)) {
      if (units.unit_of[static_cast<size_t>(input)] != units.unit_of[static_cast<size_t>(id)]) {
        units.kept[static_cast<size_t>(input)] = true;
      }
    }
  }
  return units;
}

}  // namespace burst::program
