#pragma once
// The 3-D search's closed-form estimate of a candidate (three_d_planner.h), for ranking only:
// the evaluator times the best.
#include "burst/plan/plan.h"
#include "burst/plan/plan_context.h"
#include "burst/planner/parallel_shape.h"
#include "burst/program/program_options.h"

namespace burst::planner {

double estimate_3d(const plan::PlanContext& context, const plan::Plan& plan, const ParallelShape& shape,
                   const program::ProgramOptions& program);

}  // namespace burst::planner
