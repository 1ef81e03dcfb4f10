// The measured applications shipped with burst (data/pollux-traces/applications), built in.
#include <string_view>
#include <utility>
#include <vector>

#include "burst/cluster_sim/application_tables.h"

namespace burst::cluster_sim {

std::vector<std::pair<std::string_view, std::string_view>> builtin_application_texts();  // generated

const ApplicationTables& builtin_application_tables() {
  static const ApplicationTables tables = [] {
    std::map<std::string, std::string> files;
    for (const auto& [path, text] : builtin_application_texts()) files.emplace(std::string(path), std::string(text));
    return parse_application_tables(files, "built-in applications");
  }();
  return tables;
}

}  // namespace burst::cluster_sim
