#include "sim_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/util/table.h"

namespace burst::cli {
namespace {

using nlohmann::json;
using Align = TextTable::Align;

// The run whose figures the report leads with: multiplexed when there is a background job.
const sim::SimResult& headline(const SimReport& report) {
  return report.multiplexed ? report.multiplexed->with_background : report.foreground;
}

std::string background_name(const BackgroundSpec& spec) {
  return fmt::format("{} at {} per device, policy {}", spec.model, spec.per_device_batch, policy_name(spec.policy));
}

std::string rate(double samples_per_s) { return fmt::format("{:.1f}", samples_per_s); }

}  // namespace


const char* policy_name(sim::BackgroundPolicy policy) {
  return policy == sim::BackgroundPolicy::Greedy ? "greedy" : "fit";
}

namespace {

// Per device, ms per step: the first kShownRanks ranks, and the mean of all beyond them.
void print_device_table(const sim::SimResult& result, int devices, std::ostream& out) {
  out << "\nPer device, ms per step (communication runs beside compute):\n";
  TextTable table({{"rank", Align::Right},
                   {"foreground", Align::Right},
                   {"background", Align::Right},
                   {"communication", Align::Right},
                   {"idle", Align::Right}});
  const double steps = result.measured_iterations;
  auto row = [&](const std::string& label, const sim::DeviceUsage& usage) {
    table.add_row({label, fmt::format("{:.3f}", usage.foreground.ms() / steps),
                   fmt::format("{:.3f}", usage.background.ms() / steps),
                   fmt::format("{:.3f}", usage.communication.ms() / steps), fmt::format("{:.3f}", usage.idle.ms() / steps)});
  };
  constexpr int kShownRanks = 16;
  for (int rank = 0; rank < std::min(devices, kShownRanks); ++rank) {
    row(std::to_string(rank), result.usage[static_cast<size_t>(rank)]);
  }
  if (devices > kShownRanks) {
    sim::DeviceUsage mean;
    for (const sim::DeviceUsage& usage : result.usage) {
      mean.foreground += usage.foreground;
      mean.background += usage.background;
      mean.communication += usage.communication;
      mean.idle += usage.idle;
    }
    const double scale = 1.0 / devices;
    mean.foreground = mean.foreground * scale;
    mean.background = mean.background * scale;
    mean.communication = mean.communication * scale;
    mean.idle = mean.idle * scale;
    table.add_rule();
    row(fmt::format("mean of {}", devices), mean);
  }
  table.print(out);
}

}  // namespace

void print_sim_report(const SimReport& report, std::ostream& out) {
  const sim::SimResult& result = headline(report);
  const int devices = report.cluster.size();
  const std::string devices_text =
      report.cluster.mixed() ? kinds_text(report.cluster)
                             : fmt::format("{} {} device{}", devices, report.cluster.device(), devices == 1 ? "" : "s");
  out << fmt::format("simulated {} for {}: global batch {} on {} ({}), BatchNorm {}\n", report.plan_source,
                     report.model, report.plan.global_batch, report.cluster.name(), devices_text,
                     program::batchnorm_mode_name(report.program));
  if (report.background) out << "background job on every device: " << background_name(*report.background) << '\n';
  out << '\n';
  auto line = [&out](const std::string& label, const std::string& value, const std::string& note) {
    out << fmt::format("{:<20}{:>20}  {}\n", label, value, note);
  };
  line("iteration time", fmt::format("{:.3f} ms", result.iteration_time.ms()),
       fmt::format("(planner's evaluator: {:.3f} ms)", report.evaluator_time.ms()));
  if (report.multiplexed) {
    line("  alone", fmt::format("{:.3f} ms", report.foreground.iteration_time.ms()),
         fmt::format("(slowdown with the background job: {:.3f}x)", report.multiplexed->foreground_slowdown));
  }
  line("foreground", rate(result.foreground_samples_per_s) + " samples/s", "");
  if (report.multiplexed) {
    line("background", rate(result.background_samples_per_s) + " samples/s",
         fmt::format("({:.1f} alone on one device; {:.0f}% of what the foreground's idle time allows)",
                     result.background_alone_samples_per_s, 100 * report.multiplexed->idle_time_efficiency));
  }
  line("cluster throughput", rate(result.cluster_throughput) + " samples/s", "");
  line("useful fraction", fmt::format("{:.3f}", result.useful_fraction),
       fmt::format("(busy {:.3f}; useful: device time on work one device would also do)", result.busy_fraction));
  if (!report.memory.empty()) out << "peak memory per device: " << report.memory << '\n';
  out << "energy per iteration: " << energy_text(result.energy, report.plan.global_batch) << '\n';
  if (report.multiplexed) print_cluster_energy(*report.multiplexed, out);
  print_device_table(result, devices, out);
  if (report.mixed != nullptr) print_mixed_summary(*report.mixed, report.foreground.iteration_time, out);
}

namespace {

// The background job's figures (null when the simulation ran none).
json background_json(const SimReport& report, const sim::SimResult& result) {
  if (!report.background || !report.multiplexed) return nullptr;
  return {{"model", report.background->model},
          {"per_device_batch", report.background->per_device_batch},
          {"policy", policy_name(report.background->policy)},
          {"step_alone_ms", result.background_step_alone.ms()},
          {"alone_samples_per_s", result.background_alone_samples_per_s},
          {"idle_time_efficiency", report.multiplexed->idle_time_efficiency}};
}

// Each rank's time per iteration by use (and its idle intervals with --intervals).
json per_device_json(const SimReport& report, const sim::SimResult& result) {
  json per_device = json::array();
  const double steps = result.measured_iterations;
  for (size_t rank = 0; rank < result.usage.size(); ++rank) {
    const sim::DeviceUsage& usage = result.usage[rank];
    json device = {{"rank", rank},
                   {"foreground_ms", usage.foreground.ms() / steps},
                   {"background_ms", usage.background.ms() / steps},
                   {"communication_ms", usage.communication.ms() / steps},
                   {"idle_ms", usage.idle.ms() / steps}};
    if (report.intervals) {
      json intervals = json::array();
      for (const sim::Interval& interval : usage.idle_intervals) {
        intervals.push_back({interval.start_s * 1e3, interval.end_s * 1e3});
      }
      device["idle_intervals_ms"] = std::move(intervals);
    }
    per_device.push_back(std::move(device));
  }
  return per_device;
}

// The energy fields, the background's energy figures among them, added to `document`.
void add_sim_energy_json(const SimReport& report, const sim::SimResult& result, json& document) {
  document["energy"] = energy_json(result.energy, report.plan.global_batch);
  document["energy_j"] = result.energy.known ? json(result.energy.total_j) : json(nullptr);
  document["energy_j_per_sample"] = result.energy.known ? document["energy"]["energy_j_per_sample"] : json(nullptr);
  document["power_cap_w"] = report.program.power_cap_w > 0 ? json(report.program.power_cap_w) : json(nullptr);
  if (!report.multiplexed || !result.energy.known) return;
  const sim::MultiplexResult& multiplexed = *report.multiplexed;
  json& energy = document["energy"];
  energy["alone_energy_j"] = multiplexed.alone.energy.total_j;
  energy["foreground_samples_per_j"] = result.foreground_samples_per_joule;
  energy["background_samples_per_j"] = result.background_samples_per_joule;
  energy["cluster_samples_per_j_alone"] = multiplexed.samples_per_joule_alone;
  energy["cluster_samples_per_j_with_background"] = multiplexed.samples_per_joule_with;
  energy["background_j_per_sample"] = multiplexed.background_joules_per_sample;
  energy["background_alone_j_per_sample"] = multiplexed.background_alone_joules_per_sample;
}

}  // namespace

json sim_report_json(const SimReport& report) {
  const sim::SimResult& result = headline(report);
  json document = {{"model", report.model},
          {"device", report.cluster.device()},
          {"cluster", report.cluster.name()},
          {"devices", report.cluster.size()},
          {"global_batch", report.plan.global_batch},
          {"strategy", report.plan.strategy},
          {"plan_source", report.plan_source},
          {"memory", report.memory},
          {"batchnorm", program::batchnorm_mode_name(report.program)},
          {"iteration_time_ms", result.iteration_time.ms()},
          {"iteration_time_alone_ms", report.foreground.iteration_time.ms()},
          {"evaluator_iteration_time_ms", report.evaluator_time.ms()},
          {"foreground_samples_per_s", result.foreground_samples_per_s},
          {"background_samples_per_s", result.background_samples_per_s},
          {"cluster_throughput", result.cluster_throughput},
          {"useful_fraction", result.useful_fraction},
          {"busy_fraction", result.busy_fraction},
          {"foreground_slowdown", report.multiplexed ? report.multiplexed->foreground_slowdown : 1.0},
          {"background", background_json(report, result)},
          {"per_device", per_device_json(report, result)}};
  if (report.mixed != nullptr) document["mixed"] = mixed_summary_json(*report.mixed, report.foreground.iteration_time);
  add_sim_energy_json(report, result, document);
  return document;
}

void print_cluster_energy(const sim::MultiplexResult& multiplexed, std::ostream& out) {
  const sim::SimResult& with = multiplexed.with_background;
  if (!with.energy.known || !multiplexed.alone.energy.known) return;
  out << fmt::format("  alone {:.4g} J; with the background job {:.4g} J ({:.3g} foreground "
                     "samples/J, {:.3g} background samples/J)\n",
                     multiplexed.alone.energy.total_j, with.energy.total_j, with.foreground_samples_per_joule,
                     with.background_samples_per_joule);
  out << fmt::format("  filling idle time: {:.3g} samples/J over the cluster against {:.3g} leaving it idle ({:+.1f}%); "
                     "a background sample costs {:.3g} J more than idling, {:.3g} J on a device of its own\n",
                     multiplexed.samples_per_joule_with, multiplexed.samples_per_joule_alone,
                     (multiplexed.samples_per_joule_with / multiplexed.samples_per_joule_alone - 1) * 100,
                     multiplexed.background_joules_per_sample, multiplexed.background_alone_joules_per_sample);
}

void print_sim_sweep(const SimSweepReport& report, std::ostream& out) {
  out << fmt::format("simulated strong scaling of {} at global batch {} on built-in {} clusters, BatchNorm {}\n",
                     report.model, report.global_batch, report.device_kind, program::batchnorm_mode_name(report.program));
  if (report.background) {
    out << "background job on every device: " << background_name(*report.background) << '\n'
        << "Throughput in samples/s; cluster = foreground + background. gain: burst + background over data "
           "parallel alone.\n";
  }
  out << '\n';
  std::vector<TextTable::Column> columns = {{"devices", Align::Right}, {"dp ms", Align::Right},
                                            {"burst ms", Align::Right}, {"dp samples/s", Align::Right},
                                            {"burst samples/s", Align::Right}};
  if (report.background) {
    for (const char* name : {"burst+bg ms", "dp+bg cluster", "burst+bg cluster", "gain", "useful"}) {
      columns.push_back({name, Align::Right});
    }
  }
  TextTable table(std::move(columns));
  for (const SimSweepPoint& point : report.points) {
    std::vector<std::string> row = {std::to_string(point.devices),
                                    fmt::format("{:.3f}", point.data_parallel.iteration_time.ms()),
                                    fmt::format("{:.3f}", point.burst.iteration_time.ms()),
                                    rate(point.data_parallel.foreground_samples_per_s),
                                    rate(point.burst.foreground_samples_per_s)};
    if (point.burst_background && point.data_parallel_background) {
      const sim::SimResult& multiplexed = point.burst_background->with_background;
      row.push_back(fmt::format("{:.3f}", multiplexed.iteration_time.ms()));
      row.push_back(rate(point.data_parallel_background->with_background.cluster_throughput));
      row.push_back(rate(multiplexed.cluster_throughput));
      row.push_back(fmt::format("{:.2f}x", multiplexed.cluster_throughput / point.data_parallel.cluster_throughput));
      row.push_back(fmt::format("{:.2f}", multiplexed.useful_fraction));
    }
    table.add_row(std::move(row));
  }
  table.print(out);
}

json sim_sweep_json(const SimSweepReport& report) {
  json points = json::array();
  for (const SimSweepPoint& point : report.points) {
    json entry = {{"devices", point.devices},
                  {"dp_iteration_time_ms", point.data_parallel.iteration_time.ms()},
                  {"burst_iteration_time_ms", point.burst.iteration_time.ms()},
                  {"dp_samples_per_s", point.data_parallel.foreground_samples_per_s},
                  {"burst_samples_per_s", point.burst.foreground_samples_per_s},
                  {"dp_useful_fraction", point.data_parallel.useful_fraction},
                  {"burst_useful_fraction", point.burst.useful_fraction},
                  {"dp_energy_j", point.data_parallel.energy.known ? json(point.data_parallel.energy.total_j) : json(nullptr)},
                  {"burst_energy_j", point.burst.energy.known ? json(point.burst.energy.total_j) : json(nullptr)}};
    if (point.burst_background && point.data_parallel_background) {
      const sim::SimResult& burst = point.burst_background->with_background;
      const sim::SimResult& dp = point.data_parallel_background->with_background;
      entry["burst_bg_iteration_time_ms"] = burst.iteration_time.ms();
      entry["burst_bg_foreground_slowdown"] = point.burst_background->foreground_slowdown;
      entry["burst_bg_background_samples_per_s"] = burst.background_samples_per_s;
      entry["burst_bg_cluster_throughput"] = burst.cluster_throughput;
      entry["burst_bg_useful_fraction"] = burst.useful_fraction;
      entry["dp_bg_iteration_time_ms"] = dp.iteration_time.ms();
      entry["dp_bg_cluster_throughput"] = dp.cluster_throughput;
      entry["gain_vs_dp"] = burst.cluster_throughput / point.data_parallel.cluster_throughput;
    }
    points.push_back(std::move(entry));
  }
  json background = nullptr;
  if (report.background) {
    background = {{"model", report.background->model},
                  {"per_device_batch", report.background->per_device_batch},
                  {"policy", policy_name(report.background->policy)}};
  }
  return {{"model", report.model},
          {"device", report.device_kind},
          {"global_batch", report.global_batch},
          {"batchnorm", program::batchnorm_mode_name(report.program)},
          {"background", std::move(background)},
          {"points", std::move(points)}};
}

std::vector<ScalingChart> sim_sweep_charts(const SimSweepReport& report) {
  ScalingChart time{"Iteration time (foreground)", "iteration ms", {{"data parallel", {}}, {"burst", {}}}};
  ScalingChart throughput{"Cluster throughput (foreground + background)", "samples/s",
                                {{"data parallel", {}}, {"burst", {}}}};
  if (report.background) {
    time.series.push_back({"burst + background", {}});
    throughput.series.push_back({"burst + background", {}});
    throughput.series.push_back({"data parallel + background", {}});
  }
  for (const SimSweepPoint& point : report.points) {
    time.series[0].points.emplace_back(point.devices, point.data_parallel.iteration_time.ms());
    time.series[1].points.emplace_back(point.devices, point.burst.iteration_time.ms());
    throughput.series[0].points.emplace_back(point.devices, point.data_parallel.cluster_throughput);
    throughput.series[1].points.emplace_back(point.devices, point.burst.cluster_throughput);
    if (point.burst_background && point.data_parallel_background) {
      time.series[2].points.emplace_back(point.devices, point.burst_background->with_background.iteration_time.ms());
      throughput.series[2].points.emplace_back(point.devices, point.burst_background->with_background.cluster_throughput);
      throughput.series[3].points.emplace_back(point.devices,
                                               point.data_parallel_background->with_background.cluster_throughput);
    }
  }
  return {time, throughput};
}

}  // namespace burst::cli
