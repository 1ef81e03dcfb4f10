#pragma once
// burst's own job model for `burst cluster-sim` (docs/cluster-sim.md, "Job models"): each
// application stands for a zoo model, and an iteration on N GPUs takes what burst's planner
// (the burst strategy) and evaluator predict for that model at the job's global batch on N
// devices of the cluster's kind, cached per (model, kind, devices, batch). A job holding GPUs
// of several kinds keeps its slowest kind's pace (as data parallelism does).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "burst/cluster_sim/job_model.h"
#include "command_inputs.h"

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

class PlannedTimer : public cluster_sim::IterationTimer {
 public:
  // `kinds`: the cluster's device kinds, as ClusterNodes::kinds index them.
  explicit PlannedTimer(std::vector<std::string> kinds) : kinds_(std::move(kinds)) {}
  cluster_sim::IterationTime time(const cluster_sim::ApplicationTable& application, int64_t batch,
                          const cluster_sim::Placement& placement) override;
  // The single-job simulator's figures for a guest in the host's idle time (one kind).
  std::optional<cluster_sim::SharedDevice> share(const cluster_sim::ApplicationTable& host, int64_t host_batch,
                                         const cluster_sim::Placement& placement, const cluster_sim::ApplicationTable& guest,
                                         int64_t guest_batch) override;
  double idle_power_w(int kind) const override;
  std::string name() const override { return "burst"; }
  size_t planned() const { return cache_.size(); }

 private:
  // What `use` gets: the plan of `application` at `batch` (in accumulation steps where no
  // plan fits memory at once) on `devices` of `kind`, with its context, while they live.
  using PlannedStep = std::function<void(const planner::ChosenPlan& chosen, const plan::PlanContext& context, int steps)>;
  void with_plan(const std::string& application, const std::string& kind, int devices, int64_t batch,
                 const PlannedStep& use) const;
  cluster_sim::IterationTime on_kind(const std::string& application, int kind, int devices, int64_t batch);
  cluster_sim::IterationTime plan_and_time(const std::string& application, const std::string& kind, int devices,
                                   int64_t batch) const;
  cluster_sim::SharedDevice simulate_share(const std::string& host, const std::string& kind, int devices, int64_t host_batch,
                                   const std::string& guest, int64_t guest_batch,
                                   double guest_alone_samples_per_s) const;

  std::vector<std::string> kinds_;
  std::map<std::tuple<std::string, std::string, int, int64_t>, cluster_sim::IterationTime> cache_;
  // (host, kind index, devices, host batch, guest, guest batch) -> what sharing does
  std::map<std::tuple<std::string, int, int, int64_t, std::string, int64_t>, cluster_sim::SharedDevice> shares_;
};

}  // namespace burst::cli
