#pragma once
// One worker of `burst train`: runs a job (the plan and the run's configuration, resolved
// once: docs/runtime.md, "Job files"), loading the model and data, connecting to the other
// ranks and training. Includes no libtorch (the plugin boundary passes these plain structs).
#include <string>
#include <vector>

#include "burst/job/train_config.h"

namespace burst::runtime {

// The job's types (lib/job) are the runtime's vocabulary.
using job::TrainConfig;
using job::TrainJob;
using job::WorkerPlace;


// Trains; rank 0 prints one line per logged step and a summary (test accuracy for
// Fashion-MNIST). Throws UserError for bad input (model/plan/data mismatch), RunFailure
// when a peer fails.
void run_training_worker(const TrainJob& job, const WorkerPlace& place);

}  // namespace burst::runtime
