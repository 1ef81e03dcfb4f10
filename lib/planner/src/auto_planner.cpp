#include "burst/planner/auto_planner.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "burst/planner/pipeline_planner.h"
#include "burst/planner/tensor_planner.h"
#include "burst/timing/evaluate.h"
#include "burst/util/error.h"
#include "burst/util/format.h"

namespace burst::planner {
namespace {

// What every strategy's search reads, taken once from the request.
struct Request {
  const plan::PlanContext& context;
  int64_t global_batch;
  const AutoPlanOptions& options;
  const program::MemoryCapacity& capacity;

  const graph::Graph& graph() const { return context.graph; }
  int devices() const { return context.network.cluster().size(); }
  plan::Plan data_parallel() const { return plan::plan_data_parallel(graph(), devices(), global_batch); }
};

// The pipeline planner for data-parallel stages, burst placements inside them (the hybrid),
// or both, under the request's pins.
PipelinePlanResult search_pipelines(const Request& request, bool data_parallel_stages, bool burst_stages) {
  PipelineOptions options;
  options.search() = request.options.search();
  options.data_parallel_stages = data_parallel_stages;
  options.burst_stages = burst_stages;
  options.burst = request.options;
  const ShapePins& pins = request.options.pins;
  if (pins.pipeline) options.stages = *pins.pipeline;
  if (pins.schedule) options.schedules = {*pins.schedule};
  return plan_pipeline(request.context, request.global_batch, options);
}

// A plan a search found or, with none that fits, data parallelism (whose memory fit then
// decides: its fallback, or "no plan fits").
plan::Plan or_data_parallel(std::optional<plan::Plan> found, const Request& request) {
  if (found) return std::move(*found);
  return request.data_parallel();
}

// The tensor planner with the burst search's amplification rule, under a tensor pin.
plan::Plan search_tensor_splits(const Request& request) {
  TensorOptions options;
  options.search() = request.options.search();
  options.rule() = request.options.rule();
  options.parts = request.options.pins.tensor;
  options.sequence_parallel = request.options.pins.sequence_parallel.value_or(false);
  return or_data_parallel(plan_tensor(request.context, request.global_batch, options).plan, request);
}

ThreeDResult search_3d(const Request& request) {
  ThreeDOptions options;
  options.search() = request.options.search();
  options.pins = request.options.pins;
  return plan_3d(request.context, request.global_batch, options);
}

// One strategy's plan for Auto, with the step it runs.
struct AutoCandidate {
  Strategy strategy;
  plan::Plan plan;
  program::ProgramOptions program;
  std::string why_not;               // set when the strategy has no plan that fits, or was not searched
  std::optional<Seconds> predicted;  // the evaluator's time, where the search already took it
};

// Why no plan that splits no layer's tensors can fit (program::largest_unsplit_layer_state
// over the device's capacity), or empty when one may: then the burst, pipeline and hybrid
// searches are skipped (on a 1T-parameter model they would search for minutes to find
// nothing).
std::string why_unsplit_cannot_fit(const Request& request) {
  const program::ProgramOptions& step = request.options.program;
  const program::LayerStateBound bound =
      program::largest_unsplit_layer_state(request.graph(), request.options.optimizer, step, request.devices());
  if (!(request.capacity.capacity < bound.bytes)) return "";
  return fmt::format("not searched: layer '{}' alone needs {} of weights, gradients and optimizer state (ZeRO {}) "
                     "without tensor splits, more than the {} of a {}",
                     request.graph().layer(bound.layer).name, bytes_decimal(bound.bytes.value()), step.zero_stage,
                     bytes_decimal(request.capacity.capacity.value()), request.capacity.device);
}

// Why no pipeline of data-parallel or burst stages (the pipeline planner's, at most its
// max_stages) can fit (program::unsplit_pipeline_state_bound), or empty when one may.
std::string why_pipelines_cannot_fit(const Request& request) {
  const int max_stages = PipelineOptions{}.max_stages;
  const program::ProgramOptions& step = request.options.program;
  const Bytes bound = program::unsplit_pipeline_state_bound(request.graph(), request.options.optimizer, step,
                                                            request.devices(), max_stages);
  if (!(request.capacity.capacity < bound)) return "";
  return fmt::format("not searched: in any pipeline of up to {} stages without tensor splits some device holds at "
                     "least {} of weights, gradients and optimizer state (ZeRO {}), more than the {} of a {}",
                     max_stages, bytes_decimal(bound.value()), step.zero_stage,
                     bytes_decimal(request.capacity.capacity.value()), request.capacity.device);
}

std::string over_burst_budget(const Request& request) {
  const double work = static_cast<double>(request.graph().size()) * request.devices();
  if (work <= kAutoBurstBudget) return "";
  return fmt::format("not searched: {} layers x {} devices is past auto's {:g} for the burst planner (--strategy "
                     "burst or hybrid runs it)",
                     request.graph().size(), request.devices(), kAutoBurstBudget);
}

// Why Auto skips a search (empty: it runs it): the pins first, then what cannot fit or
// would take too long.
struct SkippedSearches {
  std::string burst;
  std::string pipeline;
  std::string hybrid;
  std::string tensor;
  std::string three_d;
};

std::string first_of(const std::string& a, const std::string& b) { return a.empty() ? b : a; }

std::string pinned_out(Strategy strategy, const ShapePins& pins) {
  const std::string refusal = pins_refusal(strategy, pins);
  return refusal.empty() ? "" : "not searched: " + refusal;
}

SkippedSearches skipped_searches(const Request& request) {
  const ShapePins& pins = request.options.pins;
  const std::string unsplit = why_unsplit_cannot_fit(request);
  const std::string burst = first_of(unsplit, over_burst_budget(request));
  const std::string pipeline = first_of(unsplit, why_pipelines_cannot_fit(request));
  SkippedSearches skipped;
  skipped.burst = first_of(pinned_out(Strategy::Burst, pins), burst);
  skipped.pipeline = first_of(pinned_out(Strategy::Pipeline, pins), pipeline);
  skipped.hybrid = first_of(pinned_out(Strategy::Hybrid, pins), first_of(pipeline, burst));
  skipped.tensor = pinned_out(Strategy::Tensor, pins);
  if (!has_attention(request.graph())) skipped.three_d = "not searched: the graph has no attention layers";
  return skipped;
}

// The candidate `strategy` gives with `make` unless `why_skipped` says it is not searched.
template <typename Make>
void add_candidate(std::vector<AutoCandidate>& candidates, const Request& request, Strategy strategy,
                   const std::string& why_skipped, Make make) {
  if (!why_skipped.empty()) {
    candidates.push_back({strategy, request.data_parallel(), request.options.program, why_skipped, std::nullopt});
    return;
  }
  candidates.push_back({strategy, make(), request.options.program, "", std::nullopt});
}

std::vector<AutoCandidate> auto_candidates(const Request& request, const std::optional<BurstPlanResult>& burst,
                                           const SkippedSearches& skipped) {
  std::vector<AutoCandidate> candidates;
  const std::string dp_pinned = pinned_out(Strategy::DataParallel, request.options.pins);
  add_candidate(candidates, request, Strategy::DataParallel, dp_pinned, [&] { return request.data_parallel(); });
  add_candidate(candidates, request, Strategy::Burst, skipped.burst, [&] { return burst->plan; });
  std::optional<PipelinePlanResult> pipelines;
  if (skipped.pipeline.empty() || skipped.hybrid.empty()) {
    pipelines = search_pipelines(request, skipped.pipeline.empty(), skipped.hybrid.empty());
  }
  add_candidate(candidates, request, Strategy::Pipeline, skipped.pipeline,
                [&] { return or_data_parallel(std::move(pipelines->plan), request); });
  add_candidate(candidates, request, Strategy::Hybrid, skipped.hybrid,
                [&] { return or_data_parallel(std::move(pipelines->hybrid), request); });
  add_candidate(candidates, request, Strategy::Tensor, skipped.tensor, [&] { return search_tensor_splits(request); });
  if (!skipped.three_d.empty()) return candidates;  // graphs without attention: 3d is not listed
  try {
    ThreeDResult found = search_3d(request);
    candidates.push_back({Strategy::ThreeD, std::move(found.plan), found.program, "", found.predicted});
  } catch (const UserError& error) {
    candidates.push_back({Strategy::ThreeD, request.data_parallel(), request.options.program, error.what(), std::nullopt});
  }
  return candidates;
}

// `candidate`'s time where it fits (its why_not otherwise), and its fitting entry.
StrategyTried try_candidate(const Request& request, const AutoCandidate& candidate, ChosenPlan& chosen) {
  StrategyTried tried{candidate.strategy, std::nullopt, candidate.why_not, plan::pipeline_text(candidate.plan)};
  if (tried.why_not.empty() && candidate.plan.strategy != strategy_name(candidate.strategy)) {
    tried.why_not = fmt::format("no {} plan fits", strategy_name(candidate.strategy));  // it fell back to dp
  }
  if (!tried.why_not.empty()) return tried;
  std::vector<program::DeviceMemory> memory =
      program::plan_memory(candidate.plan, request.graph(), request.options.optimizer, candidate.program);
  if (!program::fits(memory, request.capacity)) {
    tried.why_not = program::memory_text(program::tightest_memory(memory, request.capacity), request.graph(),
                                         request.capacity);
    return tried;
  }
  tried.time = candidate.predicted;
  if (!tried.time) {
    timing::EvaluateOptions evaluate = request.options.evaluate_options();
    evaluate.program = candidate.program;
    tried.time = timing::evaluate_plan(candidate.plan, request.context, evaluate).iteration_time;
  }
  chosen.fitting.push_back(
      {strategy_name(candidate.strategy), candidate.plan, candidate.program, *tried.time, std::move(memory)});
  return tried;
}

// Every candidate kept if it fits; the fastest (the first of equals) is chosen.
// `chosen.tried` says what each gave.
void choose_automatically(const Request& request, ChosenPlan& chosen) {
  const SkippedSearches skipped = skipped_searches(request);
  std::optional<BurstPlanResult> burst;
  if (skipped.burst.empty()) burst = plan_burst_with_prediction(request.context, request.global_batch, request.options);
  const std::vector<AutoCandidate> candidates = auto_candidates(request, burst, skipped);
  std::optional<Seconds> best;
  for (const AutoCandidate& candidate : candidates) {
    chosen.tried.push_back(try_candidate(request, candidate, chosen));
    const std::optional<Seconds>& time = chosen.tried.back().time;
    if (!time || (best && !(*time < *best))) continue;
    best = time;
    chosen.plan = candidate.plan;
    chosen.program = candidate.program;
    chosen.memory = chosen.fitting.back().memory;
    chosen.burst = candidate.strategy == Strategy::Burst ? burst : std::nullopt;
  }
  if (!best) {  // none fits: data parallelism's fit says so, with the smallest requirement found
    program::fit_in_memory(request.data_parallel(), "data-parallel", request.graph(), request.options.optimizer,
                           request.capacity, request.options.program);
    std::vector<std::string> reasons;  // data parallelism fits, but the pins rule it out
    for (const StrategyTried& tried : chosen.tried) reasons.push_back(fmt::format("{}: {}", strategy_name(tried.strategy), tried.why_not));
    throw UserError(fmt::format("no plan fits the pins ({})", fmt::join(reasons, "; ")));
  }
}

// One strategy's own plan, before its memory fit.
plan::Plan strategy_plan(const Request& request, Strategy strategy, ChosenPlan& chosen) {
  switch (strategy) {
    case Strategy::DataParallel: return request.data_parallel();
    case Strategy::Tensor: return search_tensor_splits(request);
    case Strategy::Pipeline:
    case Strategy::Hybrid: {
      const bool hybrid = strategy == Strategy::Hybrid;
      PipelinePlanResult found = search_pipelines(request, !hybrid, hybrid);
      return or_data_parallel(hybrid ? std::move(found.hybrid) : std::move(found.plan), request);
    }
    case Strategy::Burst:
    case Strategy::ThreeD:
    case Strategy::Auto: break;
  }
  chosen.burst = plan_burst_with_prediction(request.context, request.global_batch, request.options);
  return chosen.burst->plan;
}

// The plan of one strategy other than 3d and Auto, fitted to memory.
void choose_one(const Request& request, Strategy strategy, ChosenPlan& chosen) {
  const std::string name = strategy == Strategy::DataParallel ? "data-parallel" : strategy_name(strategy);
  program::FittedPlan fitted =
      program::fit_in_memory(strategy_plan(request, strategy, chosen), name, request.graph(), request.options.optimizer,
                             request.capacity, request.options.program);
  chosen.plan = std::move(fitted.plan);
  chosen.memory = std::move(fitted.memory);
  chosen.memory_note = std::move(fitted.note);
  const bool fell_back = chosen.plan.strategy != strategy_name(strategy);
  if (fell_back && strategy != Strategy::DataParallel && strategy != Strategy::Burst && chosen.memory_note.empty()) {
    chosen.memory_note = fmt::format("no {} plan fits in memory; data parallel instead", strategy_name(strategy));
  }
  if (!chosen.memory_note.empty()) chosen.burst.reset();
}

}  // namespace

namespace {

// A plan given whole: evaluated as it is.
ChosenPlan given_plan(const plan::Plan& plan, const graph::Graph& graph, const AutoPlanOptions& options) {
  ChosenPlan chosen;
  chosen.plan = plan;
  chosen.program = options.program;
  chosen.memory = program::plan_memory(plan, graph, options.optimizer, options.program);
  return chosen;
}

}  // namespace

ChosenPlan choose_plan(const plan::PlanContext& context, int64_t global_batch, Strategy strategy,
                       const AutoPlanOptions& options, const plan::Plan* given) {
  if (given != nullptr) return given_plan(*given, context.graph, options);
  BURST_ASSERT(options.capacity.has_value(), "the auto planner needs each device's memory");
  const std::string refusal = pins_refusal(strategy, options.pins);
  if (!refusal.empty()) throw UserError(refusal);
  const Request request{context, global_batch, options, *options.capacity};
  ChosenPlan chosen;
  chosen.program = options.program;
  if (strategy == Strategy::ThreeD) {
    ThreeDResult found = search_3d(request);
    chosen.plan = std::move(found.plan);
    chosen.program = found.program;
    chosen.memory = program::plan_memory(chosen.plan, context.graph, options.optimizer, chosen.program);
  } else if (strategy == Strategy::Auto) {
    choose_automatically(request, chosen);
  } else {
    choose_one(request, strategy, chosen);
  }
  return chosen;
}

namespace {

// The plans the energy objective compares: Auto's fitting plans, or the one chosen.
std::vector<ChosenPlan::Fitting> energy_candidates(const ChosenPlan& chosen, const plan::PlanContext& context,
                                                   const ClockSearchOptions& search) {
  if (!chosen.fitting.empty()) return chosen.fitting;
  timing::EvaluateOptions evaluate = search.evaluate_options();
  evaluate.program = chosen.program;
  const Seconds time = timing::evaluate_plan(chosen.plan, context, evaluate).iteration_time;
  return {ChosenPlan::Fitting{chosen.plan.strategy, chosen.plan, chosen.program, time, chosen.memory}};
}

}  // namespace

EnergyChoice choose_for_energy(ChosenPlan& chosen, const plan::PlanContext& context, const ClockSearchOptions& search) {
  const std::vector<ChosenPlan::Fitting> candidates = energy_candidates(chosen, context, search);
  EnergyChoice result;
  result.max_slowdown = search.max_slowdown;
  result.fastest_time_s = std::min_element(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
                            return a.time < b.time;
                          })->time.s();
  ClockSearchOptions bounded = search;
  bounded.time_bound_s = result.fastest_time_s * (1 + search.max_slowdown);
  std::optional<size_t> best;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ChosenPlan::Fitting& candidate = candidates[i];
    if (candidate.time.s() > *bounded.time_bound_s) {
      result.strategies.emplace_back(candidate.strategy, fmt::format("{:.3f} ms at full clocks, slower than the bound",
                                                                     candidate.time.ms()));
      continue;
    }
    bounded.program = candidate.program;
    ClockChoice choice = choose_clocks(candidate.plan, context, bounded);
    result.strategies.emplace_back(candidate.strategy, fmt::format("{:.3f} ms and {:.4g} J with its clocks",
                                                                   choice.time_s * 1e3, choice.energy_j));
    if (!best || choice.energy_j < result.choice.energy_j) {
      best = i;
      result.choice = std::move(choice);
    }
  }
  BURST_ASSERT(best.has_value(), "the fastest plan is within its own bound");
  if (chosen.fitting.empty()) result.strategies.clear();  // one plan: nothing to compare
  const ChosenPlan::Fitting& winner = candidates[*best];
  result.strategy = winner.strategy;
  if (!chosen.fitting.empty() && winner.plan.strategy != chosen.plan.strategy) {
    chosen.plan = winner.plan;
    chosen.program = winner.program;
    chosen.memory = winner.memory;
    chosen.burst.reset();
  }
  return result;
}

}  // namespace burst::planner
