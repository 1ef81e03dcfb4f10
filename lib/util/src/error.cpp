#include "burst/util/error.h"

#include <cstdio>
#include <cstdlib>

namespace burst {

int exit_code_of(const std::exception& error) {
  if (dynamic_cast<const UserError*>(&error) != nullptr) return kExitBadInput;
  if (dynamic_cast<const RunFailure*>(&error) != nullptr) return kExitRunFailed;
  return kExitInternal;
}

void throw_for_exit_code(int code, const std::string& message) {
  if (code == kExitBadInput) throw UserError(message);
  if (code == kExitRunFailed) throw RunFailure(message);
  throw std::runtime_error(message);
}

void assertion_failed(const char* condition, const char* file, int line,
                      const std::string& message) {
  std::fprintf(stderr, "burst: internal error: %s (%s) at %s:%d\n", message.c_str(), condition,
               file, line);
  std::abort();
}

}  // namespace burst
