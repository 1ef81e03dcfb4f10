// The libtorch side of `burst profile`, built into the plugin libburst_torch_commands.so
// (see profile_commands.h for why it is a plugin).
#include <unistd.h>

#include <exception>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "burst/graph/model_json.h"
#include "burst/profiler/profiler.h"
#include "burst/util/error.h"
#include "profile_commands.h"

namespace burst::cli {
namespace {

void profile(const ProfileCommandArgs& args) {
  const graph::Graph graph = graph::load_model(args.model);
  profiler::ProfileOptions options;
  options.threads = args.threads;
  options.device = args.device;
  options.co_located = args.co_located;
  options.tensor_parts = args.tensor_parts;
  options.output_path = args.output;
  options.progress = &std::cerr;
  options.redraw = ::isatty(STDERR_FILENO) == 1;
  profiler::ProfileStatus last;
  options.on_signature = [&last](const profiler::ProfileStatus& status) { last = status; };
  const cost::Profile written = profiler::profile_model(graph, args.batch_sizes, options);
  std::cerr << fmt::format(
      "wrote {}: {} signatures of {} ({} entries measured, {} kept from the file) in {:.1f} s; "
      "{} entries in the file\n",
      args.output, last.signatures_total, graph.name(), last.entries_measured,
      last.entries_reused, last.elapsed.s(), written.entries.size());
}

}  // namespace
}  // namespace burst::cli

extern "C" __attribute__((visibility("default"))) int burst_profile_command(
    const burst::cli::ProfileCommandArgs* args, std::string* message) {
  try {
    burst::cli::profile(*args);
    return 0;
  } catch (const std::exception& error) {
    *message = error.what();
    return burst::exit_code_of(error);
  }
}
