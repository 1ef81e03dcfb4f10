#pragma once
// The planner's front door (docs/planner.md, "Choosing a strategy"): one strategy's plan, or
// with Strategy::Auto each strategy that can take the user's pins, evaluated, the fastest
// that fits memory; every decision of which plan runs is made here, so that the command line
// and any other caller get the same answer from the same request.
//  - a plan must fit every device's memory (program::plan_memory): a burst, pipeline, hybrid
//    or tensor plan that does not is replaced by data parallelism if that fits, with a note;
//    when none fits, UserError "no plan fits" with the smallest requirement found;
//  - a pin a strategy cannot take is refused in one line (strategy.h, pins_refusal); under
//    Auto it narrows the candidates to those that can, and the others are listed as not
//    searched, with the reason;
//  - Auto skips searches that cannot succeed or would take minutes: the burst, pipeline and
//    hybrid searches when one layer's own state cannot fit a device without tensor splits,
//    pipelines when no pipeline of up to PipelineOptions::max_stages stages can fit, and the
//    burst planner past kAutoBurstBudget layers x devices. Each skip says why;
//  - the 3-D search runs only for graphs with attention layers.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/planner/burst_planner.h"
#include "burst/planner/clock_search.h"
#include "burst/planner/strategy.h"
#include "burst/planner/three_d_planner.h"
#include "burst/program/program_options.h"
#include "burst/program/step_memory.h"
#include "burst/util/units.h"

namespace burst::planner {

// What the plan is asked for: the search options every strategy shares (the step, each
// device's memory, which must be set, the optimizer, timing), the burst search's
// amplification rule and knobs, and the user's pins.
struct AutoPlanOptions : BurstOptions {
  ShapePins pins;
};

// The burst planner's work grows with layers x devices; Auto runs it (alone and inside
// pipeline stages) up to this many so that planning stays in seconds. Strategy::Burst and
// Strategy::Hybrid run it at any size.
inline constexpr double kAutoBurstBudget = 2e5;

// One strategy Auto tried: its evaluated iteration time, or why it has none.
struct StrategyTried {
  Strategy strategy = Strategy::DataParallel;
  std::optional<Seconds> time;  // the evaluator's; none when it does not fit or was not searched
  std::string why_not;          // when it has no time: the memory line, "no X plan fits", or "not searched: ..."
  std::string pipeline;         // the plan's pipeline (plan::pipeline_text), "-" for none
};

// The plan a caller runs, with what was decided on the way.
struct ChosenPlan {
  plan::Plan plan;
  program::ProgramOptions program;  // the step the plan runs: the request's, or what the 3-D search chose
  std::optional<BurstPlanResult> burst;       // what the burst planner said, when it made the plan
  std::vector<program::DeviceMemory> memory;  // per rank
  std::string memory_note;                    // why the plan is not the strategy's own, or empty
  std::vector<StrategyTried> tried;           // Auto: every strategy, in order
  // Auto: every strategy's plan that fits memory, with its time (what an energy objective
  // chooses among: docs/energy.md); empty for one strategy.
  struct Fitting {
    std::string strategy;  // the plan's strategy name
    plan::Plan plan;
    program::ProgramOptions program;
    Seconds time;
    std::vector<program::DeviceMemory> memory;
  };
  std::vector<Fitting> fitting;
};

// Makes the plan of `strategy` for `global_batch` samples on the context's cluster; with
// `given` (a plan file's plan) that plan instead, as it is, fitting or not (the memory says
// which). UserError for pins the strategy cannot take, from a search's own refusals, or when
// no plan fits.
ChosenPlan choose_plan(const plan::PlanContext& context, int64_t global_batch, Strategy strategy,
                       const AutoPlanOptions& options, const plan::Plan* given = nullptr);

// The energy objective (docs/energy.md): among `chosen`'s fitting plans (or its one plan),
// each within (1 + max_slowdown) of the fastest at full clocks, the one whose chosen clocks
// spend the least energy. `chosen` becomes that plan.
struct EnergyChoice {
  ClockChoice choice;           // the winner's clocks, time and energy
  std::string strategy;         // the winner's strategy name
  double fastest_time_s = 0;    // the fastest plan's time at full clocks
  double max_slowdown = 0;
  // Each candidate strategy and what it gave ("X ms and Y J with its clocks", or why it was
  // not considered); empty when there was only one plan.
  std::vector<std::pair<std::string, std::string>> strategies;
};
EnergyChoice choose_for_energy(ChosenPlan& chosen, const plan::PlanContext& context, const ClockSearchOptions& search);

}  // namespace burst::planner
