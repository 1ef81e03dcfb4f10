#include "mixed_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/timing/evaluate.h"
#include "burst/util/table.h"

namespace burst::cli {

MixedSummary summarise_mixed(const plan::PlanContext& context, const plan::Plan& plan, Seconds iteration,
                             const planner::BurstOptions& burst, const std::optional<planner::MixedBaselines>& known) {
  MixedSummary summary;
  summary.kinds = planner::usage_by_kind(context, plan, iteration);
  const planner::MixedBaselines baselines = known ? *known : planner::mixed_baselines(context, plan.global_batch, burst);
  timing::EvaluateOptions evaluation;
  evaluation.program = burst.program;
  auto time_of = [&](const plan::Plan& baseline) { return timing::evaluate_plan(baseline, context, evaluation).iteration_time; };
  const cluster::Cluster& cluster = context.network.cluster();
  const auto& alone_kind = cluster.kinds().at(static_cast<size_t>(baselines.alone_kind));
  summary.baselines = {
      {fmt::format("{} alone ({} devices, burst planner)", alone_kind,
                   cluster.ranks_of_kind(baselines.alone_kind).size()),
       "one_kind_alone", time_of(baselines.alone)},
      {fmt::format("all {} devices, even split (DDP)", cluster.size()), "even_split", time_of(baselines.even)},
      {fmt::format("all {} devices, one ratio per kind", cluster.size()), "one_ratio", time_of(baselines.one_ratio)}};
  return summary;
}

std::string kinds_text(const cluster::Cluster& cluster) {
  std::string text;
  for (int kind = 0; kind < static_cast<int>(cluster.kinds().size()); ++kind) {
    text += fmt::format("{}{} {}", text.empty() ? "" : " + ", cluster.ranks_of_kind(kind).size(),
                        cluster.kinds()[static_cast<size_t>(kind)]);
  }
  return text;
}

void print_mixed_summary(const MixedSummary& summary, Seconds iteration, std::ostream& out) {
  using Align = TextTable::Align;
  out << "\nPer device kind (compute and idle per device, averaged over the kind's devices):\n";
  TextTable table({{"kind", Align::Left},
                   {"devices", Align::Right},
                   {"used", Align::Right},
                   {"samples", Align::Right},
                   {"compute ms", Align::Right},
                   {"idle ms", Align::Right},
                   {"utilisation", Align::Right}});
  for (const planner::KindUsage& kind : summary.kinds) {
    table.add_row({kind.kind, std::to_string(kind.devices), std::to_string(kind.devices_used),
                   fmt::format("{:.1f}%", 100 * kind.sample_share), fmt::format("{:.3f}", kind.compute.ms()),
                   fmt::format("{:.3f}", kind.idle.ms()), fmt::format("{:.1f}%", 100 * kind.utilisation)});
  }
  table.print(out);
  if (summary.baselines.empty()) return;
  out << "\nBaselines on this cluster (evaluated alike):\n";
  for (const MixedBaselineTime& baseline : summary.baselines) {
    out << fmt::format("  {:<52} {:10.3f} ms (this plan is {:.2f}x as fast)\n", baseline.name + ":", baseline.time.ms(),
                       iteration.s() > 0 ? baseline.time / iteration : 0.0);
  }
}

nlohmann::json mixed_summary_json(const MixedSummary& summary, Seconds iteration) {
  nlohmann::json kinds = nlohmann::json::array();
  for (const planner::KindUsage& kind : summary.kinds) {
    kinds.push_back({{"kind", kind.kind},
                     {"devices", kind.devices},
                     {"devices_used", kind.devices_used},
                     {"sample_share", kind.sample_share},
                     {"compute_ms", kind.compute.ms()},
                     {"idle_ms", kind.idle.ms()},
                     {"utilisation", kind.utilisation}});
  }
  nlohmann::json baselines = nlohmann::json::object();
  for (const MixedBaselineTime& baseline : summary.baselines) {
    baselines[baseline.key] = {{"name", baseline.name},
                               {"iteration_time_ms", baseline.time.ms()},
                               {"speedup", iteration.s() > 0 ? baseline.time / iteration : 0.0}};
  }
  return {{"kinds", std::move(kinds)}, {"baselines", std::move(baselines)}};
}

}  // namespace burst::cli
