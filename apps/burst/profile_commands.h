#pragma once
// `burst profile`, built only when libtorch is available (BURST_HAVE_TORCH).
//
// The burst executable stays libtorch-free: loading libtorch costs about a second of static
// initialisation, which every other command (and the CLI test suites, hundreds of runs)
// would pay. The command's options are parsed here; the measuring runs in a plugin,
// libburst_torch_commands.so beside the executable, loaded with dlopen only when the command
// runs (later libtorch commands, e.g. the runtime's, can join the same plugin).
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace burst::cli {

// Registers `burst profile --model M [--batch-sizes 1,2,4] [--threads T] -o FILE`: measures
// every layer signature of M on the local CPU and writes (or resumes) a profile file. Errors
// are thrown as burst::UserError (including a missing plugin).
void add_profile_commands(CLI::App& app);

// What `burst profile` hands to the plugin.
struct ProfileCommandArgs {
  std::string model;
  std::vector<int64_t> batch_sizes;
  int threads = 1;
  int co_located = 1;
  std::vector<int32_t> tensor_parts;  // tensor-split part counts also measured (none: whole layers)
  std::string output;
  std::string device = "cpu";  // "cpu" or "cuda" (profiler::ProfileOptions::device)
};

// Runs `burst profile` with `args` in the plugin (UserError for bad input).
void run_profile_command(const ProfileCommandArgs& args);

}  // namespace burst::cli

// Exported by the plugin (profile_plugin.cpp): runs `burst profile`. Returns 0 on success,
// else the error's exit code (burst::exit_code_of); on failure `*message` holds the reason. Exceptions never cross the plugin boundary.
extern "C" int burst_profile_command(const burst::cli::ProfileCommandArgs* args,
                                     std::string* message);
