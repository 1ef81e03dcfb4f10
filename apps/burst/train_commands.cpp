#include "train_commands.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
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
#include "burst/graph/data_fit.h"
#include "burst/graph/model_json.h"
#include "burst/launch/identity.h"
#include "burst/launch/spawn.h"
#include "burst/launch/worker_status.h"
#include "burst/plan/burst_planner.h"
#include "burst/plan/evaluate.h"
#include "burst/plan/plan.h"
#include "burst/plan/plan_memory.h"
#include "burst/runtime/background.h"
#include "burst/runtime/resume.h"
#include "burst/util/error.h"
#include "background_commands.h"
#include "command_inputs.h"
#include "profile_commands.h"
#include "torch_plugin.h"

namespace burst::cli {
namespace {

struct TrainArgs {
  runtime::TrainConfig config;
  int nproc = -1;  // -1: not given
  // --strategy burst: the plan is made here, before any worker starts.
  std::string strategy;        // "dp" or "burst"; empty: dp, or the --plan file
  std::string device;          // cost model: a device kind ...
  std::string profile;         // ... or a measured profile; neither: measure this CPU now
  std::string cluster_file;    // the links between the workers (default: the built-in "cpu" cluster)
  double amplification = plan::BurstOptions{}.amplification;
  int max_restarts = 0;  // --nproc: restart all workers after a failure, this many times
  std::string background;  // MODEL[:batch], split into config.background_* by apply_background_option()
};

// What burst's launcher tells its workers it validated (TrainConfig::Checked).
constexpr const char* kCheckedModelVariable = "BURST_CHECKED_MODEL";
constexpr const char* kCheckedPlanVariable = "BURST_CHECKED_PLAN";

// Options the launcher consumes; workers get the plan file instead.
bool launcher_option(const std::string& word) {
  for (const char* name :
       {"--nproc", "--strategy", "--device", "--profile", "--amplification", "--max-restarts",
        "--cluster"}) {
    if (word == name) return true;
  }
  return false;
}

// --background MODEL[:batch] into the config's background fields.
void apply_background_option(TrainArgs& args) {
  if (args.background.empty()) return;
  const ModelAndBatch background = parse_background_option(args.background, runtime::BackgroundJobConfig{}.batch);
  args.config.background_model = background.model;
  args.config.background_batch = background.batch;
  args.config.background_command = background_command_line;
}

// Refuses, before any worker starts, what cannot work: a bad model, a plan for another
// model or another number of workers, bad numbers, data the model cannot take and, with
// `check_checkpoint`, a checkpoint that cannot resume (a process that trains right after
// leaves that to the worker, so that it decodes the checkpoint once).
// Returns the fingerprints of the model and the plan it validated (the workers compare them).
// The model, loaded on first use: the cheap checks come first.
using ModelLoader = std::function<const graph::Graph&()>;

runtime::TrainConfig::Checked check(const TrainArgs& args, const ModelLoader& model, int world_size,
                                    bool check_checkpoint) {
  const runtime::TrainConfig& config = args.config;
  if (config.steps <= 0 && config.epochs <= 0) throw UserError("give --steps S or --epochs E (at least 1)");
  if (config.steps > 0 && config.epochs > 0) throw UserError("give --steps or --epochs, not both");
  if (!(config.learning_rate > 0)) throw UserError(fmt::format("--lr must be > 0, got {}", config.learning_rate));
  if (!(config.bucket_mb > 0) || !std::isfinite(config.bucket_mb)) {
    throw UserError(fmt::format("--bucket-mb must be a positive number of MiB, got {}", config.bucket_mb));
  }
  if (!(config.timeout_s > 0) || config.timeout_s > 86400) {
    throw UserError(fmt::format("--timeout must be between 0 and 86400 seconds, got {}", config.timeout_s));
  }
  if (args.max_restarts < 0) throw UserError(fmt::format("--max-restarts must be at least 0, got {}", args.max_restarts));
  if (args.max_restarts > 0 && args.nproc == -1) {
    throw UserError("--max-restarts restarts the workers --nproc starts; under torchrun use its --max_restarts");
  }
  if (!config.background_model.empty()) graph::load_model(config.background_model);  // an unknown model
  if (config.checkpoint_every < 0) {
    throw UserError(fmt::format("--checkpoint-every must be at least 0, got {}", config.checkpoint_every));
  }
  if (config.checkpoint_dir.empty() && (config.checkpoint_every > 0 || config.resume)) {
    throw UserError("--checkpoint-every and --resume need --checkpoint-dir DIR");
  }
  const graph::Graph& graph = model();
  if (config.dataset == "fashion-mnist") {
    // Fashion-MNIST's samples are [1, 28, 28] images of 10 classes (lib/data checks the files).
    graph::check_fits_samples(graph, {"fashion-mnist", {1, 28, 28}, 10});
  }
  if (config.plan_file.empty()) {
    if (config.global_batch < 1) {
      throw UserError(fmt::format("--global-batch must be at least 1, got {}", config.global_batch));
    }
    if (check_checkpoint) runtime::checkpoint_to_resume(config, graph, config.global_batch, config.steps);
    return {checkpoint::model_fingerprint(graph),
            plan::placement_fingerprint(plan::plan_data_parallel(graph, world_size, config.global_batch))};
  }
  const plan::Plan plan = plan::load_plan_file(config.plan_file);
  if (plan.devices != world_size) {
    throw UserError(fmt::format("plan '{}' is for {} devices but {} workers would run it", config.plan_file,
                                plan.devices, world_size));
  }
  plan::validate_plan(plan, graph, cluster::builtin_cluster("cpu", world_size));
  if (config.global_batch != 0 && config.global_batch != plan.global_batch) {
    throw UserError(fmt::format("--global-batch {} differs from plan '{}' ({})", config.global_batch,
                                config.plan_file, plan.global_batch));
  }
  if (check_checkpoint) runtime::checkpoint_to_resume(config, graph, plan.global_batch, config.steps);
  return {checkpoint::model_fingerprint(graph), plan::placement_fingerprint(plan)};
}

void run_worker(const runtime::TrainConfig& config, const runtime::WorkerPlace& place) {
  using Worker = int (*)(const runtime::TrainConfig*, const runtime::WorkerPlace*, std::string*);
  const auto worker = reinterpret_cast<Worker>(plugin_symbol("burst_train_worker"));
  std::string message;
  const int code = worker(&config, &place, &message);
  if (code != 0) throw_for_exit_code(code, message);
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

// --strategy burst: the cost model (given, or measured on this CPU now), the burst plan for
// `world_size` workers on this machine (fitting their share of its memory:
// plan::fit_in_memory), written to `directory`; returns the plan's path.
std::string make_burst_plan(const TrainArgs& args, const ModelLoader& model, int world_size,
                            const std::string& directory) {
  const runtime::TrainConfig& config = args.config;
  if (!config.plan_file.empty()) throw UserError("give --plan FILE or --strategy burst, not both");
  if (config.global_batch < 1) {
    throw UserError(fmt::format("--global-batch must be at least 1, got {}", config.global_batch));
  }
  const graph::Graph& graph = model();
  std::string profile = args.profile;
  if (args.device.empty() && profile.empty()) {
    // Per-device batches the plan can use: powers of two up to the global batch, and it.
    ProfileCommandArgs measure;
    measure.model = config.model;
    for (int64_t batch = 1; batch < config.global_batch; batch *= 2) measure.batch_sizes.push_back(batch);
    measure.batch_sizes.push_back(config.global_batch);
    measure.threads = config.threads;
    measure.output = directory + "/profile.json";
    std::cerr << fmt::format("burst train: measuring {} on this CPU for the burst plan (--profile FILE to reuse one)\n",
                             graph.name());
    run_profile_command(measure);
    profile = measure.output;
  }
  const cost::DeviceModel device =
      cost::resolve_device(args.device, profile.empty() ? std::nullopt : std::optional<std::string>(profile));
  const auto cost_model = cost::make_cost_model(device);
  cluster::Cluster workers = cluster::builtin_cluster("cpu", world_size);
  if (!args.cluster_file.empty()) {
    workers = cluster::load_cluster_file(args.cluster_file);
    if (workers.size() != world_size) {
      throw UserError(fmt::format("cluster file '{}' has {} devices but {} workers would run", args.cluster_file,
                                  workers.size(), world_size));
    }
  }
  const cost::NetworkModel network(workers);
  const plan::PlanContext context{graph, *cost_model, network};
  plan::BurstOptions options;
  options.amplification = args.amplification;
  options.sync_batchnorm = config.batchnorm == "sync";  // plan the step the workers will run
  const plan::BurstPlanResult burst = plan::plan_burst_with_prediction(context, config.global_batch, options);
  // The workers share this machine's memory; a burst plan over a worker's share gives way to
  // data parallelism, and when neither fits the run is refused before any worker starts.
  const cost::Optimizer optimizer = config.optimizer == "adam" ? cost::Optimizer::Adam
                                    : config.momentum > 0     ? cost::Optimizer::Momentum
                                                              : cost::Optimizer::Sgd;
  const plan::MemoryCapacity share{"cpu", Bytes(cost::machine_memory().value() / world_size)};
  const plan::FittedPlan result = plan::fit_in_memory(burst.plan, "burst", graph, optimizer, share);
  if (!result.note.empty()) std::cerr << "burst train: " << result.note << '\n';
  plan::EvaluateOptions evaluation;
  evaluation.sync_batchnorm = options.sync_batchnorm;
  evaluation.bucket_bytes = config.bucket_mb * 1024 * 1024;
  const double dp =
      plan::evaluate_plan(plan::plan_data_parallel(graph, world_size, config.global_batch), context, evaluation)
          .iteration_time.ms();
  std::vector<int> counts;
  for (const auto& layer : result.plan.layers) counts.push_back(static_cast<int>(layer.shards.size()));
  std::cerr << fmt::format("burst train: {} plan for {} workers predicts {:.3f} ms per iteration (data parallel "
                           "{:.3f} ms); devices per layer: {}\n",
                           result.plan.strategy == "dp" ? "data-parallel" : "burst", world_size, plan::evaluate_plan(result.plan, context, evaluation).iteration_time.ms(), dp,
                           fmt::join(counts, " "));
  const std::string path = directory + "/plan.json";
  plan::save_plan_file(result.plan, path);
  return path;
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

// Runs the workers; after a failure, with --max-restarts left, runs them all again from the
// latest checkpoint (or from the start without one), as torchrun's elastic agent does.
void run_workers(const TrainArgs& args, std::vector<std::string> argv, const std::string& scratch) {
  for (int attempt = 0;; ++attempt) {
    const std::string status_directory = fmt::format("{}/status-{}", scratch, attempt);
    std::filesystem::create_directories(status_directory);
    launch::SpawnOptions options;
    options.extra_environment[launch::kStatusDirectoryVariable] = status_directory;
    options.extra_environment[kCheckedModelVariable] = args.config.checked.model;
    options.extra_environment[kCheckedPlanVariable] = args.config.checked.plan;
    // A fresh store file per attempt: a crashed attempt's keys must not meet the next one.
    options.extra_environment[launch::kRendezvousFileVariable] = fmt::format("{}/rendezvous-{}", scratch, attempt);
    // The workers meet through the file; MASTER_PORT (a free one) is set only for torchrun's
    // conventions.
    const launch::SpawnResult result = launch::spawn_workers(argv, args.nproc, 0, options);
    if (result.succeeded()) return;
    const std::optional<int> refused = refused_input(result);
    const std::string report = failure_report(result, refused.value_or(result.first_failed_rank.value_or(-1)),
                                              status_directory);
    if (refused) throw UserError(fmt::format("burst train: {}", report));  // a restart cannot help
    if (attempt >= args.max_restarts || result.interrupted_by) throw RunFailure(fmt::format("burst train: {}", report));
    const bool resumable = !args.config.checkpoint_dir.empty() &&
                           checkpoint::latest_checkpoint(args.config.checkpoint_dir).has_value();
    if (resumable && std::find(argv.begin(), argv.end(), "--resume") == argv.end()) argv.push_back("--resume");
    std::cerr << fmt::format("burst train: {}; restarting all workers {} (restart {} of {})\n", report,
                             resumable ? "from the latest checkpoint" : "from the start", attempt + 1,
                             args.max_restarts)
              << std::flush;
  }
}

// This process's own command line (Linux: /proc/self/cmdline, NUL-separated words).
std::vector<std::string> own_command_line() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> words;
  std::string word;
  while (std::getline(file, word, '\0')) words.push_back(word);
  if (words.empty()) throw std::runtime_error("cannot read /proc/self/cmdline");
  return words;
}

void run_train(TrainArgs& args) {
  apply_background_option(args);
  // Loaded once, when the launcher needs it (an ONNX model is parsed here and again by each
  // worker, which also takes its weights).
  std::optional<graph::Graph> loaded;
  const ModelLoader model = [&]() -> const graph::Graph& {
    if (!loaded) loaded.emplace(graph::load_model(args.config.model));
    return *loaded;
  };
  if (args.strategy != "burst" && (!args.cluster_file.empty() || !args.device.empty() || !args.profile.empty())) {
    throw UserError("--cluster, --device and --profile choose the cost model of --strategy burst; give it too");
  }
  if (args.nproc != -1) {
    if (args.nproc < 1 || args.nproc > launch::kMaxLocalWorkers) {
      throw UserError(fmt::format("--nproc must be between 1 and {}, got {}", launch::kMaxLocalWorkers, args.nproc));
    }
    TemporaryDirectory scratch;
    if (args.strategy == "burst") args.config.plan_file = make_burst_plan(args, model, args.nproc, scratch.path());
    args.config.checked = check(args, model, args.nproc, /*check_checkpoint=*/true);
    const std::vector<std::string> words = own_command_line();
    std::vector<std::string> argv{launch::current_executable()};
    for (size_t i = 1; i < words.size(); ++i) {
      const std::string& word = words[i];
      const std::string name = word.substr(0, word.find('='));
      if (launcher_option(name)) {
        if (name == word) ++i;  // "--option value": skip the value too
        continue;
      }
      argv.push_back(word);
    }
    if (args.strategy == "burst") {
      argv.push_back("--plan");
      argv.push_back(args.config.plan_file);
    }
    run_workers(args, argv, scratch.path());
    return;
  }
  runtime::WorkerPlace place;
  if (const auto identity = launch::detect_identity(launch::process_environment())) {
    place.rank = identity->rank;
    place.world_size = identity->world_size;
    place.master_address = identity->master_addr;
    place.master_port = identity->master_port;
    place.rendezvous_file = identity->rendezvous_file;
    // torchrun's agent hosts a store at MASTER_PORT and says so; its workers are clients.
    const auto agent_store = launch::process_environment()("TORCHELASTIC_USE_AGENT_STORE");
    place.host_store = !(agent_store && *agent_store == "True");
  }  // else one process alone: it meets only itself (an in-process store, no port)
  TemporaryDirectory scratch;
  if (args.strategy == "burst") {
    if (place.world_size > 1 && args.device.empty() && args.profile.empty()) {
      // Every rank plans for itself; measured times differ between processes, and so
      // would the plans. A given cost model makes them identical.
      throw UserError("--strategy burst under torchrun, Slurm or mpirun needs --profile FILE or --device KIND, "
                      "so that every rank makes the same plan (or use --nproc, or burst plan -o FILE and --plan)");
    }
    args.config.plan_file = make_burst_plan(args, model, place.world_size, scratch.path());
  }
  // Under burst's own launcher (which checked everything once, before any worker started)
  // the error goes to the launcher's one-line report, not to a line of each worker's own.
  std::optional<launch::WorkerStatus> status = launch::WorkerStatus::from_environment(place.rank);
  if (!status) {
    check(args, model, place.world_size, /*check_checkpoint=*/false);
    run_worker(args.config, place);
    return;
  }
  const auto environment = launch::process_environment();
  args.config.checked.model = environment(kCheckedModelVariable).value_or("");
  args.config.checked.plan = environment(kCheckedPlanVariable).value_or("");
  int code = 0;
  try {
    run_worker(args.config, place);
  } catch (const std::exception& error) {
    code = exit_code_of(error);
    status->failed((code == kExitInternal ? "internal error: " : "") + std::string(error.what()));
  }
  if (code != 0) {
    std::fflush(nullptr);
    ::_exit(code);  // Gloo's threads may be blocked on a dead peer: do not wait for them
  }
}

}  // namespace

void add_train_commands(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  runtime::TrainConfig& c = args->config;
  CLI::App* command = app.add_subcommand("train", "Train a model with a plan across worker processes");
  command->add_option("--model", c.model, "Zoo model (NAME[:key=value,...]) or model file")->required();
  command->add_option("--plan", c.plan_file, "Plan file (burst plan -o FILE); default: data parallel");
  command->add_option("--strategy", args->strategy,
                      "dp (default) or burst: plan here (cost model from --device/--profile, else measured now)")
      ->check(CLI::IsMember({"dp", "burst"}));
  command->add_option("--device", args->device, "Cost model for --strategy burst: a device kind");
  command->add_option("--profile", args->profile, "Cost model for --strategy burst: a profile (burst profile -o FILE)");
  command->add_option("--cluster", args->cluster_file,
                      "Links for --strategy burst: a cluster file, e.g. measured by bench/measure_cpu_links.py "
                      "(default: the built-in cpu cluster)");
  command->add_option("--amplification", args->amplification, "Amplification limit for --strategy burst")
      ->capture_default_str();
  command->add_option("--global-batch", c.global_batch, "Samples per step (taken from --plan when given)");
  command->add_option("--steps", c.steps, "Training steps");
  command->add_option("--epochs", c.epochs, "Training epochs (steps = epochs x samples / global batch)");
  command->add_option("--dataset", c.dataset, "synthetic or fashion-mnist")
      ->check(CLI::IsMember({"synthetic", "fashion-mnist"}))
      ->capture_default_str();
  command->add_option("--synthetic-samples", c.synthetic_samples,
                      "Samples in the synthetic dataset (docs/runtime.md; equal to --global-batch, step 1 "
                      "sees every sample)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  command->add_option("--optimizer", c.optimizer, "sgd or adam")->check(CLI::IsMember({"sgd", "adam"}))->capture_default_str();
  command->add_option("--lr", c.learning_rate, "Learning rate")->capture_default_str();
  command->add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str();
  command->add_option("--weight-decay", c.weight_decay, "Weight decay")->capture_default_str();
  command->add_option("--seed", c.seed, "Seed of the initial weights and the data order")->capture_default_str();
  command->add_option("--init", c.init,
                      "Initial weights: file (an ONNX model's initializers; the default for .onnx models) or "
                      "seed (torch.nn's initialisation from --seed; the default otherwise)")
      ->check(CLI::IsMember({"file", "seed"}));
  command->add_option("--save-params", c.save_params, "Rank 0 writes every parameter here (torch.load reads it)");
  command->add_option("--trace", c.trace_file, "Write a Chrome trace (Perfetto) of steps 1-20 of all ranks")->type_name("FILE");
  command->add_option("--log-every", c.log_every, "Steps between log lines")->capture_default_str();
  command->add_option("--checkpoint-dir", c.checkpoint_dir,
                      "Write checkpoints here (step-N.ckpt; after the last step, and every --checkpoint-every steps)")
      ->type_name("DIR");
  command->add_option("--checkpoint-every", c.checkpoint_every, "Steps between checkpoints (0: only after the last)")
      ->capture_default_str();
  command->add_option("--background", args->background,
                      "A background job beside every worker: MODEL[:per-device-batch] (default batch 32), trained "
                      "at the lowest CPU priority in the time the foreground leaves idle");
  command->add_option("--timeout", c.timeout_s,
                      "Seconds a worker waits for another before giving up with an error (a dead or hung worker)")
      ->capture_default_str();
  command->add_option("--max-restarts", args->max_restarts,
                      "With --nproc: after a worker fails, restart all workers from the latest checkpoint, "
                      "at most this many times")
      ->capture_default_str();
  command->add_flag("--resume", c.resume,
                    "Continue from the latest checkpoint in --checkpoint-dir (any plan or worker count)");
  command->add_option("--threads", c.threads, "Intra-op threads per worker")->capture_default_str();
  command->add_option("--bucket-mb", c.bucket_mb,
                      "Gradient bucket cap in MiB: a bucket's all-reduce starts when it holds this much "
                      "(as DDP's bucket_cap_mb) or its group's last layer is done")
      ->capture_default_str();
  command->add_option("--batchnorm", c.batchnorm,
                      "sync: BatchNorm statistics over all the layer's ranks (the one-device result); "
                      "local: each rank's own samples (what DDP and DeepPool do)")
      ->check(CLI::IsMember({"sync", "local"}))
      ->capture_default_str();
  command->add_option("--dtype", c.dtype,
                      "float32, or float64: parameters, activations, gradients and collectives in double "
                      "(the float32 initial weights, widened), for debugging numerics")
      ->check(CLI::IsMember({"float32", "float64"}))
      ->capture_default_str();
  command->add_option("--nproc", args->nproc, "Spawn this many local workers (like torchrun --nproc-per-node)");
  command->callback([args] { run_train(*args); });
}

}  // namespace burst::cli
