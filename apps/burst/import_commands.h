#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst import-deeppool` on `app`: converts the DeepPool authors' A100 per-layer
// timings (data/deeppool-a100) into a burst profile and prints the match report.
void add_import_commands(CLI::App& app);

}  // namespace burst::cli
