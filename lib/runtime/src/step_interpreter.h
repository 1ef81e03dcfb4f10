#pragma once
// Runs one rank's step program, op by op (burst/program/step_program.h says what each op
// means). Internal to lib/runtime. Includes libtorch.
#include "burst/program/step_program.h"
#include "burst/runtime/plan_executor.h"
#include "executor_state.h"

namespace burst::runtime::detail {

// One step of `program` (built for s.plan) on s.rank: times its waits into s and s.trace.
// Returns the sum of every loss layer's per-sample losses over the global batch when the
// program reduces the loss, else this rank's own part of it. Random ops draw by `step_key`
// (seed and step; each layer's first sample is set from its range).
double interpret_step(ExecutorState& s, const program::StepProgram& program, const BatchSource& batch,
                      const layers::RandomKey& step_key);

}  // namespace burst::runtime::detail
