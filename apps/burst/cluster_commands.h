#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst cluster (--device KIND --devices N | --cluster FILE) [--json]`: the
// cluster's shape and links, and predicted all-reduce times of a few message sizes over
// groups of 2, 8 and all devices. Errors are thrown as burst::UserError.
void add_cluster_commands(CLI::App& app);

}  // namespace burst::cli
