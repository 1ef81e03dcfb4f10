#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst plan`: plan a model's global batch on a cluster (burst or data parallel)
// or evaluate a given plan file, and report per-layer timings, the predicted iteration,
// device-seconds and the speedups over data parallelism and one device; `--sweep` for a
// strong-scaling curve, `--svg` for pictures, `-o` to save the plan.
void add_plan_commands(CLI::App& app);

}  // namespace burst::cli
