#include "plan_report.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "burst/planner/plan_dimensions.h"
#include "burst/util/format.h"
#include "burst/util/table.h"

namespace burst::cli {
namespace {

using nlohmann::json;
using Align = TextTable::Align;

// a / b for speedups; 0 when b is 0 (an empty model takes no time either way).
double ratio(Seconds a, Seconds b) { return b.s() > 0 ? a / b : 0.0; }

json limit_json(const std::optional<double>& limit) { return limit ? json(*limit) : json(nullptr); }

std::string strategy_text(const PlanReport& report) {
  if (!report.plan_file.empty()) {
    return fmt::format("plan file {} (strategy {})", report.plan_file, report.plan.strategy);
  }
  if (report.plan.strategy == "burst") {
    if (report.amplification_limit_used != report.amplification_limit) {
      // A mixed cluster's plan is also held to each kind alone (docs/heterogeneous.md).
      return fmt::format("burst plan (amplification limit {}, raised to {} to be no slower than {})",
                         amplification_text(report.amplification_limit),
                         amplification_text(report.amplification_limit_used),
                         report.cluster.mixed() ? "its baselines" : "data parallel");
    }
    return fmt::format("burst plan (amplification limit {})", amplification_text(report.amplification_limit));
  }
  if (report.plan.strategy == "dp") return "data-parallel plan";
  if (report.tried != nullptr && !report.tried->empty()) return fmt::format("auto: {} plan", report.plan.strategy);
  return report.plan.strategy + " plan";
}

// Whether the burst planner exempted `id` from the amplification limit: its one-device time
// at the global batch is under the threshold.
bool exempt(const PlanReport& report, graph::LayerId id) {
  if (!report.amplification_exempt_below) return false;
  const timing::LayerTiming& whole = report.one_device.layers[static_cast<size_t>(id)];
  return (whole.forward + whole.backward) < *report.amplification_exempt_below;
}

// The largest amplification of any layer, and of the layers the limit applied to.
std::pair<double, double> max_amplifications(const PlanReport& report) {
  double all = 0, limited = 0;
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(report.graph.size()); ++id) {
    const double amplification = report.evaluation.layers[static_cast<size_t>(id)].amplification;
    all = std::max(all, amplification);
    if (!exempt(report, id)) limited = std::max(limited, amplification);
  }
  return {all, limited};
}

json memory_json(const PlanReport& report) {
  if (report.memory == nullptr) return nullptr;
  json devices = json::array();
  for (const program::DeviceMemory& device : *report.memory) {
    devices.push_back({{"rank", device.rank},
                       {"weights", device.use.weights.value()},
                       {"gradients", device.use.gradients.value()},
                       {"optimizer_state", device.use.optimizer_state.value()},
                       {"activations", device.use.activations.value()},
                       {"communication_buffers", device.use.buffers.value()},
                       {"total", device.use.total().value()}});
  }
  const program::DeviceMemory& peak = program::peak_memory(*report.memory);
  return {{"peak_rank", peak.rank},
          {"peak_bytes", peak.use.total().value()},
          {"peak_layer", report.graph.layer(peak.largest_layer).name},
          {"capacity_bytes", report.memory_capacity.value()},
          {"fits", !(report.memory_capacity < peak.use.total())},
          {"summary", report.memory_line},
          {"note", report.memory_note.empty() ? json(nullptr) : json(report.memory_note)},
          {"per_device", std::move(devices)}};
}

// Which of a sweep point's plans fit memory: "both", "dp only", "burst only", "neither".
std::string fits_text(const SweepPoint& point) {
  if (point.data_parallel_fits && point.burst_fits) return "both";
  if (point.data_parallel_fits) return "dp only";
  return point.burst_fits ? "burst only" : "neither";
}

json tried_json(const PlanReport& report) {
  if (report.tried == nullptr || report.tried->empty()) return nullptr;
  json entries = json::array();
  for (const planner::StrategyTried& entry : *report.tried) {
    entries.push_back({{"strategy", planner::strategy_name(entry.strategy)},
                       {"iteration_time_ms", entry.time ? json(entry.time->ms()) : json(nullptr)},
                       {"why_not", entry.why_not.empty() ? json(nullptr) : json(entry.why_not)},
                       {"pipeline", entry.pipeline == "-" ? json(nullptr) : json(entry.pipeline)}});
  }
  return entries;
}

// The step's terms in ms (planner::StepTerms; 3-D plans), "-" without them.
std::string terms_text(const PlanReport& report) {
  if (!report.terms) return "-";
  const planner::StepTerms& t = *report.terms;
  return fmt::format("compute {:.1f} ms, recompute {:.1f} ms, bubble {:.1f} ms, exposed communication {:.1f} ms on "
                     "the busiest rank (docs/planner.md, \"Why one plan beats another\")",
                     t.compute * 1e3, t.recompute * 1e3, t.bubble * 1e3, t.communication * 1e3);
}
json terms_json(const PlanReport& report) {
  if (!report.terms) return nullptr;
  const planner::StepTerms& t = *report.terms;
  return {{"iteration_ms", t.iteration * 1e3}, {"compute_ms", t.compute * 1e3}, {"recompute_ms", t.recompute * 1e3},
          {"bubble_ms", t.bubble * 1e3}, {"exposed_communication_ms", t.communication * 1e3}};
}
// Dimensions no checked published run covers (planner::unchecked_dimensions), "-" for none.
std::string unchecked_text(const PlanReport& report) {
  const std::vector<std::string> unchecked =
      planner::unchecked_dimensions(planner::plan_dimensions(report.plan, report.program));
  return unchecked.empty() ? "-" : fmt::format("{} (its prediction leans on them)", fmt::join(unchecked, "; "));
}

}  // namespace

json pipeline_json(const plan::Plan& plan) {
  if (plan.pipeline.micro_batches == 1 && plan.stage_count() == 1) return nullptr;
  json stages = json::array();
  for (int stage = 0; stage < plan.stage_count(); ++stage) {
    const size_t first = stage == 0 ? 0 : static_cast<size_t>(plan.pipeline.stage_starts[static_cast<size_t>(stage - 1)]);
    stages.push_back({{"first_layer", plan.layers.at(first).layer}, {"ranks", plan.stage_ranks(stage)}});
  }
  return {{"micro_batches", plan.pipeline.micro_batches},
          {"micro_batch", plan.micro_batch()},
          {"schedule", plan::schedule_name(plan.pipeline.schedule)},
          {"stages", std::move(stages)}};
}

std::string strategies_text(const std::vector<planner::StrategyTried>& tried) {
  std::vector<std::string> parts;
  for (const planner::StrategyTried& entry : tried) {
    const char* name = planner::strategy_name(entry.strategy);
    parts.push_back(entry.time ? fmt::format("{} {:.3f} ms", name, entry.time->ms())
                               : fmt::format("{}: {}", name, entry.why_not));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string amplification_text(const std::optional<double>& limit) {
  return limit ? fmt::format("{:.4g}", *limit) : "none";
}

int devices_used(const plan::Plan& plan) {
  size_t most = 0;
  for (const plan::LayerPlacement& placement : plan.layers) most = std::max(most, placement.shards.size());
  return static_cast<int>(most);
}

namespace {

// "8 (column 4)": a layer's devices, and its tensor split when it has one.
std::string devices_text(const plan::Plan& plan, graph::LayerId id, int devices) {
  const cost::TensorSplit& split = plan.layers[static_cast<size_t>(id)].split;
  if (!split.splits()) return std::to_string(devices);
  return fmt::format("{} ({} {})", devices, cost::split_kind_name(split.kind), split.parts);
}

json split_json(const plan::Plan& plan, graph::LayerId id) {
  const cost::TensorSplit& split = plan.layers[static_cast<size_t>(id)].split;
  if (!split.splits()) return nullptr;
  return {{"kind", cost::split_kind_name(split.kind)}, {"parts", split.parts}};
}

double mfu(const PlanReport& report) {
  return timing::model_flops_utilisation(report.graph, report.plan.global_batch, report.evaluation.iteration_time,
                                       report.cluster.size(), report.peak_flops);
}

double hfu(const PlanReport& report) {
  return timing::hardware_flops_utilisation(report.graph, report.plan.global_batch, report.evaluation.iteration_time,
                                          report.cluster.size(), report.peak_flops, report.program.recompute);
}

// "12.3% (3 x forward FLOPs of the batch per second over 64 x 156 TFLOP/s); hardware 16.4%
// with recomputation".
std::string mfu_text(const PlanReport& report) {
  if (!(report.peak_flops > 0)) return "-";
  const std::string hardware =
      report.program.recompute == cost::Recompute::None
          ? std::string()
          : fmt::format("; hardware FLOPs {:.1f}% with the {} recomputation", 100 * hfu(report),
                        cost::recompute_name(report.program.recompute));
  return fmt::format("{:.1f}% (3 x the forward FLOPs of the batch per second, over {} x {:.0f} TFLOP/s){}",
                     100 * mfu(report), report.cluster.size(), report.peak_flops / 1e12, hardware);
}

std::optional<timing::LanguageModelRate> language_rate(const PlanReport& report) {
  return timing::language_model_rate(report.graph, report.plan.global_batch, report.evaluation.iteration_time,
                                     report.cluster.size(), report.peak_flops);
}

// "5,762 tokens/s per device, 289 model TFLOP/s per device (29.2% of the 989 TFLOP/s peak)".
std::string language_rate_text(const PlanReport& report) {
  const auto rate = language_rate(report);
  if (!rate) return "-";
  const std::string share =
      report.peak_flops > 0 ? fmt::format(" ({:.1f}% of the {:.0f} TFLOP/s peak)", 100 * rate->mfu, report.peak_flops / 1e12)
                            : std::string();
  return fmt::format("{} tokens/s per device, {:.1f} model TFLOP/s per device{} (6 x active parameters + attention, "
                     "docs/llm.md)",
                     with_thousands(static_cast<int64_t>(std::llround(rate->tokens_per_s_per_device))),
                     rate->model_tflop_s_per_device, share);
}

// The per-layer table, with the lines that say what its columns are.
void print_layer_table(const PlanReport& report, std::ostream& out) {
  out << "Times in ms. per-dev: the largest shard; transfer: the slowest input message into the "
         "layer; sync: the all-reduce of its gradient bucket;\n"
         "ampl: devices x (fwd + bwd) / one device's time at the whole batch (*: exempt from the "
         "limit); fwd end, bwd end: "
         "when the layer's forward, backward finish,\n"
         "counted from the start of the iteration (backward runs last layer first, so bwd end "
         "falls down the table).\n\n";
  TextTable table({{"id", Align::Right},
                   {"layer", Align::Left},
                   {"op", Align::Left},
                   {"devices", Align::Right},
                   {"per-dev", Align::Right},
                   {"fwd", Align::Right},
                   {"bwd", Align::Right},
                   {"transfer", Align::Right},
                   {"sync", Align::Right},
                   {"ampl", Align::Right},
                   {"fwd end", Align::Right},
                   {"bwd end", Align::Right}});
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(report.graph.size()); ++id) {
    const timing::LayerTiming& layer = report.evaluation.layers[static_cast<size_t>(id)];
    table.add_row({std::to_string(id), report.graph.layer(id).name,
                   graph::op_name(report.graph.layer(id).op()), devices_text(report.plan, id, layer.devices),
                   std::to_string(layer.per_device_batch), fmt::format("{:.4f}", layer.forward.ms()),
                   fmt::format("{:.4f}", layer.backward.ms()), fmt::format("{:.4f}", layer.transfer.ms()),
                   fmt::format("{:.4f}", layer.sync.ms()),
                   fmt::format("{:.2f}{}", layer.amplification, exempt(report, id) ? "*" : ""),
                   fmt::format("{:.3f}", layer.forward_end_s * 1e3),
                   fmt::format("{:.3f}", layer.backward_end_s * 1e3)});
  }
  table.print(out);
}

// The summary's lines as (label, value); "-": the line does not apply to this plan.
std::vector<std::pair<std::string, std::string>> summary_lines(const PlanReport& report) {
  const timing::PlanEvaluation& evaluation = report.evaluation;
  const auto [largest, largest_limited] = max_amplifications(report);
  const int devices = report.cluster.size();
  const Seconds iteration = evaluation.iteration_time;
  return {
      {"predicted iteration time", fmt::format("{:.3f} ms", iteration.ms())},
      {"  the planner's own estimate",
       report.planner_prediction ? fmt::format("{:.3f} ms", report.planner_prediction->ms()) : "-"},
      {fmt::format("  data parallel on {} device{}", devices, devices == 1 ? "" : "s"),
       fmt::format("{:.3f} ms (this plan is {:.2f}x as fast)", report.data_parallel.iteration_time.ms(),
                   ratio(report.data_parallel.iteration_time, iteration))},
      {"  one device",
       fmt::format("{:.3f} ms (this plan is {:.2f}x as fast)", report.one_device.iteration_time.ms(),
                   ratio(report.one_device.iteration_time, iteration))},
      {"model FLOPs utilisation", mfu_text(report)},
      {"language model throughput", language_rate_text(report)},
      {"device-seconds per iteration",
       fmt::format("{:.6f} s of compute (one device at the whole batch: {:.6f} s)",
                   evaluation.device_seconds.s(), evaluation.one_device_compute.s())},
      {"mean amplification", fmt::format("{:.3f}", evaluation.mean_amplification())},
      {"largest amplification",
       report.amplification_exempt_below
           ? fmt::format("{:.2f} of the layers under the limit, {:.2f} of all (* exempt: one-device time under {:.3f} ms)",
                         largest_limited, largest, report.amplification_exempt_below->ms())
           : "-"},
      {"idle device-seconds per iteration",
       fmt::format("{:.6f} s ({:.1f}% of {} devices x {:.3f} ms): free for a background job",
                   evaluation.idle_device_seconds.s(),
                   100 * ratio(evaluation.idle_device_seconds, iteration * devices), devices, iteration.ms())},
      {"devices used", fmt::format("{} of {} (the most any layer runs on)", devices_used(report.plan), devices)},
      {"parallelism", planner::dimensions_text(planner::plan_dimensions(report.plan, report.program))},
      {"step terms", terms_text(report)},
      {"unchecked", unchecked_text(report)},
      {"pipeline", pipeline_text(report.plan)},
      {"strategies tried", report.tried != nullptr && !report.tried->empty() ? strategies_text(*report.tried) : "-"},
      {"peak memory per device", report.memory_line.empty() ? "-" : report.memory_line},
      {"energy per iteration", energy_text(evaluation.energy, report.plan.global_batch)},
      {"  note", report.memory_note.empty() ? "-" : report.memory_note},
  };
}

}  // namespace

void print_plan_report(const PlanReport& report, std::ostream& out) {
  const int devices = report.cluster.size();
  const std::string devices_text =
      report.cluster.mixed() ? kinds_text(report.cluster)
                             : fmt::format("{} {} device{}", devices, report.cluster.device(), devices == 1 ? "" : "s");
  out << fmt::format("{} for {}: global batch {} on {} ({})\n", strategy_text(report), report.graph.name(),
                     report.plan.global_batch, report.cluster.name(), devices_text);
  print_layer_table(report, out);
  const std::vector<std::pair<std::string, std::string>> summary = summary_lines(report);
  size_t label_width = 0;
  for (const auto& [label, value] : summary) label_width = std::max(label_width, label.size());
  out << '\n';
  for (const auto& [label, value] : summary) {
    if (value == "-") continue;  // a line that does not apply to this plan
    out << label << ':' << std::string(label_width - label.size() + 1, ' ') << value << '\n';
  }
  if (report.clocks != nullptr) print_clock_report(*report.clocks, out);
  if (report.mixed != nullptr) print_mixed_summary(*report.mixed, report.evaluation.iteration_time, out);
  if (report.frontier != nullptr) print_frontier(*report.frontier, out);
}

namespace {

// One layer of the report's "layers": its placement, times and timeline.
json layer_json(const PlanReport& report, graph::LayerId id) {
  const timing::LayerTiming& layer = report.evaluation.layers[static_cast<size_t>(id)];
  return {{"id", id},
                      {"name", report.graph.layer(id).name},
                      {"op", graph::op_name(report.graph.layer(id).op())},
                      {"devices", layer.devices},
                      {"split", split_json(report.plan, id)},
                      {"first_rank", report.plan.layers[static_cast<size_t>(id)].shards.front().rank},
                      {"per_device_batch", layer.per_device_batch},
                      {"forward_ms", layer.forward.ms()},
                      {"backward_ms", layer.backward.ms()},
                      {"transfer_ms", layer.transfer.ms()},
                      {"sync_ms", layer.sync.ms()},
                      {"amplification", layer.amplification},
                      {"exempt", exempt(report, id)},
                      {"forward_start_ms", layer.forward_start_s * 1e3},
                      {"forward_end_ms", layer.forward_end_s * 1e3},
                      {"backward_start_ms", layer.backward_start_s * 1e3},
                      {"backward_end_ms", layer.backward_end_s * 1e3},
                      {"sync_end_ms", layer.sync_end_s * 1e3}};
}

// The step's energy fields and the objective, added to `document`.
void add_energy_json(const PlanReport& report, json& document) {
  const timing::StepEnergy& energy = report.evaluation.energy;
  document["energy_j"] = energy.known ? json(energy.total_j) : json(nullptr);
  document["energy_j_per_sample"] =
      energy.known ? json(energy.total_j / static_cast<double>(report.plan.global_batch)) : json(nullptr);
  document["energy"] = energy_json(energy, report.plan.global_batch);
  document["objective"] = report.clocks != nullptr ? clock_report_json(*report.clocks) : json({{"objective", "time"}});
}

}  // namespace

json plan_report_json(const PlanReport& report) {
  const timing::PlanEvaluation& evaluation = report.evaluation;
  const auto [largest, largest_limited] = max_amplifications(report);
  json layers = json::array();
  for (graph::LayerId id = 0; id < static_cast<graph::LayerId>(report.graph.size()); ++id) {
    layers.push_back(layer_json(report, id));
  }
  const Seconds iteration = evaluation.iteration_time;
  json document = {{"model", report.graph.name()},
          {"devices", report.cluster.size()},
          {"device", report.cluster.device()},
          {"cluster", report.cluster.name()},
          {"global_batch", report.plan.global_batch},
          {"strategy", report.plan.strategy},
          {"amplification_limit", limit_json(report.amplification_limit)},
          {"amplification_limit_used", limit_json(report.amplification_limit_used)},
          {"planner_predicted_ms",
           report.planner_prediction ? json(report.planner_prediction->ms()) : json(nullptr)},
          {"amplification_exempt_below_ms",
           report.amplification_exempt_below ? json(report.amplification_exempt_below->ms()) : json(nullptr)},
          {"max_amplification", largest},
          {"max_amplification_limited", largest_limited},
          {"plan_file", report.plan_file.empty() ? json(nullptr) : json(report.plan_file)},
          {"iteration_time_ms", iteration.ms()},
          {"device_seconds", evaluation.device_seconds.s()},
          {"idle_device_seconds", evaluation.idle_device_seconds.s()},
          {"one_device_compute_seconds", evaluation.one_device_compute.s()},
          {"mean_amplification", evaluation.mean_amplification()},
          {"devices_used", devices_used(report.plan)},
          {"data_parallel_ms", report.data_parallel.iteration_time.ms()},
          {"one_device_ms", report.one_device.iteration_time.ms()},
          {"speedup_vs_dp", ratio(report.data_parallel.iteration_time, iteration)},
          {"speedup_vs_one_device", ratio(report.one_device.iteration_time, iteration)},
          {"mfu", report.peak_flops > 0 ? json(mfu(report)) : json(nullptr)},
          {"hfu", report.peak_flops > 0 ? json(hfu(report)) : json(nullptr)},
          {"peak_tflops", report.peak_flops > 0 ? json(report.peak_flops / 1e12) : json(nullptr)},
          {"memory", memory_json(report)},
          {"parallelism", planner::dimensions_json(planner::plan_dimensions(report.plan, report.program))},
          {"step_terms", terms_json(report)},
          {"unchecked", planner::unchecked_dimensions(planner::plan_dimensions(report.plan, report.program))},
          {"pipeline", pipeline_json(report.plan)},
          {"strategies_tried", tried_json(report)},
          {"layers", std::move(layers)}};
  if (const auto rate = language_rate(report)) {
    document["tokens_per_s_per_device"] = rate->tokens_per_s_per_device;
    document["model_tflop_s_per_device"] = rate->model_tflop_s_per_device;
  }
  if (report.mixed != nullptr) document["mixed"] = mixed_summary_json(*report.mixed, iteration);
  add_energy_json(report, document);
  if (report.frontier != nullptr) document["frontier"] = frontier_json(*report.frontier);
  return document;
}

std::vector<int> sweep_device_counts(int devices) {
  std::vector<int> counts;
  for (int n = 1; n <= std::min(devices, 16); ++n) counts.push_back(n);
  for (int64_t n = 32; n < devices; n *= 2) counts.push_back(static_cast<int>(n));
  if (devices > 16) counts.push_back(devices);
  return counts;
}

namespace {

// A step's joules for a table cell ("-" when not modelled).
std::string joules_text(const timing::StepEnergy& energy) {
  return energy.known ? fmt::format("{:.4g}", energy.total_j) : "-";
}

}  // namespace

void print_sweep_report(const SweepReport& report, std::ostream& out) {
  const int most = report.points.empty() ? 0 : report.points.back().devices;
  out << fmt::format(
      "strong scaling of {} at global batch {} on built-in {} clusters "
      "(burst amplification limit {})\n",
      report.model, report.global_batch, report.device_kind, amplification_text(report.amplification_limit));
  out << (most <= 16
              ? fmt::format("device counts: every count from 1 to {}\n", most)
              : fmt::format("device counts: every count from 1 to 16, then powers of two, then {}\n", most));
  out << "Times in ms per iteration; device-s: compute device-seconds per iteration; idle: what a "
         "background job could use;\n"
         "J: energy per iteration (docs/energy.md); burst uses: the most devices any layer runs on; burst limit: the amplification limit planned "
         "under (raised where the asked one would be slower than data parallel);\n"
         "fits memory: which plans fit each device's memory (both are shown either way).\n\n";
  TextTable table({{"devices", Align::Right},
                   {"dp ms", Align::Right},
                   {"burst ms", Align::Right},
                   {"burst speedup vs dp", Align::Right},
                   {"dp device-s", Align::Right},
                   {"burst device-s", Align::Right},
                   {"burst idle device-s", Align::Right},
                   {"dp J", Align::Right},
                   {"burst J", Align::Right},
                   {"burst uses", Align::Right},
                   {"burst limit", Align::Right},
                   {"fits memory", Align::Left}});
  for (const SweepPoint& point : report.points) {
    table.add_row(
        {std::to_string(point.devices), fmt::format("{:.3f}", point.data_parallel.iteration_time.ms()),
         fmt::format("{:.3f}", point.burst.iteration_time.ms()),
         fmt::format("{:.2f}x", ratio(point.data_parallel.iteration_time, point.burst.iteration_time)),
         fmt::format("{:.5f}", point.data_parallel.device_seconds.s()),
         fmt::format("{:.5f}", point.burst.device_seconds.s()),
         fmt::format("{:.5f}", point.burst.idle_device_seconds.s()), joules_text(point.data_parallel.energy),
         joules_text(point.burst.energy), std::to_string(point.burst_devices_used),
         amplification_text(point.burst_limit_used), fits_text(point)});
  }
  table.print(out);
}

json sweep_report_json(const SweepReport& report) {
  json rows = json::array();
  for (const SweepPoint& point : report.points) {
    rows.push_back({{"devices", point.devices},
                    {"model", report.model},
                    {"device", report.device_kind},
                    {"global_batch", report.global_batch},
                    {"amplification_limit", limit_json(report.amplification_limit)},
                    {"dp_iteration_time_ms", point.data_parallel.iteration_time.ms()},
                    {"burst_iteration_time_ms", point.burst.iteration_time.ms()},
                    {"dp_fits", point.data_parallel_fits},
                    {"burst_fits", point.burst_fits},
                    {"speedup_vs_dp", ratio(point.data_parallel.iteration_time, point.burst.iteration_time)},
                    {"dp_device_seconds", point.data_parallel.device_seconds.s()},
                    {"burst_device_seconds", point.burst.device_seconds.s()},
                    {"dp_idle_device_seconds", point.data_parallel.idle_device_seconds.s()},
                    {"burst_idle_device_seconds", point.burst.idle_device_seconds.s()},
                    {"burst_mean_amplification", point.burst.mean_amplification()},
                    {"burst_devices_used", point.burst_devices_used},
                    {"dp_energy_j", point.data_parallel.energy.known ? json(point.data_parallel.energy.total_j) : json(nullptr)},
                    {"burst_energy_j", point.burst.energy.known ? json(point.burst.energy.total_j) : json(nullptr)},
                    {"burst_amplification_limit_used", limit_json(point.burst_limit_used)}});
  }
  return rows;
}

}  // namespace burst::cli
