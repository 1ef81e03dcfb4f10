#pragma once
// What one training step's time is made of, on the plan's busiest rank: the terms in which
// two plans of one model differ (docs/planner.md, "Why one plan beats another"). No libtorch.
#include <string>
#include <vector>

#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/planner/plan_dimensions.h"
#include "burst/program/program_options.h"
#include "burst/timing/evaluate.h"

namespace burst::planner {

// Seconds of one step. iteration = compute + recompute + bubble + communication:
//  - compute: the busiest rank's forwards, backwards and updates (what its layers' shapes
//    cost at their GEMM efficiency, replicated work included);
//  - recompute: its RECOMPUTE ops;
//  - bubble: the step with every link free (infinite bandwidth, no latency) less those two:
//    what the schedule leaves the rank waiting for other ranks' compute;
//  - communication: the step less the step with free links: messages and collectives the
//    schedule does not hide.
struct StepTerms {
  double iteration = 0;
  double compute = 0;
  double recompute = 0;
  double bubble = 0;
  double communication = 0;
};

// `evaluated`: `plan`'s evaluation at `program` (its time and busiest rank); the plan is
// timed once more, on the same cluster with free links.
StepTerms step_terms(const plan::Plan& plan, const plan::PlanContext& context, const program::ProgramOptions& program,
                     const timing::PlanEvaluation& evaluated);

// The dimensions of a plan that no published run burst checks (docs/published-runs.md,
// docs/llm.md) has exercised within 15%: its predictions lean on terms nobody has measured
// for it. Each entry names the dimension and the largest checked setting, e.g. "ZB-H1: no
// published run checks it". Empty when every dimension is covered.
std::vector<std::string> unchecked_dimensions(const PlanDimensions& dimensions);

}  // namespace burst::planner
