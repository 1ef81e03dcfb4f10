#include "gpu_sweep_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/cost/memory.h"
#include "burst/planner/plan_dimensions.h"
#include "burst/util/format.h"
#include "burst/util/table.h"

namespace burst::cli {
namespace {

// "3d: TP 8 + SP x PP 8 x DP 8; 32 micro-batches of 1, 1f1b; recompute full, ZeRO 3, bf16".
std::string plan_text(const planner::ChosenPlan& chosen) {
  return fmt::format("{}: {}", chosen.plan.strategy,
                     planner::dimensions_text(planner::plan_dimensions(chosen.plan, chosen.program)));
}

// "no plan fits in memory (...): the smallest requirement found is X" -> "no plan fits: X".
std::string short_reason(const std::string& why_not) {
  const std::string marker = "the smallest requirement found is ";
  const auto found = why_not.find(marker);
  const std::string reason = found == std::string::npos ? why_not : "no plan fits: " + why_not.substr(found + marker.size());
  return reason.size() > 160 ? reason.substr(0, 157) + "..." : reason;
}

}  // namespace

void print_gpu_sweep_report(const GpuSweepReport& report, std::ostream& out) {
  out << fmt::format("How many GPUs? {} at global batch {} ({} tokens a sample) on {}: each count's best plan\n\n",
                     report.model, report.global_batch, report.tokens_per_sample, report.device_kind);
  TextTable table({{"GPUs", TextTable::Align::Right},
                   {"tokens/s per GPU", TextTable::Align::Right},
                   {"MFU", TextTable::Align::Right},
                   {"step s", TextTable::Align::Right},
                   {"peak memory", TextTable::Align::Right},
                   {"GPU-hours per 1B tokens", TextTable::Align::Right},
                   {"plan", TextTable::Align::Left}});
  for (const planner::GpuCountPoint& point : report.points) {
    if (!point.chosen) {
      table.add_row({std::to_string(point.devices), "-", "-", "-", "-", "-", short_reason(point.why_not)});
      continue;
    }
    table.add_row({std::to_string(point.devices),
                   with_thousands(static_cast<int64_t>(point.rate.tokens_per_s_per_device + 0.5)),
                   fmt::format("{:.1f}%", 100 * point.rate.mfu), fmt::format("{:.3f}", point.iteration.s()),
                   bytes_compact(point.peak_memory.value()), fmt::format("{:.1f}", point.gpu_hours_per_billion_tokens),
                   plan_text(*point.chosen)});
  }
  table.print(out);
}

nlohmann::json gpu_sweep_report_json(const GpuSweepReport& report) {
  nlohmann::json points = nlohmann::json::array();
  for (const planner::GpuCountPoint& point : report.points) {
    nlohmann::json row{{"devices", point.devices}, {"fits", point.chosen.has_value()}};
    row["why_not"] = point.chosen ? nlohmann::json(nullptr) : nlohmann::json(point.why_not);
    if (point.chosen) {
      row["plan"] = plan_text(*point.chosen);
      row["iteration_time_ms"] = point.iteration.ms();
      row["tokens_per_s_per_device"] = point.rate.tokens_per_s_per_device;
      row["model_tflop_s_per_device"] = point.rate.model_tflop_s_per_device;
      row["mfu"] = point.rate.mfu;
      row["peak_memory_bytes"] = point.peak_memory.value();
      row["gpu_hours_per_billion_tokens"] = point.gpu_hours_per_billion_tokens;
    }
    points.push_back(std::move(row));
  }
  return {{"model", report.model},
          {"device", report.device_kind},
          {"global_batch", report.global_batch},
          {"tokens_per_sample", report.tokens_per_sample},
          {"points", std::move(points)}};
}

}  // namespace burst::cli
