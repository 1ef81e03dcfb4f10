#include "plan_commands.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/cost/network.h"
#include "burst/graph/model_json.h"
#include "burst/planner/burst_planner.h"
#include "burst/timing/evaluate.h"
#include "burst/plan/plan.h"
#include "energy_report.h"
#include "plan_svg.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"
#include "command_inputs.h"
#include "plan_report.h"
#include "model_option.h"
#include "gpu_sweep_report.h"
#include "burst/graph/language_model.h"

namespace burst::cli {
namespace {

// Numbers arrive as text so that a bad one can be quoted as typed.
struct PlanOptions : InputOptions {
  planner::Strategy strategy = planner::Strategy::Burst;
  std::string amplification;  // empty: the burst planner's default
  std::string exempt_ms;      // --amplification-exempt-ms; empty: the planner's default
  std::string output;         // -o: write the plan file
  std::string svg;            // write pictures
  bool json = false;
  std::string objective = "time";  // or energy (docs/energy.md)
  std::string max_slowdown = "0.01";
  bool pareto = false;
  bool sweep = false;
  bool strict_amplification = false;  // keep the limit even when data parallel is faster
};

// Refuses combinations that have no meaning, before any file is read.
void check_energy_options(const PlanOptions& options) {
  if (options.objective != "time" && options.objective != "energy") {
    throw UserError(fmt::format("--objective must be time or energy, got '{}'", options.objective));
  }
  parse_finite(options.max_slowdown, "--max-slowdown", 0, "a number >= 0 (0.01: at most 1% slower)");  // refused early
  if ((options.objective == "energy" || options.pareto) && options.sweep) {
    throw UserError("--objective energy and --pareto choose one plan's clocks; --sweep takes neither");
  }
}

void check_combinations(const PlanOptions& options, bool strategy_given) {
  check_energy_options(options);
  const bool loaded = !options.plan_file.empty();
  if (loaded && (strategy_given || !options.amplification.empty() || !options.exempt_ms.empty() || options.sweep)) {
    throw UserError(
        "--plan FILE evaluates a given plan: it takes no --strategy, --amplification, --amplification-exempt-ms or "
        "--sweep");
  }
  if (options.strategy == planner::Strategy::DataParallel &&
      (!options.amplification.empty() || !options.exempt_ms.empty() || options.strict_amplification)) {
    throw UserError("--amplification limits the burst planner; --strategy dp has no limit");
  }
  if (loaded && options.strict_amplification) {
    throw UserError("--plan FILE evaluates a given plan: it takes no --strict-amplification");
  }
  if (!options.cluster_file.empty() && !options.device.empty()) {
    throw UserError("--cluster FILE names its device kind: give --device or --cluster, not both");
  }
  if (options.sweep && !options.cluster_file.empty()) {
    throw UserError(
        "--sweep plans built-in clusters of 1..N devices and cannot use --cluster FILE; "
        "sweep with --device KIND --devices N");
  }
  if (options.sweep && !options.output.empty()) {
    throw UserError("--sweep makes one plan per device count: -o FILE (one plan) does not apply");
  }
  if (options.cluster_file.empty() && options.device.empty() && options.profiles.empty() && options.devices.find(':') == std::string::npos) {
    throw UserError("burst plan needs --device KIND [--profile FILE] or --cluster FILE");
  }
}

// The burst planner's options from the command line: limit, strictness, exemption.
planner::BurstOptions planner_options(const PlanOptions& options, const Inputs& inputs,
                                      const std::optional<double>& limit) {
  planner::BurstOptions burst = burst_options(limit, options.strict_amplification);
  burst.program = inputs.program;  // plan the step the runtime will run
  burst.memory_of_kind = memory_of_kind(inputs);
  if (!options.exempt_ms.empty()) {
    burst.amplification_exempt_below =
        Seconds::from_ms(parse_finite(options.exempt_ms, "--amplification-exempt-ms", 0, "a time >= 0 in ms"));
  }
  return burst;
}

// Whether `plan` fits the inputs' devices (plan_memory.h).
bool fits_memory(const plan::Plan& plan, const Inputs& inputs) {
  const std::vector<program::DeviceMemory> memory = program::plan_memory(plan, inputs.graph, inputs.optimizer, inputs.program);
  return program::fits(memory, inputs.capacity);
}

// A language model's sweep: "how many GPUs?", each count's best plan of the strategy.
void run_language_sweep(const PlanOptions& options, const Inputs& inputs, const cost::CostModel& cost,
                        const planner::BurstOptions& burst) {
  GpuSweepReport report;
  report.model = inputs.graph.name();
  report.device_kind = inputs.cluster.device();
  report.global_batch = inputs.global_batch;
  report.tokens_per_sample = graph::sequence_length(inputs.graph).value_or(0);
  const double peak = cost::at_precision(inputs.device.spec, inputs.program.precision).peak_flops;
  report.points = planner::sweep_gpu_counts(
      inputs.graph, cost, report.device_kind, planner::gpu_sweep_counts(inputs.cluster.size()), inputs.global_batch,
      options.strategy, plan_options(inputs, burst), peak,
      [](int count) { std::cerr << fmt::format("burst plan --sweep: {} GPUs\n", count); });
  if (options.json) {
    std::cout << gpu_sweep_report_json(report).dump(2) << '\n';
    return;
  }
  print_gpu_sweep_report(report, std::cout);
}

void run_sweep(const PlanOptions& options, const Inputs& inputs, const graph::Graph& graph, const std::string& kind,
               int devices, int64_t global_batch, const cost::CostModel& cost, const planner::BurstOptions& burst) {
  if (graph::sequence_length(graph)) return run_language_sweep(options, inputs, cost, burst);
  SweepReport report;
  report.model = graph.name();
  report.device_kind = kind;
  report.global_batch = global_batch;
  report.amplification_limit = limit_of(burst.amplification);
  for (const int count : sweep_device_counts(devices)) {
    const cost::NetworkModel network(cluster::builtin_cluster(kind, count));
    const plan::PlanContext context{graph, cost, network, {}, plan::catalog_kind_power(network.cluster())};
    SweepPoint point;
    point.devices = count;
    timing::EvaluateOptions evaluate_options;
    evaluate_options.program = burst.program;
    const plan::Plan data_parallel = plan::plan_data_parallel(graph, count, global_batch);
    point.data_parallel = timing::evaluate_plan(data_parallel, context, evaluate_options);
    point.data_parallel_fits = fits_memory(data_parallel, inputs);
    const planner::BurstPlanResult result = planner::plan_burst_with_prediction(context, global_batch, burst);
    point.burst_fits = fits_memory(result.plan, inputs);
    point.burst = timing::evaluate_plan(result.plan, context, evaluate_options);
    point.burst_devices_used = devices_used(result.plan);
    point.burst_limit_used = limit_of(result.amplification_limit);
    report.points.push_back(std::move(point));
  }
  if (!options.svg.empty()) {
    std::vector<ScalingPoint> points;
    for (const SweepPoint& point : report.points) {
      points.push_back({point.devices, point.data_parallel.iteration_time, point.burst.iteration_time});
    }
    write_text_file_atomically(
        options.svg,
        render_scaling_svg(
            fmt::format("{}: iteration time against devices, global batch {} on {} "
                        "(burst amplification limit {})",
                        graph.name(), global_batch, kind, amplification_text(report.amplification_limit)),
            points));
  }
  if (options.json) {
    std::cout << sweep_report_json(report).dump(2) << '\n';
    return;
  }
  print_sweep_report(report, std::cout);
  if (!options.svg.empty()) std::cout << "\nwrote the scaling curve to " << options.svg << '\n';
}

planner::ClockSearchOptions clock_search_options(const program::ProgramOptions& program, const std::string& max_slowdown) {
  planner::ClockSearchOptions search;
  search.program = program;
  search.max_slowdown = parse_finite(max_slowdown, "--max-slowdown", 0, "a number >= 0 (0.01: at most 1% slower)");
  return search;
}

// --objective energy: the planner's choice among the plans the strategy tried that fit,
// with its clocks in the report; `chosen` becomes that plan.
ClockReport choose_for_energy(planner::ChosenPlan& chosen, const plan::PlanContext& context, const std::string& max_slowdown) {
  ClockReport report;
  static_cast<planner::EnergyChoice&>(report) =
      planner::choose_for_energy(chosen, context, clock_search_options(program::ProgramOptions{}, max_slowdown));
  report.clock_groups = describe_clocks(report.choice.plan.rank_clocks_mhz);
  return report;
}

// One plan and everything timed about it: the strategy's choice, its clocks under
// --objective energy, its clock frontier under --pareto, and the two baselines.
struct PlannedOne {
  planner::ChosenPlan chosen;
  std::optional<ClockReport> clocks;
  std::optional<std::vector<planner::FrontierPoint>> frontier;
  PlanEvaluations evaluations;
  std::optional<MixedSummary> mixed;

  const plan::Plan& timed() const { return clocks ? clocks->choice.plan : chosen.plan; }
};

PlanEvaluations evaluate_with_baselines(const plan::Plan& plan, const plan::PlanContext& context, const Inputs& inputs,
                                        const program::ProgramOptions& program, bool timelines) {
  timing::EvaluateOptions baseline_options;
  baseline_options.program = inputs.program;
  const graph::Graph& graph = inputs.graph;
  const int devices = inputs.cluster.size();
  // HSDP's shard groups are the plan's: the baselines shard fully where those do not apply
  // to data parallelism over every device (a shard of 1 under context parallelism, one
  // that does not divide the devices).
  int& shard = baseline_options.program.fsdp_shard;
  if (shard < 2 || devices % shard != 0) shard = 0;
  PlanEvaluations evaluations;
  evaluations.data_parallel = timing::evaluate_plan(plan::plan_data_parallel(graph, devices, inputs.global_batch),
                                                    context, baseline_options);
  evaluations.one_device = timing::evaluate_plan(plan::plan_single_device(graph, devices, inputs.global_batch),
                                                 context, baseline_options);
  timing::EvaluateOptions plan_options;
  plan_options.timelines = timelines;
  plan_options.program = program;  // the 3-D search's recompute and ZeRO stage
  evaluations.evaluation = timing::evaluate_plan(plan, context, plan_options);
  if (plan.strategy == "3d") evaluations.terms = planner::step_terms(plan, context, program, evaluations.evaluation);
  return evaluations;
}

PlannedOne plan_one(const PlanOptions& options, const Inputs& inputs, const plan::PlanContext& context,
                    const planner::BurstOptions& burst) {
  PlannedOne planned;
  planned.chosen =
      planner::choose_plan(context, inputs.global_batch, options.strategy, plan_options(inputs, burst), inputs.given_plan());
  if (options.objective == "energy") planned.clocks = choose_for_energy(planned.chosen, context, options.max_slowdown);
  const program::ProgramOptions& program = planned.chosen.program;
  if (options.pareto) {
    planned.frontier = planner::clock_frontier(planned.chosen.plan, context, clock_search_options(program, options.max_slowdown));
  }
  planned.evaluations = evaluate_with_baselines(planned.timed(), context, inputs, program, !options.svg.empty());
  if (inputs.cluster.mixed()) {
    planner::BurstOptions mixed_options = burst;
    mixed_options.program = program;
    const auto& chosen = planned.chosen;
    planned.mixed = summarise_mixed(context, chosen.plan, planned.evaluations.evaluation.iteration_time, mixed_options,
                                    chosen.burst ? chosen.burst->mixed_baselines : std::nullopt);
  }
  return planned;
}

// -o FILE and --svg FILE.
void write_plan_files(const PlanOptions& options, const Inputs& inputs, const PlannedOne& planned) {
  if (!options.output.empty()) {
    plan::Plan saved = planned.timed();
    if (inputs.cluster.mixed()) {  // the file says which kind each rank was planned as
      saved.rank_kinds.clear();
      for (int rank = 0; rank < inputs.cluster.size(); ++rank) saved.rank_kinds.push_back(inputs.cluster.kind_of(rank));
    }
    plan::save_plan_file(saved, options.output);
  }
  if (options.svg.empty()) return;
  const std::string title = fmt::format("{} on {}: time-energy frontier", inputs.graph.name(), inputs.cluster.name());
  write_text_file_atomically(options.svg, planned.frontier ? render_frontier_svg(title, *planned.frontier)
                                                           : render_plan_svg(planned.chosen.plan,
                                                                             planned.evaluations.evaluation, inputs.graph));
}

PlanReport report_of(const PlannedOne& planned, const Inputs& inputs, const PlanOptions& options,
                     const planner::BurstOptions& burst, const std::optional<double>& limit) {
  const planner::ChosenPlan& chosen = planned.chosen;
  PlanReport report(inputs.graph, inputs.cluster, planned.timed(), planned.evaluations);
  report.plan_file = options.plan_file;
  if (chosen.burst) {
    report.amplification_limit = limit;
    report.amplification_limit_used = limit_of(chosen.burst->amplification_limit);
    report.planner_prediction = chosen.burst->predicted;
    report.amplification_exempt_below = burst.amplification_exempt_below;
  }
  report.memory = &chosen.memory;
  report.memory_line = memory_summary(chosen, inputs);
  report.memory_note = chosen.memory_note;
  report.memory_capacity = inputs.capacity.capacity;
  report.tried = &chosen.tried;
  report.peak_flops = cost::at_precision(inputs.device.spec, inputs.program.precision).peak_flops;
  report.program = chosen.program;
  report.mixed = planned.mixed ? &*planned.mixed : nullptr;
  report.clocks = planned.clocks ? &*planned.clocks : nullptr;
  report.frontier = planned.frontier ? &*planned.frontier : nullptr;
  return report;
}

// One plan: made here (by the strategy) or loaded, evaluated against both baselines.
void run_one(const PlanOptions& options, const Inputs& inputs, const CostModels& models,
             const std::optional<double>& limit) {
  const cost::NetworkModel network(inputs.cluster);
  const plan::PlanContext context = models.context(inputs.graph, network);
  const planner::BurstOptions burst = planner_options(options, inputs, limit);
  const PlannedOne planned = plan_one(options, inputs, context, burst);
  write_plan_files(options, inputs, planned);
  const PlanReport report = report_of(planned, inputs, options, burst, limit);
  if (options.json) {
    std::cout << plan_report_json(report).dump(2) << '\n';
    return;
  }
  print_plan_report(report, std::cout);
  if (!options.output.empty()) std::cout << "\nwrote the plan to " << options.output << '\n';
  if (!options.svg.empty()) {
    std::cout << (options.output.empty() ? "\n" : "") << "wrote pictures to " << options.svg << '\n';
  }
}

void run_plan(const PlanOptions& options, bool strategy_given) {
  check_combinations(options, strategy_given);
  std::optional<double> limit = limit_of(planner::BurstOptions{}.amplification);
  if (!options.amplification.empty()) limit = parse_amplification(options.amplification);
  const Inputs inputs = read_inputs(options);
  const CostModels models = make_cost_models(inputs, inputs.program.precision);
  if (options.sweep) {
    if (inputs.cluster.mixed()) throw UserError("--sweep plans built-in clusters of one kind; a mixed cluster takes no --sweep");
    run_sweep(options, inputs, inputs.graph, inputs.cluster.device(), inputs.cluster.size(), inputs.global_batch,
              models.reference_model(), planner_options(options, inputs, limit));
  } else {
    run_one(options, inputs, models, limit);
  }
}

// Options whose value is text; an empty value is refused rather than read as "not given".
std::vector<CLI::Option*> add_plan_text_options(CLI::App* command, PlanOptions* options) {
  return {
      command->add_option("--devices", options->devices,
                          "Devices of the built-in cluster (with --cluster: must match the file, if given)"),
      command->add_option("--global-batch", options->global_batch,
                          "Samples per iteration, split over the devices"),
      command->add_option(
          "--device", options->device,
          "Device kind for the cost model and built-in cluster: v100, a100, a100-80gb, h100-sxm, h200"),
      command->add_option("--cluster", options->cluster_file,
                          "Cluster file (docs/cluster-format.md); names the device kind"),
      command->add_option("--amplification", options->amplification,
                          "Burst planner's amplification limit: a number >= 1, or inf for none (default 2)"),
      command->add_option("--amplification-exempt-ms", options->exempt_ms,
                          "Layers whose one-device time at the global batch is under this many ms may use any "
                          "device count (default 0.3, as DeepPool; 0: the limit applies to every layer)"),
      command->add_option("--plan", options->plan_file,
                          "Evaluate this plan file (e.g. a hand plan) instead of planning"),
      command->add_option("-o,--output", options->output, "Write the plan file (docs/plan-format.md)"),
      command->add_option(
          "--svg", options->svg,
          "Write an SVG picture: devices per layer and a per-rank timeline (with --sweep: the "
          "scaling curve)")};
}

// --json, the objective and the burst planner's switches.
void add_plan_flags(CLI::App* command, PlanOptions* options) {
  command->add_flag("--json", options->json, "Print JSON instead of tables");
  command->add_option("--objective", options->objective,
                      "time (the fastest plan, every clock at its maximum) or energy (per-rank SM clocks for the "
                      "least energy, the step at most --max-slowdown slower than the fastest plan; under --strategy "
                      "auto, among every strategy's plan that fits)")
      ->capture_default_str();
  command->add_option("--max-slowdown", options->max_slowdown,
                      "--objective energy: how much slower than the fastest plan at full clocks the step may get "
                      "(0.01: 1%); with --pareto, the frontier's searches use their own bounds")
      ->capture_default_str();
  command->add_flag("--pareto", options->pareto,
                    "Print the time-energy frontier of the plan's clock choices (with --svg FILE: draw it)");
  command->add_flag("--strict-amplification", options->strict_amplification,
                    "Keep the amplification limit even where data parallel is then faster "
                    "(by default the burst planner raises it just enough not to be slower)");
  command->add_flag(
      "--sweep", options->sweep,
      "Strong scaling: both strategies at device counts 1..16, then powers of two up to --devices");
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  options->command = "burst plan";
  CLI::App* command = app.add_subcommand(
      "plan",
      "Plan a global batch on a cluster (burst or data parallel), or evaluate a plan file, "
      "and predict one iteration");
  add_model_option(*command, options->model)
      ->required();
  const std::vector<CLI::Option*> texts = add_plan_text_options(command, options.get());
  add_profile_option(*command, options->profiles);
  add_program_options(*command, options->program);
  add_memory_options(*command, *options);
  add_shape_options(*command, *options);
  CLI::Option* strategy = add_strategy_option(*command, options->strategy);
  add_plan_flags(command, options.get());
  command->callback([options, texts, strategy] {
    refuse_empty_values(texts);
    run_plan(*options, strategy->count() > 0);
  });
}

}  // namespace burst::cli
