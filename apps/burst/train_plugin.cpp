// The libtorch side of `burst train`, built into the plugin libburst_torch_commands.so.
#include <exception>
#include <string>

#include "burst/runtime/background.h"
#include "burst/layers/device.h"
#include "burst/runtime/train.h"
#include "burst/util/error.h"
#include "train_commands.h"

extern "C" __attribute__((visibility("default"))) int burst_train_worker(
    const burst::job::TrainJob* job, const burst::job::WorkerPlace* place, std::string* message) {
  try {
    burst::runtime::run_training_worker(*job, *place);
    return 0;
  } catch (const std::exception& error) {
    *message = "rank " + std::to_string(place->rank) + ": " + error.what();
    return burst::exit_code_of(error);
  }
}

extern "C" __attribute__((visibility("default"))) int burst_check_device(const std::string* device, int local_ranks,
                                                                         std::string* message) {
  try {
    burst::layers::check_device(*device, local_ranks);
    return 0;
  } catch (const std::exception& error) {
    *message = error.what();
    return burst::exit_code_of(error);
  }
}

extern "C" __attribute__((visibility("default"))) int burst_background_job(
    const burst::job::BackgroundJobConfig* config, std::string* message) {
  try {
    burst::runtime::run_background_job(*config);
    return 0;
  } catch (const std::exception& error) {
    *message = error.what();
    return burst::exit_code_of(error);
  }
}
