#include "burst/util/enum_names.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace burst {

void throw_unknown_name(const char* what, const std::string& word, const std::vector<std::string>& known) {
  throw UserError(fmt::format("unknown {} '{}' (known: {})", what, word, fmt::join(known, ", ")));
}

}  // namespace burst
