#pragma once
// burst's own job model for `burst cluster-sim` (docs/cluster-sim.md, "Job models"): each
// application stands for a zoo model, and an iteration on N GPUs takes what burst's planner
// (the burst strategy) and evaluator predict for that model at the job's global batch on N
// devices of the cluster's kind, cached per (model, kind, devices, batch). A job holding GPUs
// of several kinds keeps its slowest kind's pace (as data parallelism does).
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "burst/sim/job_model.h"

namespace burst::cli {

// The zoo model an application stands for; UserError for an application without one.
std::string burst_model_of(const std::string& application);
// The table of them, for the docs and --help: {application, zoo spec, why}.
struct ApplicationModel {
  const char* application;
  const char* model;
  const char* note;
};
const std::vector<ApplicationModel>& application_models();

class PlannedTimer : public sim::IterationTimer {
 public:
  // `kinds`: the cluster's device kinds, as ClusterNodes::kinds index them.
  explicit PlannedTimer(std::vector<std::string> kinds) : kinds_(std::move(kinds)) {}
  sim::IterationTime time(const sim::ApplicationTable& application, int64_t batch,
                          const sim::Placement& placement) override;
  double idle_power_w(int kind) const override;
  std::string name() const override { return "burst"; }
  size_t planned() const { return cache_.size(); }

 private:
  sim::IterationTime on_kind(const std::string& application, int kind, int devices, int64_t batch);
  sim::IterationTime plan_and_time(const std::string& application, const std::string& kind, int devices,
                                   int64_t batch) const;

  std::vector<std::string> kinds_;
  std::map<std::tuple<std::string, std::string, int, int64_t>, sim::IterationTime> cache_;
};

}  // namespace burst::cli
