#include "burst/planner/clock_search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "burst/timing/energy.h"
#include "burst/timing/step_tasks.h"
#include "burst/timing/task_timer.h"
#include "burst/util/error.h"

namespace burst::planner {
namespace {

// A time bound is kept when the step is within it to this relative tolerance (clocks that
// exactly fill a slack must not be refused for a rounding error).
constexpr double kBoundTolerance = 1e-9;

struct Priced {
  double time_s = 0;
  double energy_j = 0;
};

// The plan's step lowered once at the maximum clocks, re-timed for each candidate.
class ClockedStep {
 public:
  ClockedStep(const plan::Plan& plan, const plan::PlanContext& context, const timing::EvaluateOptions& evaluate)
      : context_(context) {
    plan::Plan full_clock = plan;
    full_clock.rank_clocks_mhz.clear();
    timing_.program = evaluate.program;
    step_ = timing::evaluation_tasks(full_clock, context, evaluate).step;
    for (const timing::Task& task : step_.tasks) base_.emplace_back(task.duration_s, task.clock);
  }

  Priced price(const std::vector<double>& ratios) {
    for (size_t i = 0; i < step_.tasks.size(); ++i) std::tie(step_.tasks[i].duration_s, step_.tasks[i].clock) = base_[i];
    timing::set_rank_clocks(step_, ratios, context_, timing_);
    ++evaluations_;
    const double time = timing::time_tasks(step_).step_end_s.front();
    last_energy_ = timing::step_energy(step_, time, context_);
    return Priced{time, last_energy_.total_j};
  }
  // The energy of the step priced last, per device.
  const timing::StepEnergy& last_energy() const { return last_energy_; }
  int evaluations() const { return evaluations_; }

 private:
  const plan::PlanContext& context_;
  timing::TimingOptions timing_;
  timing::StepTasks step_;
  std::vector<std::pair<double, float>> base_;  // per task: duration and clock at the maximum clocks
  timing::StepEnergy last_energy_;
  int evaluations_ = 0;
};

// Ranks that hold the same work on the same kind: (layer, shard size, part) lists. Ranks
// without shards belong to no group (their clock changes nothing).
std::vector<std::vector<int>> clock_groups(const plan::Plan& plan, const plan::PlanContext& context) {
  std::vector<std::vector<std::tuple<int64_t, int64_t, int32_t>>> work(static_cast<size_t>(plan.devices));
  for (size_t id = 0; id < plan.layers.size(); ++id) {
    const plan::LayerPlacement& placement = plan.layers[id];
    for (size_t i = 0; i < placement.shards.size(); ++i) {
      work[static_cast<size_t>(placement.shards[i].rank)].emplace_back(static_cast<int64_t>(id), placement.shards[i].samples.size(),
                                                                       placement.part_of(i));
    }
  }
  std::map<std::pair<int, std::vector<std::tuple<int64_t, int64_t, int32_t>>>, size_t> index;
  std::vector<std::vector<int>> groups;
  for (int rank = 0; rank < plan.devices; ++rank) {
    if (work[static_cast<size_t>(rank)].empty()) continue;
    const int kind = context.network.cluster().kind_index(rank);
    const auto [at, inserted] = index.emplace(std::make_pair(kind, std::move(work[static_cast<size_t>(rank)])), groups.size());
    if (inserted) groups.emplace_back();
    groups[at->second].push_back(rank);
  }
  return groups;
}

void check_search(const plan::PlanContext& context, const ClockSearchOptions& options) {
  if (!(options.max_slowdown >= 0) || !std::isfinite(options.max_slowdown)) {
    throw UserError(fmt::format("--max-slowdown must be a number >= 0 (0.01: at most 1% slower), got {}",
                                options.max_slowdown));
  }
  if (!(options.clock_step > 0 && options.clock_step < 1)) {
    throw UserError(fmt::format("the clock step must be in (0, 1), got {}", options.clock_step));
  }
  for (int kind = 0; kind < static_cast<int>(context.network.cluster().kinds().size()); ++kind) {
    if (context.power_of_kind(kind) == nullptr) {
      throw UserError(fmt::format("device kind '{}' has no power model, so its clocks cannot be chosen (power models: "
                                  "v100, a100, a100-80gb, h100-sxm, h200)",
                                  context.network.cluster().kinds()[static_cast<size_t>(kind)]));
    }
  }
}

// The search over one set of groups under one bound, from `ratios` (updated in place).
class GroupSearch {
 public:
  GroupSearch(ClockedStep& step, const plan::PlanContext& context, std::vector<std::vector<int>> groups, double bound_s,
              double clock_step)
      : step_(step), context_(context), groups_(std::move(groups)), bound_s_(bound_s), clock_step_(clock_step) {}

  // One pass over the groups (in the given order): a group lowered uses slack, so a group
  // searched before it cannot go lower afterwards (a second pass found nothing more on the
  // results rows of docs/energy.md). `current` is the price of `ratios` as given. Returns
  // the price of the final ratios.
  Priced run(std::vector<double>& ratios, Priced current) {
    for (const std::vector<int>& group : groups_) current = search_group(group, ratios, current);
    return current;
  }

 private:
  bool within(const Priced& priced) const { return priced.time_s <= bound_s_ * (1 + kBoundTolerance); }

  Priced search_group(const std::vector<int>& group, std::vector<double>& ratios, Priced current) {
    const std::vector<double> levels = cost::clock_ratio_steps(*context_.power_of(group.front()), clock_step_);
    std::map<size_t, Priced> known;
    const auto now = std::find(levels.begin(), levels.end(), ratios[static_cast<size_t>(group.front())]);
    if (now != levels.end()) known.emplace(static_cast<size_t>(now - levels.begin()), current);
    auto at = [&](size_t level) -> const Priced& {
      auto found = known.find(level);
      if (found != known.end()) return found->second;
      std::vector<double> trial = ratios;
      for (const int rank : group) trial[static_cast<size_t>(rank)] = levels[level];
      return known.emplace(level, step_.price(trial)).first->second;
    };
    // Lowest feasible level: time grows as the clock falls, so the feasible levels are a prefix.
    size_t low = 0, high = levels.size() - 1;
    if (!within(at(0))) return current;
    if (!within(at(1))) high = 0;  // no slack even one step down: most groups of a balanced plan
    while (low < high) {
      const size_t mid = (low + high + 1) / 2;
      if (within(at(mid))) low = mid; else high = mid - 1;
    }
    // The least energy among levels [0, low] (ternary search on a unimodal sequence).
    size_t a = 0, b = low;
    while (b - a > 2) {
      const size_t m1 = a + (b - a) / 3, m2 = b - (b - a) / 3;
      if (at(m1).energy_j <= at(m2).energy_j) b = m2; else a = m1;
    }
    size_t best = a;
    for (size_t level = a; level <= b; ++level) {
      if (at(level).energy_j < at(best).energy_j) best = level;
    }
    if (!(at(best).energy_j < current.energy_j)) return current;
    for (const int rank : group) ratios[static_cast<size_t>(rank)] = levels[best];
    return at(best);
  }

  ClockedStep& step_;
  const plan::PlanContext& context_;
  std::vector<std::vector<int>> groups_;
  double bound_s_;
  double clock_step_;
};

// The groups, most idle first (their slack is likeliest to absorb a lower clock).
std::vector<std::vector<int>> groups_most_idle_first(const plan::Plan& plan, const plan::PlanContext& context,
                                                     const timing::StepEnergy& full) {
  std::vector<std::vector<int>> groups = clock_groups(plan, context);
  auto busy = [&](const std::vector<int>& group) {
    return full.devices.empty() ? 0.0 : full.devices[static_cast<size_t>(group.front())].busy_s;
  };
  std::stable_sort(groups.begin(), groups.end(),
                   [&](const std::vector<int>& x, const std::vector<int>& y) { return busy(x) < busy(y); });
  return groups;
}

// The clocks a device can be set to are whole MHz (nvidia-smi -lgc): each ratio rounded up
// to the next whole MHz (never slower than searched), in place.
void round_to_whole_mhz(std::vector<double>& ratios, const plan::PlanContext& context) {
  for (size_t rank = 0; rank < ratios.size(); ++rank) {
    const double max_mhz = context.power_of(static_cast<int>(rank))->max_clock_mhz;
    ratios[rank] = std::min(max_mhz, std::ceil(ratios[rank] * max_mhz - 1e-6)) / max_mhz;
  }
}

// The plan's clocks in MHz; none when every rank is at its maximum.
std::vector<double> clocks_mhz(const std::vector<double>& ratios, const plan::PlanContext& context) {
  std::vector<double> clocks;
  bool lowered = false;
  for (size_t rank = 0; rank < ratios.size(); ++rank) {
    clocks.push_back(std::round(ratios[rank] * context.power_of(static_cast<int>(rank))->max_clock_mhz));
    lowered = lowered || ratios[rank] < 1;
  }
  return lowered ? clocks : std::vector<double>{};
}

ClockChoice search(ClockedStep& step, const plan::Plan& plan, const plan::PlanContext& context,
                   const std::vector<std::vector<int>>& groups, const Priced& full, double bound_s,
                   double clock_step) {
  std::vector<double> ratios(static_cast<size_t>(plan.devices), 1.0);
  GroupSearch search(step, context, groups, bound_s, clock_step);
  Priced chosen = search.run(ratios, full);  // every rank starts at its maximum clock, priced as `full`
  const std::vector<double> searched = ratios;
  round_to_whole_mhz(ratios, context);
  if (ratios != searched) chosen = step.price(ratios);
  ClockChoice choice;
  choice.plan = plan;
  choice.plan.rank_clocks_mhz = clocks_mhz(ratios, context);
  choice.full_clock_time_s = full.time_s;
  choice.full_clock_energy_j = full.energy_j;
  choice.time_s = chosen.time_s;
  choice.energy_j = chosen.energy_j;
  choice.groups = static_cast<int>(groups.size());
  return choice;
}

}  // namespace

ClockChoice choose_clocks(const plan::Plan& plan, const plan::PlanContext& context, const ClockSearchOptions& options) {
  check_search(context, options);
  ClockedStep step(plan, context, options.evaluate_options());
  const Priced full = step.price(std::vector<double>(static_cast<size_t>(plan.devices), 1.0));
  const double bound = options.time_bound_s.value_or(full.time_s * (1 + options.max_slowdown));
  ClockChoice choice = search(step, plan, context, groups_most_idle_first(plan, context, step.last_energy()), full,
                              bound, options.clock_step);
  choice.evaluations = step.evaluations();
  return choice;
}

std::vector<double> frontier_slowdowns() { return {0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1e9}; }

std::vector<FrontierPoint> clock_frontier(const plan::Plan& plan, const plan::PlanContext& context,
                                          const ClockSearchOptions& options) {
  check_search(context, options);
  ClockedStep step(plan, context, options.evaluate_options());
  const std::vector<double> full_ratios(static_cast<size_t>(plan.devices), 1.0);
  const Priced full = step.price(full_ratios);
  const std::vector<std::vector<int>> groups = groups_most_idle_first(plan, context, step.last_energy());
  std::vector<FrontierPoint> points{FrontierPoint{full.time_s, full.energy_j, 0, {}}};
  for (const double slowdown : frontier_slowdowns()) {
    const ClockChoice choice = search(step, plan, context, groups, full, full.time_s * (1 + slowdown), options.clock_step);
    points.push_back(FrontierPoint{choice.time_s, choice.energy_j, slowdown, choice.plan.rank_clocks_mhz});
  }
  // Every rank with work at one clock, each level of the first group's kind.
  const std::vector<double> levels = cost::clock_ratio_steps(*context.power_of(0), options.clock_step);
  for (const double level : levels) {
    std::vector<double> ratios = full_ratios;
    for (const std::vector<int>& group : groups) {
      for (const int rank : group) ratios[static_cast<size_t>(rank)] = level;
    }
    round_to_whole_mhz(ratios, context);
    const Priced priced = step.price(ratios);
    points.push_back(FrontierPoint{priced.time_s, priced.energy_j, -1, clocks_mhz(ratios, context)});
  }
  std::sort(points.begin(), points.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
    return a.time_s != b.time_s ? a.time_s < b.time_s : a.energy_j < b.energy_j;
  });
  std::vector<FrontierPoint> frontier;
  for (const FrontierPoint& point : points) {
    if (frontier.empty() || point.energy_j < frontier.back().energy_j) frontier.push_back(point);
  }
  return frontier;
}

}  // namespace burst::planner
