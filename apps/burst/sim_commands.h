#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst sim`: simulate a plan (burst, data parallel or a file) on a cluster event by
// event, with an optional background job on every device, and report iteration time,
// throughputs, the useful fraction of device time and per-device usage; `--trace` writes a
// Chrome trace, `--sweep` a strong-scaling table (and `--svg` its curves).
void add_sim_commands(CLI::App& app);

}  // namespace burst::cli
