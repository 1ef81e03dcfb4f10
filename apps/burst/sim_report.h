#pragma once
// What `burst sim` prints: one simulated plan (with or without a background job), or a
// strong-scaling sweep of data parallelism and burst, alone and multiplexed; as text or JSON.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "burst/cluster/cluster.h"
#include "burst/plan/plan.h"
#include "plan_svg.h"
#include "burst/sim/simulator.h"

#include "mixed_report.h"

namespace burst::cli {

// The background job as the command line names it.
struct BackgroundSpec {
  std::string model;  // zoo spec or model file
  int64_t per_device_batch = 0;
  sim::BackgroundPolicy policy = sim::BackgroundPolicy::FitIdleGaps;
};

// Everything `burst sim` prints. What was simulated is set at construction; every other
// field by name.
struct SimReport {
  SimReport(const cluster::Cluster& cluster_, const plan::Plan& plan_, const sim::SimResult& foreground_)
      : cluster(cluster_), plan(plan_), foreground(foreground_) {}

  std::string model;
  const cluster::Cluster& cluster;
  const plan::Plan& plan;
  std::string plan_source;  // "burst plan (amplification limit 2)", "plan file x.json", ...
  program::ProgramOptions program;  // the step simulated
  Seconds evaluator_time;                  // the planner's prediction of the same plan
  const sim::SimResult& foreground;        // the plan alone
  std::optional<BackgroundSpec> background = std::nullopt;
  const sim::MultiplexResult* multiplexed = nullptr;  // with the background job
  bool intervals = false;                  // idle intervals in the JSON
  std::string memory;                      // the peak rank's memory against the capacity
  const MixedSummary* mixed = nullptr;     // a mixed cluster: the plan per kind (no baselines)
};

void print_sim_report(const SimReport& report, std::ostream& out);
// The cluster in joules: samples per joule with the background job against leaving the
// foreground's idle time idle (docs/energy.md, "Filling idle time").
void print_cluster_energy(const sim::MultiplexResult& multiplexed, std::ostream& out);

// {"model", "device", "cluster", "devices", "global_batch", "strategy", "plan_source",
//  "batchnorm", "memory" (the peak rank's memory against the capacity, one line), "iteration_time_ms" (with the background job, if any), "iteration_time_alone_ms",
//  "evaluator_iteration_time_ms", "foreground_samples_per_s", "background_samples_per_s",
//  "cluster_throughput", "useful_fraction", "busy_fraction", "foreground_slowdown",
//  "background": null or {"model", "per_device_batch", "step_alone_ms", "alone_samples_per_s",
//  "idle_time_efficiency"}, "per_device": [{"rank", "foreground_ms", "background_ms",
//  "communication_ms", "idle_ms", "idle_intervals_ms" (with --intervals)}]} with per-device
//  times per step.
nlohmann::json sim_report_json(const SimReport& report);

// One device count of a sweep.
struct SimSweepPoint {
  int devices = 0;
  sim::SimResult data_parallel;
  sim::SimResult burst;
  std::optional<sim::MultiplexResult> data_parallel_background;
  std::optional<sim::MultiplexResult> burst_background;
};

struct SimSweepReport {
  std::string model;
  std::string device_kind;
  int64_t global_batch = 0;
  program::ProgramOptions program;  // the step simulated
  std::optional<BackgroundSpec> background;
  std::vector<SimSweepPoint> points;
};

void print_sim_sweep(const SimSweepReport& report, std::ostream& out);
nlohmann::json sim_sweep_json(const SimSweepReport& report);
// Two charts: iteration time, and cluster throughput (samples/s), against devices.
std::vector<ScalingChart> sim_sweep_charts(const SimSweepReport& report);

const char* policy_name(sim::BackgroundPolicy policy);

}  // namespace burst::cli
