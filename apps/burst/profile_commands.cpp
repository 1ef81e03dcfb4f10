#include "profile_commands.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::cli {
namespace {

// The plugin's path: BURST_TORCH_PLUGIN (a file name, set by CMake) in the executable's
// directory.
std::string plugin_path() {
  char exe[PATH_MAX];
  const ssize_t length = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length <= 0) return BURST_TORCH_PLUGIN;
  std::string dir(exe, static_cast<size_t>(length));
  dir.erase(dir.rfind('/') + 1);
  return dir + BURST_TORCH_PLUGIN;
}

// Loads the plugin (once; it stays loaded) and returns `symbol` from it.
void* plugin_symbol(const char* symbol) {
  const std::string path = plugin_path();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw UserError(fmt::format(
        "this command needs burst's libtorch plugin, which did not load: {}", ::dlerror()));
  }
  void* found = ::dlsym(handle, symbol);
  if (found == nullptr) {
    throw UserError(fmt::format("burst's libtorch plugin '{}' has no '{}'", path, symbol));
  }
  return found;
}

void run_profile(const ProfileCommandArgs& args) {
  using Command = int (*)(const ProfileCommandArgs*, std::string*);
  const auto command = reinterpret_cast<Command>(plugin_symbol("burst_profile_command"));
  std::string message;
  const int code = command(&args, &message);
  if (code == 2) throw UserError(message);
  if (code != 0) throw std::runtime_error(message);
}

}  // namespace

void add_profile_commands(CLI::App& app) {
  auto args = std::make_shared<ProfileCommandArgs>();
  args->batch_sizes = {1, 2, 4, 8, 16, 32};

  CLI::App* command = app.add_subcommand(
      "profile", "Measure every layer of a model on this CPU and write a profile file");
  command->add_option("--model", args->model, "Zoo model (NAME[:key=value,...]) or model file")
      ->required();
  command->add_option("--batch-sizes", args->batch_sizes, "Per-device batch sizes to measure")
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--threads", args->threads,
                   "Intra-op CPU threads: the cores one device stands for")
      ->capture_default_str();
  command
      ->add_option("-o,--output", args->output,
                   "Profile file to write; an existing one from this CPU and thread count is "
                   "resumed (its entries are kept, not measured again)")
      ->required();
  command->callback([args] { run_profile(*args); });
}

}  // namespace burst::cli
