#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst program`: prints the step program of a plan (a plan file, or data
// parallelism on --devices at --global-batch), one rank or all, as per-rank action lists
// (docs/step-program.md); --json for machines.
void add_program_commands(CLI::App& app);

}  // namespace burst::cli
