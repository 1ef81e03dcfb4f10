#include "train_commands.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "burst/cluster/cluster.h"
#include "burst/graph/model_json.h"
#include "burst/launch/identity.h"
#include "burst/launch/spawn.h"
#include "burst/plan/plan.h"
#include "burst/util/error.h"
#include "torch_plugin.h"

namespace burst::cli {
namespace {

struct TrainArgs {
  runtime::TrainConfig config;
  int nproc = -1;  // -1: not given
  int master_port = 0;
};

// Refuses, before any worker starts, what cannot work: a bad model, a plan for another
// model or another number of workers, bad numbers.
void check(const TrainArgs& args, int world_size) {
  const runtime::TrainConfig& config = args.config;
  if (config.steps <= 0 && config.epochs <= 0) throw UserError("give --steps S or --epochs E (at least 1)");
  if (config.steps > 0 && config.epochs > 0) throw UserError("give --steps or --epochs, not both");
  if (!(config.learning_rate > 0)) throw UserError(fmt::format("--lr must be > 0, got {}", config.learning_rate));
  const graph::Graph graph = graph::load_model(config.model);
  if (config.plan_file.empty()) {
    if (config.global_batch < 1) {
      throw UserError(fmt::format("--global-batch must be at least 1, got {}", config.global_batch));
    }
    return;
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
}

void run_worker(const runtime::TrainConfig& config, const runtime::WorkerPlace& place) {
  using Worker = int (*)(const runtime::TrainConfig*, const runtime::WorkerPlace*, std::string*);
  const auto worker = reinterpret_cast<Worker>(plugin_symbol("burst_train_worker"));
  std::string message;
  const int code = worker(&config, &place, &message);
  if (code == 2) throw UserError(message);
  if (code != 0) throw std::runtime_error(message);
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
  if (args.nproc != -1) {
    if (args.nproc < 1 || args.nproc > launch::kMaxLocalWorkers) {
      throw UserError(fmt::format("--nproc must be between 1 and {}, got {}", launch::kMaxLocalWorkers, args.nproc));
    }
    check(args, args.nproc);
    const std::vector<std::string> words = own_command_line();
    std::vector<std::string> argv{launch::current_executable()};
    for (size_t i = 1; i < words.size(); ++i) {
      const std::string& word = words[i];
      if (word == "--nproc") {
        ++i;  // and its value
        continue;
      }
      if (word.rfind("--nproc=", 0) == 0) continue;
      argv.push_back(word);
    }
    const launch::SpawnResult result =
        launch::spawn_workers(argv, args.nproc, args.master_port > 0 ? args.master_port : launch::pick_free_port());
    if (!result.succeeded()) throw UserError(fmt::format("burst train: {}", result.describe()));
    return;
  }
  runtime::WorkerPlace place;
  if (const auto identity = launch::detect_identity(launch::process_environment())) {
    place.rank = identity->rank;
    place.world_size = identity->world_size;
    place.master_address = identity->master_addr;
    place.master_port = identity->master_port;
  } else {
    place.master_port = launch::pick_free_port();
  }
  check(args, place.world_size);
  run_worker(args.config, place);
}

}  // namespace

void add_train_commands(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  runtime::TrainConfig& c = args->config;
  CLI::App* command = app.add_subcommand("train", "Train a model with a plan across worker processes");
  command->add_option("--model", c.model, "Zoo model (NAME[:key=value,...]) or model file")->required();
  command->add_option("--plan", c.plan_file, "Plan file (burst plan -o FILE); default: data parallel");
  command->add_option("--global-batch", c.global_batch, "Samples per step (taken from --plan when given)");
  command->add_option("--steps", c.steps, "Training steps");
  command->add_option("--epochs", c.epochs, "Training epochs (steps = epochs x samples / global batch)");
  command->add_option("--dataset", c.dataset, "synthetic or fashion-mnist")
      ->check(CLI::IsMember({"synthetic", "fashion-mnist"}))
      ->capture_default_str();
  command->add_option("--optimizer", c.optimizer, "sgd or adam")->check(CLI::IsMember({"sgd", "adam"}))->capture_default_str();
  command->add_option("--lr", c.learning_rate, "Learning rate")->capture_default_str();
  command->add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str();
  command->add_option("--weight-decay", c.weight_decay, "Weight decay")->capture_default_str();
  command->add_option("--seed", c.seed, "Seed of the initial weights and the data order")->capture_default_str();
  command->add_option("--save-params", c.save_params, "Rank 0 writes every parameter here (torch.load reads it)");
  command->add_option("--log-every", c.log_every, "Steps between log lines")->capture_default_str();
  command->add_option("--threads", c.threads, "Intra-op threads per worker")->capture_default_str();
  command->add_option("--nproc", args->nproc, "Spawn this many local workers (like torchrun --nproc-per-node)");
  command->add_option("--master-port", args->master_port, "Rendezvous port with --nproc (default: a free one)");
  command->callback([args] { run_train(*args); });
}

}  // namespace burst::cli
