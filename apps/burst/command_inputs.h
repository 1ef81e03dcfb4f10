#pragma once
// What `burst plan` and `burst sim` read from their command lines alike: the model, the
// cluster (built-in or a file), the cost model's device, the global batch and an optional
// plan file, each checked with a one-line reason before any planning.
#include <cstdint>
#include <memory>
#include <vector>
#include <optional>
#include <string>

#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/graph/graph.h"
#include "burst/planner/auto_planner.h"
#include "burst/planner/burst_planner.h"
#include "burst/planner/three_d_planner.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/program/step_memory.h"
#include "burst/program/program_options.h"

namespace CLI {
class App;
class Option;
}

namespace burst::cli {

// --batchnorm, --bucket-mb, --precision, --recompute and --zero: the step's
// program::ProgramOptions, taken by every command that makes or times a step (plan, sim,
// program, train) with the same words and defaults.
struct ProgramOptionsText {
  std::string batchnorm = "sync";
  std::string bucket_mb = default_bucket_mib();
  std::string precision;  // empty: the device kind's default (cost::default_precision)
  std::string recompute;  // empty or "auto": none, or the 3-D search's choice
  std::string zero;       // likewise: 0, or searched
  std::string clip_grad_norm = "0";  // 0: no clipping
  std::string power_cap = "0";       // watts per device; 0: none
  std::string fsdp_shard = "0";      // HSDP's shard group; 0: the whole data-parallel group
  std::string moe_imbalance = "1";   // expert parallelism: the busiest expert rank's tokens over the mean
  static std::string default_bucket_mib();  // ProgramOptions' default, in MiB
};
void add_program_options(CLI::App& command, ProgramOptionsText& options);
// UserError quoting the text for a bucket size that is not a positive number, an unknown
// precision or recompute, or a ZeRO stage outside 0..3. Without --precision, `precision`.
program::ProgramOptions parse_program_options(const ProgramOptionsText& options,
                                              cost::Precision precision = cost::Precision::Fp32);

// UserError naming the cap and the kind's range for a --power-cap below a kind's idle power or
// above its board maximum, or on a kind without a power model (0 passes).
void check_power_cap(const cluster::Cluster& cluster, double cap_w);

// Numbers arrive as text so that a bad one can be quoted as typed.
struct InputOptions {
  std::string command;  // "burst plan", for messages
  std::string model;
  std::string devices;
  std::string global_batch;
  std::string device;
  std::vector<std::string> profiles;  // --profile FILE, or --profile KIND=FILE per kind (repeatable)
  std::string cluster_file;
  std::string plan_file;  // evaluate this plan instead of planning
  std::string optimizer = "sgd";  // for the memory model: sgd, momentum or adam
  std::string device_memory;      // --device-memory GB; empty: the device kind's capacity
  ProgramOptionsText program;
  // --tensor-parallel, --pipeline-stages, --micro-batch-size, --schedule, --sequence-parallel: the 3-D search's
  // pins (empty: searched).
  std::string tensor_parallel, pipeline_stages, micro_batch_size, schedule;
  std::optional<bool> sequence_parallel;  // --sequence-parallel / --no-sequence-parallel; none: searched
  std::string virtual_stages;             // --virtual-stages V (the interleaved schedule); empty: searched
  std::string context_parallel;           // --context-parallel C (ring attention); empty: searched
  std::string expert_parallel;            // --expert-parallel E (moe layers' experts over E sample groups); empty: searched
};

// The pins above, which `burst plan` and `burst sim` share.
void add_shape_options(CLI::App& command, InputOptions& options);

// --strategy, a word of planner::kStrategyNames; `burst plan` and `burst sim` share it.
CLI::Option* add_strategy_option(CLI::App& command, planner::Strategy& strategy);
// Options whose value is text: UserError for one given as '' (rather than read as "not given").
void refuse_empty_values(const std::vector<CLI::Option*>& text_options);

// --optimizer and --device-memory, which `burst plan` and `burst sim` share.
void add_memory_options(CLI::App& command, InputOptions& options);

// A whole number in [minimum, maximum] given to `flag`; anything else is refused quoting it.
int64_t parse_whole(const std::string& text, const char* flag, int64_t minimum, int64_t maximum);

// A finite decimal number >= minimum given to `flag`; otherwise UserError
// "FLAG must be EXPECTED, got 'TEXT'".
double parse_finite(const std::string& text, const char* flag, double minimum, const char* expected);

// --amplification: a finite number >= 1, or "inf" for no limit (nullopt).
std::optional<double> parse_amplification(const std::string& text);

// An amplification limit as the report states it (nullopt: none).
std::optional<double> limit_of(double amplification);

// The burst planner's options for a limit (nullopt: none); `strict` keeps it even where data
// parallelism is then faster.
planner::BurstOptions burst_options(const std::optional<double>& limit, bool strict);

// --profile as given for a cluster of one kind `kind` (empty: not yet known): the one FILE or
// KIND=FILE. UserError for several profiles of one kind or one for another kind.
std::optional<std::string> profile_path(const InputOptions& options, const std::string& kind = "");

// --profile, repeatable: FILE (a cluster of one kind) or KIND=FILE (one per kind of a mixed
// cluster). Registers the option; `texts` gains nothing (empty values are refused here).
CLI::Option* add_profile_option(CLI::App& command, std::vector<std::string>& profiles);

// A background job as `--background` names it: "MODEL" or "MODEL:B". MODEL is a zoo spec
// (which may hold its own ':' options) or a file; a last ':' followed by digits only is the
// per-device batch B, in [1, 2^20]; without one, `default_batch`. UserError otherwise.
struct ModelAndBatch {
  std::string model;
  int64_t batch = 0;
};
ModelAndBatch parse_background_option(const std::string& text, int64_t default_batch);

// What the command line names, read and checked before any planning.
struct Inputs {
  // The model, the plan file and the cluster are read first; the rest is set by name.
  Inputs(graph::Graph graph_, std::optional<plan::Plan> loaded_, cluster::Cluster cluster_)
      : graph(std::move(graph_)), loaded(std::move(loaded_)), cluster(std::move(cluster_)) {}
  const plan::Plan* given_plan() const { return loaded ? &*loaded : nullptr; }  // planner::choose_plan's `given`

  graph::Graph graph;
  std::optional<plan::Plan> loaded;  // --plan FILE, validated against graph and cluster
  cluster::Cluster cluster;
  // The reference device: the only kind's, or on a mixed cluster the fastest kind's (what
  // one-device times and peak FLOP/s in reports are of).
  cost::DeviceModel device;
  // Mixed clusters: every kind's device model by the cluster's kind index (empty: one kind),
  // and the reference's index.
  std::vector<cost::DeviceModel> kind_devices;
  int reference_kind = 0;
  int64_t global_batch = 0;
  cost::Optimizer optimizer = cost::Optimizer::Sgd;
  program::MemoryCapacity capacity;  // per device: --device-memory, else the device kind's
  program::ProgramOptions program;   // the step: --precision defaults to the device kind's
  planner::ShapePins pins;           // what --strategy 3d does not search
};

// The cost models of the inputs' devices at `precision`, and the planning context over them:
// one model, or one per kind of a mixed cluster with the reference kind's as
// PlanContext::cost. Keep it alive while the context is used.
struct CostModels {
  std::vector<std::unique_ptr<cost::CostModel>> models;  // by kind index (one: the only kind)
  int reference = 0;
  const cost::CostModel& reference_model() const { return *models[static_cast<size_t>(reference)]; }
  plan::PlanContext context(const graph::Graph& graph, const cost::NetworkModel& network) const;
};
CostModels make_cost_models(const Inputs& inputs, cost::Precision precision);

// Each kind's memory per device in bytes, by kind index, for BurstOptions::memory_of_kind
// (empty on a cluster of one kind).
std::vector<double> memory_of_kind(const Inputs& inputs);

// Cheap checks first, the device (fitting its curves takes a while) last. The cluster is
// --cluster FILE, or the built-in one of the device kind with --devices (or, with --plan and
// no --devices, the plan's device count).
Inputs read_inputs(const InputOptions& options);

// The planner's options for the inputs: their step, memory, optimizer and pins, with the
// burst search's amplification rule and knobs from `burst`.
planner::AutoPlanOptions plan_options(const Inputs& inputs, const planner::BurstOptions& burst);


// "peak memory per device" as the reports print it: the peak rank's needs against the
// capacity, and whether they fit.
std::string memory_summary(const planner::ChosenPlan& chosen, const Inputs& inputs);

}  // namespace burst::cli
