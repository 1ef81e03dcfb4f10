#include "background_commands.h"

#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "burst/launch/spawn.h"
#include "burst/util/error.h"
#include "torch_plugin.h"
#include "model_option.h"

namespace burst::cli {

void run_background_command(const job::BackgroundJobConfig& config) {
  using Command = int (*)(const job::BackgroundJobConfig*, std::string*);
  const auto command = reinterpret_cast<Command>(plugin_symbol("burst_background_job"));
  std::string message;
  const int code = command(&config, &message);
  if (code != 0) throw_for_exit_code(code, message);
}

std::vector<std::string> background_command_line(const job::BackgroundJobConfig& job) {
  std::vector<std::string> words = {launch::current_executable(), "background", "--model", job.model,
                                    "--batch", std::to_string(job.batch), "--steps", std::to_string(job.steps),
                                    "--seed", std::to_string(job.seed), "--lr", fmt::format("{}", job.learning_rate),
                                    "--device", job.device};
  if (job.idle) words.push_back("--idle");
  if (!job.progress_file.empty()) {
    words.push_back("--progress");
    words.push_back(job.progress_file);
  }
  return words;
}

void add_background_commands(CLI::App& app) {
  auto config = std::make_shared<job::BackgroundJobConfig>();
  CLI::App* command = app.add_subcommand(
      "background", "Train a model alone on synthetic data, as a background job does (its throughput alone)");
  add_model_option(*command, config->model)->required();
  command->add_option("--batch", config->batch, "Samples per step")->capture_default_str();
  command->add_option("--steps", config->steps, "Steps to run (0: until stopped)")->capture_default_str();
  command->add_flag("--idle", config->idle, "Run at the lowest CPU scheduling class (SCHED_IDLE)");
  command->add_option("--progress", config->progress_file, "Share progress through this file (used by burst train)");
  command->add_option("--seed", config->seed, "Seed of the weights")->capture_default_str();
  command->add_option("--lr", config->learning_rate, "Learning rate")->capture_default_str();
  command->add_option("--device", config->device, "cpu, or cuda:N (a low-priority stream on GPU N)")
      ->capture_default_str();
  command->callback([config] {
    if (config->steps == 0 && config->progress_file.empty()) {
      throw UserError("burst background needs --steps N (it runs until stopped only under burst train)");
    }
    run_background_command(*config);
  });
}

}  // namespace burst::cli
