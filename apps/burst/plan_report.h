#pragma once
// What `burst plan` prints: the per-layer table and summary of one plan, or a strong-scaling
// sweep, as text or JSON.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "burst/cluster/cluster.h"
#include "burst/graph/graph.h"
#include "burst/planner/step_terms.h"
#include "burst/timing/evaluate.h"
#include "burst/plan/plan.h"
#include "burst/program/step_memory.h"
#include "command_inputs.h"
#include "energy_report.h"
#include "mixed_report.h"

namespace burst::cli {

// One plan, evaluated, with the two baselines on the same model, cluster and cost model.
// What `burst plan` timed: the plan itself and the two baselines it is compared with.
struct PlanEvaluations {
  timing::PlanEvaluation evaluation;
  timing::PlanEvaluation data_parallel;  // plan_data_parallel on all devices
  timing::PlanEvaluation one_device;     // plan_single_device
  std::optional<planner::StepTerms> terms;  // 3-D plans: what the step's time is made of
};

// Everything `burst plan` prints about one plan. The subject and its evaluations are set at
// construction; every other field is set by name (and left at its default when absent).
struct PlanReport {
  PlanReport(const graph::Graph& graph_, const cluster::Cluster& cluster_, const plan::Plan& plan_,
             const PlanEvaluations& evaluations)
      : graph(graph_),
        cluster(cluster_),
        plan(plan_),
        evaluation(evaluations.evaluation),
        data_parallel(evaluations.data_parallel),
        one_device(evaluations.one_device),
        terms(evaluations.terms) {}

  const graph::Graph& graph;
  const cluster::Cluster& cluster;
  const plan::Plan& plan;
  // The burst planner's amplification limit; nullopt when there is none (inf, data
  // parallelism, a plan loaded from a file).
  std::optional<double> amplification_limit = std::nullopt;
  std::string plan_file;  // --plan FILE it was loaded from; empty when planned here
  const timing::PlanEvaluation& evaluation;
  const timing::PlanEvaluation& data_parallel;
  const timing::PlanEvaluation& one_device;
  const std::optional<planner::StepTerms>& terms;
  // What the burst planner reported with its plan (empty for other plans): the limit it
  // planned under (it raises the asked one rather than be slower than data parallelism;
  // nullopt: none) and its own prediction (an estimate where branches run concurrently).
  std::optional<double> amplification_limit_used = std::nullopt;
  std::optional<Seconds> planner_prediction = std::nullopt;
  // Layers whose one-device time at the global batch is under this were exempt from the
  // limit (the burst planner's threshold; nullopt for other plans).
  std::optional<Seconds> amplification_exempt_below = std::nullopt;
  // Memory per rank (plan_memory.h), its one-line summary, and why the plan is not the
  // strategy's own (a burst plan over capacity replaced by data parallelism), if it is not.
  const std::vector<program::DeviceMemory>* memory = nullptr;
  std::string memory_line;
  std::string memory_note;
  Bytes memory_capacity;  // per device
  const std::vector<planner::StrategyTried>* tried = nullptr;  // --strategy auto: what each strategy gave
  // One device's peak FLOP/s, for the model FLOPs utilisation (0: not reported).
  double peak_flops = 0;
  // The step the plan runs (its recomputation for the hardware FLOPs utilisation, its ZeRO
  // stage, FSDP shard and precision for the parallelism line).
  program::ProgramOptions program;
  // A mixed cluster: the plan per kind and the baselines (null: one kind).
  const MixedSummary* mixed = nullptr;
  // --objective energy: the clocks chosen (null: time objective); --pareto: the frontier.
  const ClockReport* clocks = nullptr;
  const std::vector<planner::FrontierPoint>* frontier = nullptr;
};

// {"micro_batches", "micro_batch", "schedule", "stages": [{"first_layer", "ranks"}]}, or
// null for one micro-batch on one stage.
nlohmann::json pipeline_json(const plan::Plan& plan);
// "dp 12.345 ms, burst 10.000 ms, pipeline does not fit (...)": what --strategy auto tried.
std::string strategies_text(const std::vector<planner::StrategyTried>& tried);

// The layer that runs on the most devices sets how many devices the plan uses.
int devices_used(const plan::Plan& plan);

// A header line, the per-layer table and the summary (iteration time, device-seconds, idle
// device-seconds, amplification, speedups over data parallelism and one device).
void print_plan_report(const PlanReport& report, std::ostream& out);

// {"model", "devices", "device", "cluster", "global_batch", "strategy", "amplification_limit"
//  (null: none), "amplification_limit_used" (null: none), "planner_predicted_ms" (null: not
//  planned here by burst), "amplification_exempt_below_ms" (null: not planned here by burst),
//  "max_amplification" and "max_amplification_limited" (of layers the limit applied to), "plan_file" (null: planned here), "iteration_time_ms", "device_seconds",
//  "idle_device_seconds", "mean_amplification", "devices_used", "data_parallel_ms",
//  "one_device_ms", "speedup_vs_dp", "speedup_vs_one_device", "layers": [{id, name, op,
//  devices, first_rank, per_device_batch, forward_ms, backward_ms, transfer_ms, sync_ms,
//  amplification, exempt (from the amplification limit), forward_start_ms, forward_end_ms, backward_start_ms, backward_end_ms,
//  sync_end_ms}], "memory": {"peak_rank", "peak_bytes", "capacity_bytes", "fits", "note",
//  "per_device": [{rank, weights, gradients, optimizer_state, activations, total} in bytes]},
//  "pipeline" (pipeline_json), "strategies_tried" (--strategy auto: [{strategy,
//  iteration_time_ms (null: none), why_not, pipeline (pipeline_text, null: none)}], else
//  null)};
//  times of day in ms from the start of the iteration.
nlohmann::json plan_report_json(const PlanReport& report);

// One device count of a strong-scaling sweep: both strategies on a built-in cluster.
struct SweepPoint {
  int devices = 0;
  timing::PlanEvaluation data_parallel;
  timing::PlanEvaluation burst;
  int burst_devices_used = 0;
  std::optional<double> burst_limit_used;  // the limit the planner planned under (nullopt: none)
  // Whether each plan fits the devices' memory (the sweep shows both plans either way).
  bool data_parallel_fits = true;
  bool burst_fits = true;
};

struct SweepReport {
  std::string model;
  std::string device_kind;
  int64_t global_batch = 0;
  std::optional<double> amplification_limit;  // nullopt: none
  std::vector<SweepPoint> points;             // ascending device counts
};

// Device counts of a sweep up to `devices`: every count up to 16, then the powers of two
// below `devices`, then `devices` itself.
std::vector<int> sweep_device_counts(int devices);

// A header line saying which counts were swept, then one row per count.
void print_sweep_report(const SweepReport& report, std::ostream& out);

// An array, one object per count: {devices, dp_iteration_time_ms, burst_iteration_time_ms,
// speedup_vs_dp, dp_device_seconds, burst_device_seconds, dp_idle_device_seconds,
// burst_idle_device_seconds, burst_mean_amplification, burst_devices_used,
// burst_amplification_limit_used}.
nlohmann::json sweep_report_json(const SweepReport& report);

// "2", "1.5", "2.085" (four significant digits) or "none" (no limit).
std::string amplification_text(const std::optional<double>& limit);

}  // namespace burst::cli
