#include "train_commands.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "burst/checkpoint/checkpoint_file.h"
#include "burst/cluster/cluster.h"
#include "burst/cost/device_models.h"
#include "burst/cost/memory.h"
#include "burst/cost/network.h"
#include "burst/data/user_data.h"
#include "burst/graph/data_fit.h"
#include "burst/graph/model_json.h"
#include "burst/launch/identity.h"
#include "burst/launch/network_address.h"
#include "burst/launch/spawn.h"
#include "burst/launch/worker_status.h"
#include "burst/planner/auto_planner.h"
#include "burst/timing/evaluate.h"
#include "burst/plan/plan.h"
#include "burst/program/step_memory.h"
#include "burst/job/resume.h"
#include "burst/job/unrun_dimensions.h"
#include "burst/job/training_data.h"
#include "burst/util/error.h"
#include "enum_option.h"
#include "background_commands.h"
#include "command_inputs.h"
#include "profile_commands.h"
#include "torch_plugin.h"
#include "burst/job/job_file.h"
#include "model_option.h"

namespace burst::cli {
namespace {

struct TrainArgs {
  job::TrainConfig config;
  ProgramOptionsText program;  // --batchnorm, --bucket-mb: into config.program
  std::string plan_file;       // --plan FILE
  int64_t global_batch = 0;    // --global-batch: for the plan made here (a plan file has its own)
  std::string job_file;        // --job FILE: run this resolved job (what burst's launcher gives its workers)
  int nproc = -1;  // -1: not given
  // --strategy burst: the plan is made here, before any worker starts.
  std::string strategy;        // "dp" or "burst"; empty: dp, or the --plan file
  std::string cost_device;     // cost model: a device kind ...
  std::string profile;         // ... or a measured profile; neither: measure this CPU now
  std::string cluster_file;    // the links between the workers (default: the built-in "cpu" cluster)
  double amplification = planner::BurstOptions{}.amplification;
  int max_restarts = 0;  // --nproc: restart all workers after a failure, this many times
  std::string background;  // MODEL[:batch], split into config.background_* by apply_background_option()
};

// --background MODEL[:batch] into the config's background fields.
void apply_background_option(TrainArgs& args) {
  if (args.background.empty()) return;
  const ModelAndBatch background = parse_background_option(args.background, job::BackgroundJobConfig{}.batch);
  args.config.background_model = background.model;
  args.config.background_batch = background.batch;
  args.config.background_command = background_command_line;
}
// Refuses, before any worker starts, what cannot work and needs no model: bad numbers and
// combinations.
void check_options(const TrainArgs& args) {
  const job::TrainConfig& config = args.config;
  if (config.steps <= 0 && config.epochs <= 0) throw UserError("give --steps S or --epochs E (at least 1)");
  // The planner and the simulator model these; the runtime does not run them yet.
  if (config.program.zero_stage > 2) {
    throw UserError(fmt::format("burst train runs ZeRO stages 0, 1 and 2, not --zero {} (burst plan and burst sim "
                                "model stage 3)",
                                config.program.zero_stage));
  }
  if (config.program.recompute == cost::Recompute::Selective) {
    throw UserError("burst train recomputes none or full, not --recompute selective (burst plan and burst sim model it)");
  }
  const cost::Precision precision = config.program.precision;
  const bool on_cpu = config.device == job::ComputeDevice::Cpu;
  if (precision == cost::Precision::Fp8 || (on_cpu && precision != cost::Precision::Fp32 && precision != cost::Precision::Bf16)) {
    throw UserError(fmt::format("burst train computes in fp32 or bf16{}, not {}", on_cpu ? " on the CPU" : ", tf32 or fp16",
                                cost::precision_name(precision)));
  }
  if (config.steps > 0 && config.epochs > 0) throw UserError("give --steps or --epochs, not both");
  job::LearningRateSchedule schedule = config.schedule;
  schedule.total_steps = config.steps;  // with --epochs, the run checks it once it knows its steps
  job::check_learning_rate_schedule(schedule, config.learning_rate);
  if (!std::isfinite(config.momentum) || config.momentum < 0 || config.momentum >= 1) {
    throw UserError(fmt::format("--momentum must be in [0, 1), got {}", config.momentum));
  }
  if (!std::isfinite(config.weight_decay) || config.weight_decay < 0) {
    throw UserError(fmt::format("--weight-decay must be a finite number >= 0, got {}", config.weight_decay));
  }
  if (!(config.timeout_s > 0) || config.timeout_s > 86400) {
    throw UserError(fmt::format("--timeout must be between 0 and 86400 seconds, got {}", config.timeout_s));
  }
  if (args.max_restarts < 0) throw UserError(fmt::format("--max-restarts must be at least 0, got {}", args.max_restarts));
  if (args.max_restarts > 0 && args.nproc == -1) {
    throw UserError("--max-restarts restarts the workers --nproc starts; under torchrun use its --max_restarts");
  }
  data::parse_dataset_spec(config.dataset);
  if (!config.val_dataset.empty()) data::parse_dataset_spec(config.val_dataset);
  if (config.eval_every < 0) throw UserError(fmt::format("--eval-every must be at least 0, got {}", config.eval_every));
  if (config.checkpoint_every < 0) {
    throw UserError(fmt::format("--checkpoint-every must be at least 0, got {}", config.checkpoint_every));
  }
  if (config.checkpoint_dir.empty() && (config.checkpoint_every > 0 || config.resume)) {
    throw UserError("--checkpoint-every and --resume need --checkpoint-dir DIR");
  }
  if (args.strategy == "burst" && !args.plan_file.empty()) throw UserError("give --plan FILE or --strategy burst, not both");
  if (args.strategy != "burst" && (!args.cluster_file.empty() || !args.cost_device.empty() || !args.profile.empty())) {
    throw UserError("--cluster, --cost-device and --profile choose the cost model of --strategy burst; give it too");
  }
  if (args.nproc != -1 && (args.nproc < 1 || args.nproc > launch::kMaxLocalWorkers)) {
    throw UserError(fmt::format("--nproc must be between 1 and {}, got {}", launch::kMaxLocalWorkers, args.nproc));
  }
  if (!config.background_model.empty()) graph::load_model(config.background_model);  // an unknown model
}

int64_t checked_global_batch(const TrainArgs& args) {
  if (args.global_batch < 1) throw UserError(fmt::format("--global-batch must be at least 1, got {}", args.global_batch));
  return args.global_batch;
}

// --plan FILE, checked against the model and the workers.
plan::Plan load_checked_plan(const TrainArgs& args, const graph::Graph& graph, int world_size) {
  plan::Plan plan = plan::load_plan_file(args.plan_file);
  if (plan.devices != world_size) {
    throw UserError(fmt::format("plan '{}' is for {} devices but {} workers would run it", args.plan_file,
                                plan.devices, world_size));
  }
  plan::validate_plan(plan, graph, cluster::builtin_cluster("cpu", world_size));
  if (args.global_batch != 0 && args.global_batch != plan.global_batch) {
    throw UserError(fmt::format("--global-batch {} differs from plan '{}' ({})", args.global_batch, args.plan_file,
                                plan.global_batch));
  }
  return plan;
}

// A directory removed with everything in it when the scope ends.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "burst-train-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};


// --strategy burst's cost model: --cost-device or --profile, or a profile of this CPU measured
// now into `directory` at the per-device batches a plan can use (powers of two up to the
// global batch, and it).
std::unique_ptr<cost::CostModel> burst_cost_model(const TrainArgs& args, const graph::Graph& graph,
                                                  int64_t global_batch, const std::string& directory) {
  std::string profile = args.profile;
  if (args.cost_device.empty() && profile.empty()) {
    ProfileCommandArgs measure;
    measure.model = args.config.model;
    for (int64_t batch = 1; batch < global_batch; batch *= 2) measure.batch_sizes.push_back(batch);
    measure.batch_sizes.push_back(global_batch);
    measure.threads = args.config.threads;
    measure.output = directory + "/profile.json";
    std::cerr << fmt::format("burst train: measuring {} on this CPU for the burst plan (--profile FILE to reuse one)\n",
                             graph.name());
    run_profile_command(measure);
    profile = measure.output;
  }
  const cost::DeviceModel device =
      cost::resolve_device(args.cost_device, profile.empty() ? std::nullopt : std::optional<std::string>(profile));
  return cost::make_cost_model(device, args.config.program.precision);
}

// The links between the workers: --cluster FILE, or the built-in cpu cluster.
cluster::Cluster worker_cluster(const TrainArgs& args, int world_size) {
  if (args.cluster_file.empty()) return cluster::builtin_cluster("cpu", world_size);
  cluster::Cluster workers = cluster::load_cluster_file(args.cluster_file);
  if (workers.size() != world_size) {
    throw UserError(fmt::format("cluster file '{}' has {} devices but {} workers would run", args.cluster_file,
                                workers.size(), world_size));
  }
  return workers;
}

// --strategy burst: the burst plan for `world_size` workers on this machine, fitting their
// share of its memory (the planner's Strategy::Burst: else data parallelism, else refused), with its
// prediction against data parallelism on stderr.
plan::Plan make_burst_plan(const TrainArgs& args, const graph::Graph& graph, int world_size,
                           const std::string& directory) {
  const int64_t global_batch = checked_global_batch(args);
  const auto cost_model = burst_cost_model(args, graph, global_batch, directory);
  const cost::NetworkModel network(worker_cluster(args, world_size));
  const plan::PlanContext context{graph, *cost_model, network};
  planner::AutoPlanOptions options;
  options.amplification = args.amplification;
  options.program = args.config.program;  // plan the step the workers will run
  options.optimizer = job::memory_optimizer(args.config);
  options.capacity = program::MemoryCapacity{"cpu", Bytes(cost::machine_memory().value() / world_size)};
  const planner::ChosenPlan result = planner::choose_plan(context, global_batch, planner::Strategy::Burst, options);
  if (!result.memory_note.empty()) std::cerr << "burst train: " << result.memory_note << '\n';
  timing::EvaluateOptions evaluation;
  evaluation.program = options.program;
  const double dp =
      timing::evaluate_plan(plan::plan_data_parallel(graph, world_size, global_batch), context, evaluation).iteration_time.ms();
  std::vector<int> counts;
  for (const auto& layer : result.plan.layers) counts.push_back(static_cast<int>(layer.shards.size()));
  std::cerr << fmt::format("burst train: {} plan for {} workers predicts {:.3f} ms per iteration (data parallel "
                           "{:.3f} ms); devices per layer: {}\n",
                           result.plan.strategy == "dp" ? "data-parallel" : "burst", world_size,
                           timing::evaluate_plan(result.plan, context, evaluation).iteration_time.ms(), dp,
                           fmt::join(counts, " "));
  return result.plan;
}

// The job every worker runs, resolved once for `world_size` workers: the model checked
// against the data, the plan (--plan FILE, the burst plan made here, or data parallelism),
// and with --resume the checkpoint to resume from, checked against this training.
job::TrainJob resolve_job(const TrainArgs& args, int world_size, const std::string& scratch) {
  const graph::Graph graph = graph::load_model(args.config.model);
  // The data opened and checked against the model as the workers will, before they start.
  job::load_training_data(args.config, graph);
  job::load_validation_data(args.config, graph);
  job::TrainJob job;
  job.config = args.config;
  if (args.strategy == "burst") {
    job.plan = make_burst_plan(args, graph, world_size, scratch);
    job.plan_source = "burst";
  } else if (!args.plan_file.empty()) {
    job.plan = load_checked_plan(args, graph, world_size);
    job.plan_source = args.plan_file;
  } else {
    job.plan = plan::plan_data_parallel(graph, world_size, checked_global_batch(args));
    job.plan_source = "dp";
  }
  job::refuse_unrun_dimensions(graph, job.plan, job.config.program);  // before any worker starts
  const auto resumed = job::checkpoint_to_resume(job.config, graph, job.plan.global_batch, job.config.steps);
  if (resumed) job.resume_from = *resumed;
  return job;
}

// Refuses, before any worker starts, a --device this build or machine cannot give
// `local_ranks` ranks (the plugin asks libtorch how many GPUs there are).
void check_device_here(job::ComputeDevice compute_device, int local_ranks) {
  if (compute_device == job::ComputeDevice::Cpu) return;
  const std::string device = job::kComputeDeviceNames.name(compute_device);
  using Check = int (*)(const std::string*, int, std::string*);
  const auto check = reinterpret_cast<Check>(plugin_symbol("burst_check_device"));
  std::string message;
  const int code = check(&device, local_ranks, &message);
  if (code != 0) throw_for_exit_code(code, message);
}

// Runs one worker in the plugin.
void run_worker(const job::TrainJob& job, const job::WorkerPlace& place) {
  using Worker = int (*)(const job::TrainJob*, const job::WorkerPlace*, std::string*);
  const auto worker = reinterpret_cast<Worker>(plugin_symbol("burst_train_worker"));
  std::string message;
  const int code = worker(&job, &place, &message);
  if (code != 0) throw_for_exit_code(code, message);
}

// One line about a failed launch: worker `rank` (-1: none failed), with what it said (or, for
// one killed by a signal, what it was doing), e.g. "rank 1 was killed by SIGKILL in step 5
// of 100; stopped the other 3 workers".
std::string failure_report(const launch::SpawnResult& result, int rank, const std::string& status_directory) {
  if (rank < 0) return result.describe();
  const launch::WorkerExit& worker = result.workers[static_cast<size_t>(rank)];
  const std::optional<launch::RecordedStatus> status = launch::read_worker_status(status_directory, rank);
  std::string what;
  if (status && status->failed) {
    what = status->text;  // its own message already names its rank
  } else {
    what = worker.describe() + (status ? " in " + status->text : "");
  }
  // Workers that ignored the launcher's SIGTERM and needed SIGKILL were not answering: the
  // hung ones the others waited for.
  std::vector<std::string> hung;
  for (const launch::WorkerExit& other : result.workers) {
    if (other.rank == rank || !other.stopped_by_launcher || !other.signaled || other.signal != SIGKILL) continue;
    const std::optional<launch::RecordedStatus> last = launch::read_worker_status(status_directory, other.rank);
    hung.push_back(fmt::format("rank {}{}", other.rank, last && !last->failed ? " (" + last->text + ")" : ""));
  }
  const size_t others = result.workers.size() - 1;
  if (others > 0) what += fmt::format("; stopped the other {} worker{}", others, others == 1 ? "" : "s");
  if (!hung.empty()) what += fmt::format(", of which {} did not answer", fmt::join(hung, ", "));
  return what;
}

// A worker that refused its input (exit code 2: input the launcher could not check before,
// such as a checkpoint directory rank 0 cannot create), if any: the cause of the others'
// failures, which then only lost their peer. (One the launcher was already stopping still
// counts: a stopped worker dies by its signal, it does not exit 2.)
std::optional<int> refused_input(const launch::SpawnResult& result) {
  for (const launch::WorkerExit& worker : result.workers) {
    if (!worker.signaled && worker.exit_code == kExitBadInput) return worker.rank;
  }
  return std::nullopt;
}

// After a failed attempt: the job resumes from the latest checkpoint, if there is one.
bool resume_from_latest(job::TrainJob& job) {
  if (job.config.checkpoint_dir.empty() || !checkpoint::latest_checkpoint(job.config.checkpoint_dir)) return false;
  job.config.resume = true;
  const graph::Graph graph = graph::load_model(job.config.model);
  job.resume_from = *job::checkpoint_to_resume(job.config, graph, job.plan.global_batch, job.config.steps);
  return true;
}

// --nproc: the job resolved once and written to a job file that every worker reads once
// (`burst train --job FILE`); after a failure, with --max-restarts left, all workers again
// from the latest checkpoint (or from the start without one), as torchrun's elastic agent.
void launch_workers(const TrainArgs& args) {
  check_device_here(args.config.device, args.nproc);
  TemporaryDirectory scratch;
  job::TrainJob job = resolve_job(args, args.nproc, scratch.path());
  for (int attempt = 0;; ++attempt) {
    const std::string job_file = fmt::format("{}/job-{}.json", scratch.path(), attempt);
    write_job_file(job, job_file);
    const std::string status_directory = fmt::format("{}/status-{}", scratch.path(), attempt);
    std::filesystem::create_directories(status_directory);
    launch::SpawnOptions options;
    options.extra_environment[launch::kStatusDirectoryVariable] = status_directory;
    // A fresh store file per attempt: a crashed attempt's keys must not meet the next one.
    // The workers meet through the file; MASTER_PORT (a free one) is set only for
    // torchrun's conventions.
    options.extra_environment[launch::kRendezvousFileVariable] = fmt::format("{}/rendezvous-{}", scratch.path(), attempt);
    const std::vector<std::string> argv{launch::current_executable(), "train", "--job", job_file};
    const launch::SpawnResult result = launch::spawn_workers(argv, args.nproc, 0, options);
    if (result.succeeded()) return;
    const std::optional<int> refused = refused_input(result);
    const std::string report = failure_report(result, refused.value_or(result.first_failed_rank.value_or(-1)),
                                              status_directory);
    if (refused) throw UserError(fmt::format("burst train: {}", report));  // a restart cannot help
    if (attempt >= args.max_restarts || result.interrupted_by) throw RunFailure(fmt::format("burst train: {}", report));
    const bool resumable = resume_from_latest(job);
    std::cerr << fmt::format("burst train: {}; restarting all workers {} (restart {} of {})\n", report,
                             resumable ? "from the latest checkpoint" : "from the start", attempt + 1,
                             args.max_restarts)
              << std::flush;
  }
}

// This process's place: from torchrun's, Slurm's or Open MPI's variables, or the only rank
// (it meets only itself: an in-process store, no port).
job::WorkerPlace place_from_environment() {
  job::WorkerPlace place;
  const auto environment = launch::process_environment();
  if (const auto interfaces = environment(launch::kGlooSocketInterfaceVariable)) {
    place.socket_interfaces = launch::socket_interfaces(*interfaces);  // a missing one: exit 2, before any rank connects
  }
  const auto identity = launch::detect_identity(environment);
  if (!identity) return place;
  place.rank = identity->rank;
  place.world_size = identity->world_size;
  place.master_address = identity->master_addr;
  place.master_port = identity->master_port;
  place.local_rank = identity->local_rank;
  place.rendezvous_file = identity->rendezvous_file;
  // torchrun's agent hosts a store at MASTER_PORT and says so; its workers are clients.
  const auto agent_store = environment("TORCHELASTIC_USE_AGENT_STORE");
  place.host_store = !(agent_store && *agent_store == "True");
  return place;
}

// `burst train --job FILE`: one worker of a resolved job. Under burst's launcher (which
// checked everything once, before any worker started) an error goes to the launcher's
// one-line report, not to a line of each worker's own.
void run_job_file(const TrainArgs& args) {
  job::TrainJob job = job::read_job_file(args.job_file);
  if (!job.config.background_model.empty()) job.config.background_command = background_command_line;
  const job::WorkerPlace place = place_from_environment();
  std::optional<launch::WorkerStatus> status = launch::WorkerStatus::from_environment(place.rank);
  if (!status) {
    run_worker(job, place);
    return;
  }
  int code = 0;
  try {
    run_worker(job, place);
  } catch (const std::exception& error) {
    code = exit_code_of(error);
    status->failed((code == kExitInternal ? "internal error: " : "") + std::string(error.what()));
  }
  if (code != 0) {
    std::fflush(nullptr);
    ::_exit(code);  // Gloo's threads may be blocked on a dead peer: do not wait for them
  }
}

// Without burst's launcher (one process, or torchrun, Slurm, mpirun): every rank resolves
// the same job from the same command line (docs/runtime.md, "Job files") and runs it.
void run_in_place(const TrainArgs& args) {
  const job::WorkerPlace place = place_from_environment();
  check_device_here(args.config.device, place.local_rank + 1);
  if (args.strategy == "burst" && place.world_size > 1 && args.cost_device.empty() && args.profile.empty()) {
    // Measured times differ between processes, and so would the plans. A given cost model
    // makes them identical.
    throw UserError("--strategy burst under torchrun, Slurm or mpirun needs --profile FILE or --cost-device KIND, "
                    "so that every rank makes the same plan (or use --nproc, or burst plan -o FILE and --plan)");
  }
  TemporaryDirectory scratch;
  const job::TrainJob job = resolve_job(args, place.world_size, scratch.path());
  run_worker(job, place);
}

void run_train(TrainArgs& args) {
  if (!args.job_file.empty()) {
    run_job_file(args);
    return;
  }
  if (args.config.model.empty()) throw UserError("--model is required (or --job FILE)");
  apply_background_option(args);
  args.config.program = parse_program_options(args.program);
  if (args.config.program.power_cap_w > 0) {
    throw UserError("burst train does not set device power limits: set them with nvidia-smi -pl (--power-cap prices "
                    "a cap in burst plan and burst sim)");
  }
  check_options(args);
  if (args.nproc != -1) {
    launch_workers(args);
  } else {
    run_in_place(args);
  }
}

}  // namespace

namespace {

// Where the plan comes from and how the workers start.
void add_plan_and_launch_options(CLI::App& command, TrainArgs& args) {
  command.add_option("--plan", args.plan_file, "Plan file (burst plan -o FILE); default: data parallel");
  command.add_option("--strategy", args.strategy,
                     "dp (default) or burst: plan here (cost model from --cost-device/--profile, else measured now)")
      ->check(CLI::IsMember({"dp", "burst"}));
  command.add_option("--cost-device", args.cost_device, "Cost model for --strategy burst: a device kind (a100, h200, ...)");
  command.add_option("--profile", args.profile, "Cost model for --strategy burst: a profile (burst profile -o FILE)");
  command.add_option("--cluster", args.cluster_file,
                     "Links for --strategy burst: a cluster file, e.g. measured by bench/measure_cpu_links.py "
                     "(default: the built-in cpu cluster)");
  command.add_option("--amplification", args.amplification, "Amplification limit for --strategy burst")
      ->capture_default_str();
  command.add_option("--global-batch", args.global_batch, "Samples per step (taken from --plan when given)");
  command.add_option("--nproc", args.nproc, "Spawn this many local workers (like torchrun --nproc-per-node)");
  command.add_option("--max-restarts", args.max_restarts,
                     "With --nproc: after a worker fails, restart all workers from the latest checkpoint, "
                     "at most this many times")
      ->capture_default_str();
  command.add_option("--timeout", args.config.timeout_s,
                     "Seconds a worker waits for another before giving up with an error (a dead or hung worker)")
      ->capture_default_str();
  command.add_option("--job", args.job_file,
                     "Run one worker of a resolved job file (what --nproc hands its workers; docs/runtime.md)")
      ->type_name("FILE");
}

// The learning-rate schedule (burst/job/lr_schedule.h; docs/runtime.md).
void add_schedule_options(CLI::App& command, job::LearningRateSchedule& schedule) {
  add_enum_option(command, "--lr-schedule", schedule.kind, job::kLearningRateKindNames,
                  "constant (default), cosine or linear (to --min-lr at the last step), or step (x --lr-gamma every "
                  "--lr-step-size steps)");
  command.add_option("--warmup-steps", schedule.warmup_steps, "Steps of linear warmup to --lr before the schedule")
      ->capture_default_str();
  command.add_option("--min-lr", schedule.min_learning_rate, "Where cosine and linear end")->capture_default_str();
  command.add_option("--lr-step-size", schedule.step_size, "--lr-schedule step: steps between decays");
  command.add_option("--lr-gamma", schedule.gamma, "--lr-schedule step: the factor of each decay")->capture_default_str();
}

// The training itself: data, optimizer, numerics, the step's options.
void add_training_options(CLI::App& command, TrainArgs& args) {
  job::TrainConfig& c = args.config;
  command.add_option("--steps", c.steps, "Training steps");
  command.add_option("--epochs", c.epochs, "Training epochs (steps = epochs x samples / global batch)");
  command.add_option("--dataset", c.dataset,
                     "synthetic, fashion-mnist, or your data: npy:DIR (inputs.npy, labels.npy), tokens:FILE (uint16 "
                     "token ids, as nanoGPT's train.bin) or images:DIR (class folders of PNG/JPEG)")
      ->capture_default_str();
  command.add_option("--val-dataset", c.val_dataset,
                     "Validation data, as --dataset (default: Fashion-MNIST's test split; synthetic data's own)");
  command.add_option("--eval-every", c.eval_every,
                     "Validation loss and accuracy every N steps and after the last, over the whole validation set")
      ->capture_default_str();
  command.add_option("--image-mean", c.image_mean, "images:DIR: per-channel means (x / 255 - mean) / std")
      ->delimiter(',')
      ->capture_default_str();
  command.add_option("--image-std", c.image_std, "images:DIR: per-channel standard deviations")
      ->delimiter(',')
      ->capture_default_str();
  command.add_option("--token-width", c.token_width, "tokens:FILE: bytes per token id, uint16 or uint32")
      ->check(CLI::IsMember({"uint16", "uint32"}))
      ->capture_default_str();
  command.add_option("--synthetic-samples", c.synthetic_samples,
                     "Samples in the synthetic dataset (docs/runtime.md; equal to --global-batch, step 1 "
                     "sees every sample)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  add_enum_option(command, "--optimizer", c.optimizer, job::kOptimizerNames, "sgd, adam, or adamw (decoupled weight decay)");
  command.add_option("--lr", c.learning_rate, "Learning rate (the schedule's peak)")->capture_default_str();
  add_schedule_options(command, c.schedule);
  add_enum_option(command, "--device", c.device, job::kComputeDeviceNames,
                  "Where each rank computes: cpu, or cuda (rank r on cuda:LOCAL_RANK)");
  command.add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str();
  command.add_option("--weight-decay", c.weight_decay, "Weight decay")->capture_default_str();
  command.add_option("--seed", c.seed, "Seed of the initial weights and the data order")->capture_default_str();
  command.add_option("--init", c.init,
                     "Initial weights: file (an ONNX model's initializers; the default for .onnx models) or "
                     "seed (torch.nn's initialisation from --seed; the default otherwise)")
      ->check(CLI::IsMember({"file", "seed"}));
  command.add_option("--threads", c.threads, "Intra-op threads per worker")->capture_default_str();
  add_program_options(command, args.program);
  add_enum_option(command, "--dtype", c.dtype, job::kDTypeNames,
                  "float32, or float64: parameters, activations, gradients and collectives in double "
                  "(the float32 initial weights, widened), for debugging numerics");
}

// What the run writes and what runs beside it.
void add_output_options(CLI::App& command, TrainArgs& args) {
  job::TrainConfig& c = args.config;
  command.add_option("--save-params", c.save_params, "Rank 0 writes every parameter here (torch.load reads it)");
  command.add_option("--trace", c.trace_file, "Write a Chrome trace (Perfetto) of steps 1-20 of all ranks")->type_name("FILE");
  command.add_option("--log-every", c.log_every, "Steps between log lines")->capture_default_str();
  command.add_option("--checkpoint-dir", c.checkpoint_dir,
                     "Write checkpoints here (step-N.ckpt; after the last step, and every --checkpoint-every steps)")
      ->type_name("DIR");
  command.add_option("--checkpoint-every", c.checkpoint_every, "Steps between checkpoints (0: only after the last)")
      ->capture_default_str();
  command.add_flag("--resume", c.resume,
                   "Continue from the latest checkpoint in --checkpoint-dir (any plan or worker count)");
  command.add_option("--background", args.background,
                     "A background job beside every worker: MODEL[:per-device-batch] (default batch 32), trained "
                     "at the lowest CPU priority in the time the foreground leaves idle");
}

}  // namespace

void add_train_commands(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* command = app.add_subcommand("train", "Train a model with a plan across worker processes");
  add_model_option(*command, args->config.model, "--model", std::string(kModelHelp) + " (required)");
  add_plan_and_launch_options(*command, *args);
  add_training_options(*command, *args);
  add_output_options(*command, *args);
  command->callback([args, command] {
    if (!args->job_file.empty()) {
      for (const CLI::Option* option : command->get_options()) {
        if (option->count() > 0 && option->get_name() != "--job" && option->get_name() != "--help") {
          throw UserError(fmt::format("--job FILE runs the job the file holds: {} does not go with it",
                                      option->get_name()));
        }
      }
    }
    run_train(*args);
  });
}

}  // namespace burst::cli
