#pragma once
// What `burst plan` and `burst sim` add for a mixed cluster: the plan per device kind
// (devices, shares, utilisation, idle time) and the three baselines burst is measured
// against (the best kind alone, an even split over all devices, one ratio per kind).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "burst/cluster/cluster.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/planner/burst_planner.h"
#include "burst/planner/heterogeneous.h"
#include "burst/program/program_options.h"
#include "burst/util/units.h"

namespace burst::cli {

struct MixedBaselineTime {
  std::string name;  // "a100 alone (8 devices, burst)", ...
  std::string key;   // JSON key: "one_kind_alone", "even_split", "one_ratio"
  Seconds time;
};

struct MixedSummary {
  std::vector<planner::KindUsage> kinds;
  std::vector<MixedBaselineTime> baselines;
};

// The summary of `plan` (its iteration `iteration`), with the baselines evaluated under
// `burst`'s program: `known` (the burst planner's, when it compared its plan with them), else
// planned here.
MixedSummary summarise_mixed(const plan::PlanContext& context, const plan::Plan& plan, Seconds iteration,
                             const planner::BurstOptions& burst, const std::optional<planner::MixedBaselines>& known);

// "8 a100 + 8 v100": the cluster's devices by kind.
std::string kinds_text(const cluster::Cluster& cluster);

// The per-kind table and the baselines with this plan's speedup over each.
void print_mixed_summary(const MixedSummary& summary, Seconds iteration, std::ostream& out);

// {"kinds": [{kind, devices, devices_used, sample_share, compute_ms, idle_ms, utilisation}],
//  "baselines": {KEY: {name, iteration_time_ms, speedup}}}
nlohmann::json mixed_summary_json(const MixedSummary& summary, Seconds iteration);

}  // namespace burst::cli
