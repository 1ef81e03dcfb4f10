#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst models`, `burst model show`, `burst model export` on `app`.
// The commands run from CLI11 callbacks; errors are thrown as burst::UserError.
void add_model_commands(CLI::App& app);

}  // namespace burst::cli
