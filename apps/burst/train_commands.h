#pragma once
// `burst train`, built only when libtorch is available (BURST_HAVE_TORCH). Options are
// parsed and the job (job::TrainJob: the plan and the run's configuration) is resolved
// here, libtorch-free; each worker's training runs in the libtorch plugin (torch_plugin.h).
//
// How a process learns its place, like torchrun:
//  - `--nproc N`: this process resolves the job once, writes it to a job file, spawns N
//    workers (`burst train --job FILE`, with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/
//    MASTER_PORT set) and waits for them; if one fails, the others are stopped and the
//    command fails naming the rank;
//  - otherwise, when torchrun's, Slurm's or Open MPI's variables are set, it is that rank,
//    and resolves the same job from the same command line as every other rank;
//  - otherwise it is the only rank.
#include <string>

#include <CLI/CLI.hpp>

#include "burst/job/train_config.h"

namespace burst::cli {

void add_train_commands(CLI::App& app);

}  // namespace burst::cli

// Exported by the plugin: runs one worker. Returns 0 on success, else the error's exit
// code (burst::exit_code_of); on failure `*message` holds the reason.
extern "C" int burst_train_worker(const burst::job::TrainJob* job,
                                  const burst::job::WorkerPlace* place, std::string* message);
