#pragma once
// Two tiers of errors (see docs/architecture.md):
//  - UserError: bad input or configuration. Thrown with the values involved; the
//    `burst` command prints its message as one line and exits with code 2.
//  - BURST_ASSERT: an internal invariant. Active in every build type (plain assert
//    vanishes in Release); a failure is a bug in burst, so it aborts with context.
#include <stdexcept>
#include <string>

namespace burst {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const std::string& message);

}  // namespace burst

#define BURST_ASSERT(condition, message)                                         \
  do {                                                                           \
    if (!(condition)) ::burst::assertion_failed(#condition, __FILE__, __LINE__, \
                                                (message));                      \
  } while (false)
