#include "profile_commands.h"
#include "torch_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "burst/job/train_config.h"
#include "burst/util/error.h"
#include "model_option.h"

namespace burst::cli {

void run_profile_command(const ProfileCommandArgs& args) {
  using Command = int (*)(const ProfileCommandArgs*, std::string*);
  const auto command = reinterpret_cast<Command>(plugin_symbol("burst_profile_command"));
  std::string message;
  const int code = command(&args, &message);
  if (code != 0) throw_for_exit_code(code, message);
}

void add_profile_commands(CLI::App& app) {
  auto args = std::make_shared<ProfileCommandArgs>();
  args->batch_sizes = {1, 2, 4, 8, 16, 32};

  CLI::App* command = app.add_subcommand(
      "profile", "Measure every layer of a model on this CPU (or GPU 0) and write a profile file");
  add_model_option(*command, args->model)
      ->required();
  command->add_option("--batch-sizes", args->batch_sizes, "Per-device batch sizes to measure")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--device", args->device, "cpu, or cuda: GPU 0, timed with CUDA events (a CUDA build)")
      ->check(CLI::IsMember(job::kComputeDeviceNames.names()))
      ->capture_default_str();
  command
      ->add_option("--threads", args->threads,
                   "Intra-op CPU threads: the cores one device stands for")
      ->capture_default_str();
  command
      ->add_option("--co-located", args->co_located,
                   "Devices of a node that run the same layer at once: time each layer while N-1 "
                   "other threads run the same work (CPU devices sharing memory bandwidth)")
      ->capture_default_str();
  command
      ->add_option("--tensor-parts", args->tensor_parts,
                   "Also measure one part of every linear and self_attention layer under the column, row "
                   "and heads splits into these part counts that divide it (tensor splits; e.g. 2,4,8)")
      ->delimiter(',');
  command
      ->add_option("-o,--output", args->output,
                   "Profile file to write; an existing one from this CPU and thread count is "
                   "resumed (its entries are kept, not measured again)")
      ->required();
  command->callback([args] { run_profile_command(*args); });
}

}  // namespace burst::cli
