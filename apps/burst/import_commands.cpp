#include "import_commands.h"

#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "burst/deeppool/deeppool_import.h"
#include "burst/cost/profile.h"

namespace burst::cli {

void add_import_commands(CLI::App& app) {
  struct Options {
    std::string data = deeppool::default_data_dir();
    std::string output;
  };
  auto options = std::make_shared<Options>();

  CLI::App* deeppool = app.add_subcommand(
      "import-deeppool",
      "Convert the DeepPool authors' A100 per-layer timings into a profile (docs/a100-profile.md)");
  deeppool->add_option("--data", options->data, "Directory with the DeepPool files")
      ->capture_default_str();
  deeppool->add_option("-o,--output", options->output, "Profile file to write")->required();
  deeppool->callback([options] {
    const deeppool::ImportResult result = deeppool::import_deeppool(options->data);
    cost::save_profile_file(result.profile, options->output);
    deeppool::print_match_report(result, std::cout);
    std::cerr << fmt::format("wrote {} ({} entries)\n", options->output,
                             result.profile.entries.size());
  });
}

}  // namespace burst::cli
