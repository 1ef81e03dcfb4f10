#pragma once
// Context parallelism's program (step_program.h, "Context parallelism"): the program of a
// plan's context groups lifted onto their C devices each.
#include "burst/graph/graph.h"
#include "burst/plan/plan.h"
#include "burst/program/program_options.h"
#include "burst/program/step_program.h"

namespace burst::program {

// The plan with its context groups as its ranks (devices / C of them, no context): what
// the builder builds before lift_context.
plan::Plan context_group_plan(const plan::Plan& plan);

// `groups`, the program build_step_program made of context_group_plan(plan), on the plan's
// devices. Under BuildScope::one_rank_per_class only context rank 0 of a representative
// group is built; the others are its mirrors.
StepProgram lift_context(const graph::Graph& graph, const plan::Plan& plan, const ProgramOptions& options,
                         const BuildScope& scope, StepProgram groups);

}  // namespace burst::program
