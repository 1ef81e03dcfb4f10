#include "sim_commands.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "burst/cost/network.h"
#include "burst/cost/profile.h"
#include "burst/planner/heterogeneous.h"
#include "burst/cost/profile_cost_model.h"
#include "burst/graph/model_json.h"
#include "burst/timing/evaluate.h"
#include "plan_svg.h"
#include "burst/sim/chrome_trace.h"
#include "burst/sim/simulator.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"
#include "command_inputs.h"
#include "plan_report.h"
#include "sim_report.h"
#include "model_option.h"

namespace burst::cli {
namespace {

constexpr int64_t kDefaultBackgroundBatch = 32;

struct SimOptionsText : InputOptions {
  planner::Strategy strategy = planner::Strategy::Burst;
  std::string amplification;
  std::string background;  // M2[:per-device-batch]
  std::string background_policy = "fit";
  std::string trace;
  std::string trace_ranks = "64";
  std::string svg;
  std::string shard_overhead_ms = "0";
  std::string co_located_profile;
  bool json = false;
  bool sweep = false;
  bool intervals = false;
  bool collectives_hold_ports = false;
};

void check_combinations(const SimOptionsText& options, bool strategy_given) {
  const bool loaded = !options.plan_file.empty();
  if (loaded && (strategy_given || !options.amplification.empty() || options.sweep)) {
    throw UserError("--plan FILE simulates a given plan: it takes no --strategy, --amplification or --sweep");
  }
  if (options.strategy == planner::Strategy::DataParallel && !options.amplification.empty()) {
    throw UserError("--amplification limits the burst planner; --strategy dp has no limit");
  }
  if (!options.cluster_file.empty() && !options.device.empty()) {
    throw UserError("--cluster FILE names its device kind: give --device or --cluster, not both");
  }
  if (options.sweep && !options.cluster_file.empty()) {
    throw UserError("--sweep simulates built-in clusters of 1..N devices; sweep with --device KIND --devices N");
  }
  if (options.sweep && (strategy_given || !options.trace.empty() || options.intervals)) {
    throw UserError("--sweep simulates both strategies at every count: it takes no --strategy, --trace or --intervals");
  }
  if (!options.sweep && !options.svg.empty()) {
    throw UserError("--svg draws the --sweep's curves; for one plan's timeline use --trace FILE");
  }
  if (options.cluster_file.empty() && options.device.empty() && options.profiles.empty() && options.devices.find(':') == std::string::npos) {
    throw UserError("burst sim needs --device KIND [--profile FILE] or --cluster FILE");
  }
}

Seconds shard_overhead(const SimOptionsText& options) {
  return Seconds::from_ms(parse_finite(options.shard_overhead_ms, "--shard-overhead-ms", 0, "a number >= 0"));
}

// --co-located-profile FILE: a profile of the cluster's device kind, or none.
std::unique_ptr<cost::CostModel> co_located_cost(const SimOptionsText& options, const Inputs& inputs) {
  if (options.co_located_profile.empty()) return nullptr;
  cost::Profile profile = cost::load_profile_file(options.co_located_profile);
  if (profile.device != inputs.cluster.device()) {
    throw UserError(fmt::format("--co-located-profile '{}' is a profile of {} devices, but the cluster's are {}",
                                options.co_located_profile, profile.device, inputs.cluster.device()));
  }
  return std::make_unique<cost::ProfileCostModel>(std::move(profile));
}

// The SimOptions every run of this command shares.
sim::SimOptions base_sim_options(const SimOptionsText& options, const program::ProgramOptions& program,
                                 const cost::CostModel* co_located) {
  sim::SimOptions sim_options;
  sim_options.program = program;
  sim_options.collectives_hold_ports = options.collectives_hold_ports;
  sim_options.shard_overhead = shard_overhead(options);
  sim_options.co_located_cost = co_located;
  return sim_options;
}

// Powers of two up to `devices`, and `devices` itself.
std::vector<int> sweep_counts(int devices) {
  std::vector<int> counts;
  for (int64_t n = 1; n < devices; n *= 2) counts.push_back(static_cast<int>(n));
  counts.push_back(devices);
  return counts;
}

struct Background {
  BackgroundSpec spec;
  graph::Graph graph;
};

void run_sweep(const SimOptionsText& options, const Inputs& inputs, const cost::CostModel& cost,
               const cost::CostModel* co_located, const planner::BurstOptions& burst, const program::ProgramOptions& program,
               const std::optional<Background>& background) {
  SimSweepReport report;
  report.model = inputs.graph.name();
  report.device_kind = inputs.cluster.device();
  report.global_batch = inputs.global_batch;
  report.program = program;
  if (background) report.background = background->spec;
  const sim::SimOptions sim_options = base_sim_options(options, program, co_located);
  for (const int count : sweep_counts(inputs.cluster.size())) {
    std::cerr << fmt::format("simulating {} devices\n", count);
    const cost::NetworkModel network(cluster::builtin_cluster(report.device_kind, count));
    const plan::PlanContext context{inputs.graph, cost, network, {}, plan::catalog_kind_power(network.cluster())};
    const plan::Plan data_parallel = plan::plan_data_parallel(inputs.graph, count, inputs.global_batch);
    const plan::Plan burst_plan = planner::plan_burst(context, inputs.global_batch, burst);
    SimSweepPoint point;
    point.devices = count;
    if (background) {
      const sim::BackgroundJob job{&background->graph, background->spec.per_device_batch, background->spec.policy};
      point.data_parallel_background = sim::simulate_multiplexed(data_parallel, context, sim_options, job);
      point.burst_background = sim::simulate_multiplexed(burst_plan, context, sim_options, job);
      point.data_parallel = point.data_parallel_background->alone;
      point.burst = point.burst_background->alone;
    } else {
      point.data_parallel = sim::simulate(data_parallel, context, sim_options);
      point.burst = sim::simulate(burst_plan, context, sim_options);
    }
    report.points.push_back(std::move(point));
  }
  if (!options.svg.empty()) {
    std::string title = fmt::format("{}: simulated strong scaling, global batch {} on {}, BatchNorm {}", report.model,
                                    report.global_batch, report.device_kind, program::batchnorm_mode_name(program));
    if (background) {
      title += fmt::format("; background {}:{} per device", background->spec.model, background->spec.per_device_batch);
    }
    write_text_file_atomically(options.svg, render_scaling_charts(title, sim_sweep_charts(report)));
  }
  if (options.json) {
    std::cout << sim_sweep_json(report).dump(2) << '\n';
    return;
  }
  print_sim_sweep(report, std::cout);
  if (!options.svg.empty()) std::cout << "\nwrote the scaling curves to " << options.svg << '\n';
}

// Where the simulated plan came from, as the report's first lines say it.
std::string plan_source(const SimOptionsText& options, const Inputs& inputs, const planner::ChosenPlan& chosen) {
  const plan::Plan& plan = chosen.plan;
  std::string source = "data-parallel plan";
  if (inputs.loaded) {
    source = fmt::format("plan file {} (strategy {})", options.plan_file, plan.strategy);
  } else if (chosen.burst) {
    source = fmt::format("burst plan (amplification limit {})", amplification_text(limit_of(chosen.burst->amplification_limit)));
  } else if (!chosen.memory_note.empty()) {
    source = fmt::format("data-parallel plan ({})", chosen.memory_note);
  } else if (plan.strategy == "pipeline" || plan.strategy == "hybrid") {
    source = fmt::format("{} plan ({})", plan.strategy, pipeline_text(plan));
  }
  if (!chosen.tried.empty()) source = fmt::format("auto: {} (tried {})", source, strategies_text(chosen.tried));
  return source;
}

void run_one(const SimOptionsText& options, const Inputs& inputs, const CostModels& models,
             const cost::CostModel* co_located, const std::optional<double>& limit, const program::ProgramOptions& program,
             const std::optional<Background>& background) {
  const cost::NetworkModel network(inputs.cluster);
  const plan::PlanContext context = models.context(inputs.graph, network);
  planner::BurstOptions burst = burst_options(limit, false);
  burst.program = program;  // plan the step simulated
  burst.memory_of_kind = memory_of_kind(inputs);
  const planner::ChosenPlan chosen = planner::choose_plan(context, inputs.global_batch, options.strategy, plan_options(inputs, burst),
                                                                inputs.given_plan());
  const plan::Plan& plan = chosen.plan;
  const std::string source = plan_source(options, inputs, chosen);
  const int trace_ranks = static_cast<int>(parse_whole(options.trace_ranks, "--trace-ranks", 1, cluster::kMaxDevices));
  sim::SimOptions sim_options = base_sim_options(options, chosen.program, co_located);  // 3d: its chosen step
  sim_options.record_idle_intervals = options.intervals;
  sim_options.record_events = !options.trace.empty();
  std::optional<sim::MultiplexResult> multiplexed;
  std::optional<sim::SimResult> alone;
  if (background) {
    multiplexed = sim::simulate_multiplexed(plan, context, sim_options,
                                            sim::BackgroundJob{&background->graph, background->spec.per_device_batch, background->spec.policy});
  } else {
    alone = sim::simulate(plan, context, sim_options);
  }
  const sim::SimResult& foreground = multiplexed ? multiplexed->alone : *alone;
  const sim::SimResult& traced = multiplexed ? multiplexed->with_background : *alone;
  if (!options.trace.empty()) {
    write_text_file_atomically(options.trace, sim::chrome_trace_json(traced, inputs.graph,
                                                                      background ? &background->graph : nullptr, trace_ranks));
  }
  timing::EvaluateOptions evaluate_options;  // the evaluator's view of the same step program
  evaluate_options.program = sim_options.program;
  std::optional<MixedSummary> mixed;
  if (inputs.cluster.mixed()) mixed = MixedSummary{planner::usage_by_kind(context, plan, foreground.iteration_time), {}};
  SimReport report(inputs.cluster, plan, foreground);
  report.model = inputs.graph.name();
  report.plan_source = source;
  report.program = chosen.program;
  report.evaluator_time = timing::evaluate_plan(plan, context, evaluate_options).iteration_time;
  if (background) report.background = background->spec;
  report.multiplexed = multiplexed ? &*multiplexed : nullptr;
  report.intervals = options.intervals;
  report.memory = memory_summary(chosen, inputs);
  report.mixed = mixed ? &*mixed : nullptr;
  if (options.json) {
    std::cout << sim_report_json(report).dump(2) << '\n';
    return;
  }
  print_sim_report(report, std::cout);
  if (!options.trace.empty()) {
    std::cout << fmt::format("\nwrote a Chrome trace of ranks 0-{} to {}\n",
                             std::min(trace_ranks, inputs.cluster.size()) - 1, options.trace);
  }
}

void run_sim(const SimOptionsText& options, bool strategy_given) {
  check_combinations(options, strategy_given);
  std::optional<double> limit = limit_of(planner::BurstOptions{}.amplification);
  if (!options.amplification.empty()) limit = parse_amplification(options.amplification);
  std::optional<BackgroundSpec> background_spec;
  if (!options.background.empty()) {
    const ModelAndBatch parsed = parse_background_option(options.background, kDefaultBackgroundBatch);
    background_spec = BackgroundSpec{parsed.model, parsed.batch};
  }
  const Inputs inputs = read_inputs(options);
  std::optional<Background> background;
  if (background_spec) {
    background_spec->policy =
        options.background_policy == "greedy" ? sim::BackgroundPolicy::Greedy : sim::BackgroundPolicy::FitIdleGaps;
    background = Background{*background_spec, graph::load_model(background_spec->model)};
  }
  const program::ProgramOptions& program = inputs.program;
  const CostModels models = make_cost_models(inputs, program.precision);
  const auto co_located = co_located_cost(options, inputs);
  if (options.sweep) {
    if (inputs.cluster.mixed()) throw UserError("--sweep plans built-in clusters of one kind; a mixed cluster takes no --sweep");
    planner::BurstOptions burst = burst_options(limit, false);
    burst.program = program;
    run_sweep(options, inputs, models.reference_model(), co_located.get(), burst, program, background);
  } else {
    run_one(options, inputs, models, co_located.get(), limit, program, background);
  }
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  auto options = std::make_shared<SimOptionsText>();
  options->command = "burst sim";
  CLI::App* command = app.add_subcommand(
      "sim",
      "Simulate training steps of a plan on a cluster, event by event, optionally with a background job "
      "filling idle device time; --sweep for strong scaling");
  add_model_option(*command, options->model)->required();
  const std::vector<CLI::Option*> texts = {
      command->add_option("--devices", options->devices, "Devices of the built-in cluster (with --sweep: the most)"),
      command->add_option("--global-batch", options->global_batch, "Samples per iteration, split over the devices"),
      command->add_option("--device", options->device,
                          "Device kind for the cost model and built-in cluster: v100, a100, a100-80gb, h100-sxm, h200"),
      command->add_option("--cluster", options->cluster_file, "Cluster file (docs/cluster-format.md)"),
      command->add_option("--amplification", options->amplification,
                          "Burst planner's amplification limit: a number >= 1, or inf for none (default 2)"),
      command->add_option("--plan", options->plan_file, "Simulate this plan file instead of planning"),
      command->add_option("--background", options->background,
                          fmt::format("Background job on every device: MODEL[:per-device-batch] (default batch {})",
                                      kDefaultBackgroundBatch)),
      command->add_option("--trace", options->trace, "Write a Chrome trace of the simulated steps"),
      command->add_option("--trace-ranks", options->trace_ranks, "Ranks in the trace: the first K (default 64)"),
      command->add_option("--svg", options->svg, "With --sweep: write the scaling curves as SVG"),
      command->add_option("--shard-overhead-ms", options->shard_overhead_ms,
                          "Added to every forward and backward shard: a runtime's fixed cost per layer call "
                          "(default 0; see docs/simulator.md)"),
      command->add_option("--co-located-profile", options->co_located_profile,
                          "Profile for layers split over devices of one node, which compute them at once "
                          "(burst profile --co-located N)")};
  add_memory_options(*command, *options);
  add_shape_options(*command, *options);
  CLI::Option* strategy =
      add_strategy_option(*command, options->strategy);
  add_profile_option(*command, options->profiles);
  add_program_options(*command, options->program);
  command->add_option("--background-policy", options->background_policy,
                      "fit (default: a background kernel starts only if it fits in the device's idle gap as the "
                      "foreground alone has it) or greedy (whenever the device is idle)")
      ->check(CLI::IsMember({"fit", "greedy"}));
  command->add_flag("--json", options->json, "Print JSON instead of tables");
  command->add_flag("--collectives-hold-ports", options->collectives_hold_ports,
                    "All-reduces also hold the devices' message ports (the pessimistic bound; default: their own "
                    "channel beside the messages)");
  command->add_flag("--intervals", options->intervals, "With --json: each device's idle intervals in the first measured step");
  command->add_flag("--sweep", options->sweep,
                    "Strong scaling: data parallel and burst (and each with the background job) at 1, 2, 4, ... --devices");
  command->callback([options, texts, strategy] {
    refuse_empty_values(texts);
    run_sim(*options, strategy->count() > 0);
  });
}

}  // namespace burst::cli
