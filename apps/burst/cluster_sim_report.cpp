#include "cluster_sim_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "burst/util/table.h"

namespace burst::cli {
namespace {

using Align = TextTable::Align;

std::string seconds_text(double s) {
  if (s >= 86400 * 2) return fmt::format("{:.1f} d", s / 86400);
  if (s >= 7200) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.0f} s", s);
}

nlohmann::json result_json(const cluster_sim::MultiTenantResult& result, bool with_jobs) {
  nlohmann::json out = {{"policy", result.policy},
                        {"avg_jct_s", result.avg_jct_s},
                        {"p99_jct_s", result.p99_jct_s},
                        {"makespan_s", result.makespan_s},
                        {"utilisation", result.utilisation},
                        {"throughput", result.throughput},
                        {"jobs_per_hour", result.jobs_per_hour},
                        {"jobs_done", result.jobs.size()},
                        {"skipped_oversized", result.skipped_oversized}};
  out["energy_j"] = result.energy_j >= 0 ? nlohmann::json(result.energy_j) : nlohmann::json(nullptr);
  if (with_jobs) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const cluster_sim::JobOutcome& job : result.jobs) {
      jobs.push_back({{"name", job.name}, {"application", job.application}, {"gpus_asked", job.gpus_asked},
                      {"gpus_most", job.gpus_most}, {"submit_s", job.submit_s}, {"start_s", job.start_s},
                      {"finish_s", job.finish_s}, {"jct_s", job.jct_s()}, {"restarts", job.restarts},
                      {"gpu_seconds", job.gpu_seconds}, {"background_s", job.background_seconds}});
    }
    out["jobs"] = std::move(jobs);
  }
  return out;
}

}  // namespace

std::string cluster_sim_text(const ClusterSimSetting& setting, const std::vector<cluster_sim::MultiTenantResult>& results) {
  std::string text = fmt::format(
      "trace: {} ({} format, {} jobs) on {} GPUs ({} nodes x {} {})\n"
      "job model: {}; scheduling round {:g} s, restart {:g} s\n",
      setting.trace, setting.format, setting.jobs, setting.gpus, setting.nodes, setting.gpus_per_node, setting.device,
      setting.job_model, setting.interval_s, setting.restart_s);
  TextTable table({{"policy", Align::Left}, {"avg JCT", Align::Right}, {"p99 JCT", Align::Right},
                   {"makespan", Align::Right}, {"utilisation", Align::Right}, {"samples/s", Align::Right},
                   {"jobs/h", Align::Right}, {"energy", Align::Right}});
  for (const cluster_sim::MultiTenantResult& result : results) {
    table.add_row({result.policy, fmt::format("{:.0f} s", result.avg_jct_s), seconds_text(result.p99_jct_s),
                   seconds_text(result.makespan_s), fmt::format("{:.1f}%", 100 * result.utilisation),
                   fmt::format("{:.0f}", result.throughput), fmt::format("{:.1f}", result.jobs_per_hour),
                   result.energy_j >= 0 ? fmt::format("{:.1f} kWh", result.energy_j / 3.6e6) : "-"});
  }
  std::ostringstream rendered;
  table.print(rendered);
  text += rendered.str();
  for (const cluster_sim::MultiTenantResult& result : results) {
    if (result.skipped_oversized > 0) {
      text += fmt::format("{}: {} jobs asking for more than {} GPUs left out\n", result.policy,
                          result.skipped_oversized, result.gpus);
    }
  }
  return text;
}

std::string cluster_sim_events_csv(const std::vector<cluster_sim::MultiTenantResult>& results) {
  std::string csv = "policy,time_s,job,event,gpus\n";
  for (const cluster_sim::MultiTenantResult& result : results) {
    for (const cluster_sim::ClusterEvent& event : result.events) {
      csv += fmt::format("{},{:.3f},{},{},{}\n", result.policy, event.time_s, result.jobs[event.job].name,
                         cluster_sim::cluster_event_name(event.kind), event.gpus);
    }
  }
  return csv;
}

nlohmann::json cluster_sim_json(const ClusterSimSetting& setting, const std::vector<cluster_sim::MultiTenantResult>& results,
                                bool with_jobs) {
  nlohmann::json out = {{"trace", setting.trace},         {"format", setting.format},
                        {"jobs", setting.jobs},           {"gpus", setting.gpus},
                        {"nodes", setting.nodes},         {"gpus_per_node", setting.gpus_per_node},
                        {"device", setting.device},       {"job_model", setting.job_model},
                        {"interval_s", setting.interval_s}, {"restart_s", setting.restart_s}};
  nlohmann::json policies = nlohmann::json::array();
  for (const cluster_sim::MultiTenantResult& result : results) policies.push_back(result_json(result, with_jobs));
  // One policy: its figures at the top level too.
  if (results.size() == 1) {
    for (const auto& [key, value] : policies[0].items()) {
      if (key != "jobs") out[key] = value;
    }
  }
  out["policies"] = std::move(policies);
  return out;
}

}  // namespace burst::cli
