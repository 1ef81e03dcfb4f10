#pragma once
// One worker of `burst train`: loads the model, plan and data, connects to the other ranks
// and trains. Includes no libtorch (the plugin boundary passes these plain structs).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "burst/runtime/background.h"

namespace burst::runtime {

struct TrainConfig {
  std::string model;             // zoo spec, model file or ONNX file
  // Initial weights: "file" (an ONNX model's initializers), "seed" (torch.nn's
  // initialisation from --seed, per layer); empty: "file" for an ONNX model, else "seed".
  std::string init;
  std::string plan_file;         // a plan file, or empty for `strategy`
  std::string strategy = "dp";   // "dp" (or "burst", made by the caller into plan_file)
  int64_t global_batch = 0;
  int64_t steps = 0;             // > 0: this many steps
  int64_t epochs = 0;            // > 0: this many epochs (steps = epochs x steps per epoch)
  std::string dataset = "synthetic";  // "synthetic" or "fashion-mnist"
  std::string dataset_dir = "/usr/share/datasets/fashion-mnist";
  int64_t synthetic_samples = 4096;
  std::string optimizer = "sgd";
  double learning_rate = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  uint64_t seed = 0;
  std::string save_params;       // rank 0 writes every parameter here (torch.load-able)
  std::string trace_file;        // rank 0 writes a Chrome trace of the first steps here (docs/runtime.md)
  int log_every = 1;             // steps between log lines (rank 0)
  // Checkpoints (docs/runtime.md, "Checkpoints"): rank 0 writes DIR/step-N.ckpt every
  // `checkpoint_every` steps (0: only after the last step) when `checkpoint_dir` is set;
  // `resume` starts from the latest one there, under any plan or world size.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  // How long a worker waits for another (a message, an all-reduce, the rendezvous) before
  // it gives up with an error naming what it waited for: a dead or hung worker ends the run.
  double timeout_s = 45;
  // A background job beside every worker (background.h): this model at this per-device
  // batch, in a child process at SCHED_IDLE. Empty: none.
  std::string background_model;
  int64_t background_batch = 32;
  // The command line of a process that runs `job` (`burst background ...`): given by the
  // program that owns the command-line options, so the runtime knows none of their names.
  std::function<std::vector<std::string>(const BackgroundJobConfig& job)> background_command;
  int threads = 1;               // intra-op threads per worker
  double bucket_mb = 25;         // gradient bucket cap in MiB (DDP's bucket_cap_mb)
  std::string batchnorm = "sync";  // "sync": statistics over the layer's ranks; "local": each rank's own
  // "float32", or "float64": parameters, activations, gradients and collectives in double
  // (initial weights the float32 ones, widened), for debugging numerics and for tests
  // whose tolerance must not depend on the CPU's kernels.
  std::string dtype = "float32";
  // Set by burst's own launcher, which validated the model and the plan before any worker
  // started: the workers compare fingerprints (checkpoint::model_fingerprint,
  // plan::placement_fingerprint) instead of validating again. Empty: validate here.
  struct Checked {
    std::string model;
    std::string plan;
  } checked;
};

struct WorkerPlace {
  int rank = 0;
  int world_size = 1;
  std::string master_address = "127.0.0.1";
  int master_port = 29500;
  bool host_store = true;  // false: a launcher (torchrun's agent) hosts the rendezvous store
  std::string rendezvous_file;  // non-empty: a FileStore there instead (GlooOptions)
};

// Trains; rank 0 prints one line per logged step and a summary (test accuracy for
// Fashion-MNIST). Throws UserError for bad input (model/plan/data mismatch).
void run_training_worker(const TrainConfig& config, const WorkerPlace& place);

}  // namespace burst::runtime
