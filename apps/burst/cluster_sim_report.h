#pragma once
// What `burst cluster-sim` prints: a table of the policies' figures, their JSON, and an SVG
// of each policy's JCT distribution and GPUs held over time.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "burst/cluster_sim/multi_tenant.h"

namespace burst::cli {

struct ClusterSimSetting {
  std::string trace;
  std::string format;
  size_t jobs = 0;
  int gpus = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  std::string device;
  std::string job_model;
  double interval_s = 0;
  double restart_s = 0;
};

std::string cluster_sim_text(const ClusterSimSetting& setting, const std::vector<cluster_sim::MultiTenantResult>& results);
nlohmann::json cluster_sim_json(const ClusterSimSetting& setting, const std::vector<cluster_sim::MultiTenantResult>& results,
                                bool with_jobs);
std::string cluster_sim_svg(const ClusterSimSetting& setting, const std::vector<cluster_sim::MultiTenantResult>& results);
// Every policy's events as CSV: policy,time_s,job,event,gpus.
std::string cluster_sim_events_csv(const std::vector<cluster_sim::MultiTenantResult>& results);

}  // namespace burst::cli
