#pragma once
// What burst plans and simulates but its runtime does not run yet, refused when a job is
// resolved (before any worker starts) and again by the executor. No libtorch.
#include "burst/graph/graph.h"
#include "burst/plan/plan.h"
#include "burst/program/program_options.h"

namespace burst::job {

// UserError in one line for ZeRO 3, the interleaved and ZB-H1 schedules, expert and context
// parallelism, a vocabulary-parallel loss and sequence parallelism (docs/llm.md, "What runs").
void refuse_unrun_dimensions(const graph::Graph& graph, const plan::Plan& plan, const program::ProgramOptions& program);

}  // namespace burst::job
