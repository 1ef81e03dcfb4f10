#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst cost` (per-layer predicted times of a model on a device),
// `burst devices` (the device catalog with fitted curves) and `burst fit` (held-out
// accuracy of the analytic model on a profile).
void add_cost_commands(CLI::App& app);

}  // namespace burst::cli
