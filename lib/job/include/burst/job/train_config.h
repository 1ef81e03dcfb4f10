#pragma once
// What one `burst train` run is: its configuration (TrainConfig), and the job resolved from
// it once for all workers (TrainJob: the plan, the configuration, the checkpoint it resumes
// from). Plain structs, libtorch-free: the launcher writes them to a job file (job_file.h),
// the plugin boundary passes them, the runtime runs them.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "burst/cost/memory.h"
#include "burst/job/lr_schedule.h"
#include "burst/plan/plan.h"
#include "burst/program/program_options.h"
#include "burst/util/enum_names.h"

namespace burst::job {

// The optimizer that trains: torch.optim's SGD (with --momentum), Adam (weight decay added to
// the gradient) or AdamW (decoupled weight decay).
enum class Optimizer { Sgd, Adam, AdamW };
inline constexpr EnumNames<Optimizer, 3> kOptimizerNames{
    "optimizer", {{{Optimizer::Sgd, "sgd"}, {Optimizer::Adam, "adam"}, {Optimizer::AdamW, "adamw"}}}};

// What the runtime computes in.
enum class DType { Float32, Float64 };
inline constexpr EnumNames<DType, 2> kDTypeNames{"dtype", {{{DType::Float32, "float32"}, {DType::Float64, "float64"}}}};

// Where each rank computes.
enum class ComputeDevice { Cpu, Cuda };
inline constexpr EnumNames<ComputeDevice, 2> kComputeDeviceNames{
    "device", {{{ComputeDevice::Cpu, "cpu"}, {ComputeDevice::Cuda, "cuda"}}}};

// A background training job beside a worker (docs/runtime.md, "Background jobs"; the runtime's
// background.h runs it).
struct BackgroundJobConfig {
  std::string model;            // zoo spec or model file
  int64_t batch = 32;           // samples per step (per device)
  int64_t steps = 0;            // > 0: stop after this many; 0: until SIGTERM
  bool idle = false;            // run at SCHED_IDLE
  std::string progress_file;    // share progress through this mapped file (empty: none)
  uint64_t seed = 0;
  double learning_rate = 0.01;
  // "cpu", or "cuda:N": the job's worker's GPU, where it runs on a low-priority stream.
  std::string device = "cpu";
};

struct TrainConfig {
  std::string model;             // zoo spec, model file or ONNX file
  // Initial weights: "file" (an ONNX model's initializers), "seed" (torch.nn's
  // initialisation from --seed, per layer); empty: "file" for an ONNX model, else "seed".
  std::string init;
  int64_t steps = 0;             // > 0: this many steps
  int64_t epochs = 0;            // > 0: this many epochs (steps = epochs x steps per epoch)
  // "synthetic", "fashion-mnist", or users' data: npy:DIR, tokens:FILE, images:DIR
  // (burst/data/user_data.h).
  std::string dataset = "synthetic";
  std::string dataset_dir = "/usr/share/datasets/fashion-mnist";
  // What --eval-every and the end of the run evaluate on: KIND:PATH as `dataset`; empty:
  // Fashion-MNIST's test split, or synthetic data's own, or none for users' data.
  std::string val_dataset;
  int64_t eval_every = 0;  // > 0: validation loss and accuracy every this many steps, and after the last
  std::vector<double> image_mean{0.0};  // images:DIR: (x / 255 - mean) / std, per channel or for all
  std::vector<double> image_std{1.0};
  std::string token_width = "uint16";  // tokens:FILE: uint16 (nanoGPT's) or uint32
  int64_t synthetic_samples = 4096;
  Optimizer optimizer = Optimizer::Sgd;
  double learning_rate = 0.01;   // the base rate of `schedule` (its total_steps: the run's, set by the run)
  LearningRateSchedule schedule;
  double momentum = 0.0;
  double weight_decay = 0.0;
  uint64_t seed = 0;
  std::string save_params;       // rank 0 writes every parameter here (torch.load-able)
  std::string trace_file;        // rank 0 writes a Chrome trace of the first steps here (docs/runtime.md)
  int log_every = 1;             // steps between log lines (rank 0)
  // Checkpoints (docs/runtime.md, "Checkpoints"): rank 0 writes DIR/step-N.ckpt every
  // `checkpoint_every` steps (0: only after the last step) when `checkpoint_dir` is set;
  // `resume` starts from the latest one there, under any plan or world size (which one,
  // TrainJob::resume_from says).
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
  program::ProgramOptions program;  // the step run: buckets, BatchNorm mode
  // float64: parameters, activations, gradients and collectives in double (initial weights
  // the float32 ones, widened), for debugging numerics and for tests whose tolerance must not
  // depend on the CPU's kernels.
  DType dtype = DType::Float32;
  // Where each rank computes (device.h): cuda puts rank r on cuda:LOCAL_RANK, its messages
  // and all-reduces over NCCL, its background job on the same GPU.
  ComputeDevice device = ComputeDevice::Cpu;
};

// What every worker of one run runs, resolved once: by burst's launcher, which writes it to
// a job file each worker reads once, or (torchrun, Slurm, mpirun) by every rank alike from
// the same command line. The model and plan were checked against each other when it was
// resolved.
struct TrainJob {
  TrainConfig config;
  plan::Plan plan;          // the global batch lives here
  std::string plan_source;  // what the log line names: "data parallel", a plan file, "burst (planned here)"
  // The checkpoint the run resumes from, checked against this training when the job was
  // resolved; empty: it starts at step 0.
  std::string resume_from;
};

// Where one worker of the job runs: its rank and how it reaches the others (the runtime's
// C10dOptions check the addresses and interfaces).
struct WorkerPlace {
  int rank = 0;
  int world_size = 1;
  std::string master_address = "127.0.0.1";
  int master_port = 29500;
  int local_rank = 0;  // among the ranks on this machine: picks the GPU of a CUDA run
  bool host_store = true;  // false: a launcher (torchrun's agent) hosts the rendezvous store
  std::string rendezvous_file;  // non-empty: a FileStore there instead (C10dOptions)
  std::vector<std::string> socket_interfaces;  // GLOO_SOCKET_IFNAME's, checked (C10dOptions)
};

// The optimizer state the memory model prices for `config` (cost::Optimizer): Adam and AdamW
// keep two values per weight, SGD with momentum one, plain SGD none.
cost::Optimizer memory_optimizer(const TrainConfig& config);

}  // namespace burst::job
