#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "burst/job/train_config.h"

namespace burst::cli {

// Registers `burst background --model M [--batch B] --steps N [--idle]`: trains M alone on
// synthetic data (the throughput a background job gets on a core of its own). Workers of
// `burst train --background` run it too, with --progress and no --steps.
void add_background_commands(CLI::App& app);

// The command line that runs `job` in a process of its own: this program's
// `burst background` with the options above (what burst train's workers start).
std::vector<std::string> background_command_line(const job::BackgroundJobConfig& job);

// Runs a background job in the plugin (UserError for bad input).
void run_background_command(const job::BackgroundJobConfig& config);

}  // namespace burst::cli
