#pragma once
#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst cluster-sim --trace FILE --policy NAME[,NAME...]`: a job trace replayed on
// a cluster under scheduling policies (docs/cluster-sim.md). Errors are thrown as
// burst::UserError.
void add_cluster_sim_commands(CLI::App& app);

}  // namespace burst::cli
