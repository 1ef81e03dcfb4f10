// The `burst` command. Exit codes (burst/util/error.h): 0 success; 2 bad input or
// configuration, 1 a run that failed (a dead worker, a timeout, a non-finite loss), 3 an
// unexpected internal failure, each with one line on stderr.
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "burst/util/error.h"
#include "burst/util/memory_reuse.h"
#include "burst/util/utf8.h"
#include "cluster_commands.h"
#include "cluster_sim_commands.h"
#include "cost_commands.h"
#include "import_commands.h"
#include "model_commands.h"
#include "plan_commands.h"
#include "program_commands.h"
#include "sim_commands.h"
#ifdef BURST_HAVE_TORCH
#include "background_commands.h"
#include "profile_commands.h"
#include "train_commands.h"
#endif

namespace {

using burst::kExitBadInput;
using burst::kExitInternal;
using burst::kExitRunFailed;

// "burst 0.1.0 (torch 1.13.1, cuda: not built, nccl: not built)": what this build holds.
std::string version_text() {
  const std::string torch = std::string(BURST_TORCH_VERSION).empty() ? "torch: not built in"
                                                                      : fmt::format("torch {}", BURST_TORCH_VERSION);
  return fmt::format("burst {} ({}, cuda: {}, nccl: {})", BURST_VERSION, torch,
                     BURST_CUDA_BUILT ? "built" : "not built", BURST_NCCL_BUILT ? "built" : "not built");
}

// Error messages may quote user strings: escape_for_terminal keeps them on one line and
// shows bytes that are not UTF-8 and control characters as \xNN, whatever they hold.
int fail(int code, const std::string& message) {
  std::cerr << "burst: error: " << burst::escape_for_terminal(message) << '\n';
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Planning builds and drops step programs of thousands of ranks, training the same
  // tensors every step: freed blocks stay in malloc's lists instead of going back to the
  // system and faulting in again.
  burst::util::keep_freed_memory_for_reuse();
  CLI::App app{"burst: burst-parallel training for fixed global batches (strong scaling)", "burst"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  burst::cli::add_model_commands(app);
#ifdef BURST_HAVE_TORCH
  burst::cli::add_profile_commands(app);
  burst::cli::add_train_commands(app);
  burst::cli::add_background_commands(app);
#endif
  burst::cli::add_cost_commands(app);
  burst::cli::add_cluster_commands(app);
  burst::cli::add_cluster_sim_commands(app);
  burst::cli::add_import_commands(app);
  burst::cli::add_plan_commands(app);
  burst::cli::add_sim_commands(app);
  burst::cli::add_program_commands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& version) {
    std::cout << version.what() << '\n';
    return 0;
  } catch (const CLI::ParseError& error) {
    return fail(kExitBadInput, std::string(error.what()) + " (see burst --help)");
  } catch (const burst::UserError& error) {
    return fail(kExitBadInput, error.what());
  } catch (const burst::RunFailure& error) {
    return fail(kExitRunFailed, error.what());
  } catch (const std::exception& error) {
    return fail(kExitInternal, std::string("internal error: ") + error.what());
  }
  std::cout.flush();
  if (!std::cout) return fail(kExitInternal, "could not write to standard output");
  return 0;
}
