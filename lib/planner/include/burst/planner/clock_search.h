#pragma once
// Energy-aware clocks for a plan (docs/energy.md, "Clocks"), in the spirit of Perseus: the
// plan's ranks are grouped by the work they do (the layers and shard sizes they hold: a
// pipeline stage's ranks, a burst plan's ranks of one width), and each group's SM clock is
// lowered where its work is off the critical path, or where the energy it saves outweighs
// the idle power the longer step costs every device, with the step at most (1 + max
// slowdown) times the plan's at the maximum clocks.
//
// The plan's step is lowered once at the maximum clocks; each candidate is that step
// re-timed (timing::set_rank_clocks) with the one task timer and priced by
// timing::step_energy, so the search times exactly what the evaluator and the simulator
// time. Per group, in order of most idle time first: a binary search for the lowest clock
// that keeps the bound, then a search of the clocks between it and the maximum for the
// least energy (unimodal: energy falls with the clock until a task's own energy turns back
// up, or the step grows). One pass over the groups. No libtorch.
#include <optional>
#include <vector>

#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/timing/evaluate.h"

#include "burst/planner/search_options.h"

namespace burst::planner {

// SearchOptions: the step priced (its program options and power cap) and how it is timed.
struct ClockSearchOptions : SearchOptions {
  double max_slowdown = 0.01;        // the step may grow to (1 + this) x its time at full clocks
  // Or to this many seconds, when set (an energy objective over several plans bounds every
  // one by the fastest's time); a plan already slower keeps its full clocks.
  std::optional<double> time_bound_s;
  double clock_step = 0.025;         // clocks tried: the maximum less multiples of this fraction
};

struct ClockChoice {
  plan::Plan plan;        // the input plan with rank_clocks_mhz set (empty when all stay at the maximum)
  double full_clock_time_s = 0;    // the step at the maximum clocks
  double full_clock_energy_j = 0;
  double time_s = 0;               // with the chosen clocks
  double energy_j = 0;
  int groups = 0;                  // clock groups
  int evaluations = 0;             // steps timed
};

// Chooses per-group clocks for `plan` (valid for the context). UserError when a device
// kind has no power model, or for a negative or non-finite max_slowdown.
ClockChoice choose_clocks(const plan::Plan& plan, const plan::PlanContext& context, const ClockSearchOptions& options);

// One point of the time-energy trade-off.
struct FrontierPoint {
  double time_s = 0;
  double energy_j = 0;
  double max_slowdown = 0;             // the bound it was searched under (< 0: a uniform clock)
  std::vector<double> rank_clocks_mhz;  // empty: all at the maximum
};

// The time-energy frontier of the plan's clock choices: choose_clocks under slowdown bounds
// from 0 to unbounded, and every uniform clock, keeping the points no other point beats in
// both time and energy; ascending time (its first point is the fastest, its last the
// least energy).
std::vector<FrontierPoint> clock_frontier(const plan::Plan& plan, const plan::PlanContext& context,
                                          const ClockSearchOptions& options);

// The slowdown bounds clock_frontier searches under (the last, a large number, is
// "unbounded").
std::vector<double> frontier_slowdowns();

}  // namespace burst::planner
