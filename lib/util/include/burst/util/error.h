#pragma once
// Three tiers of errors (see docs/architecture.md, "Errors and exit codes"):
//  - UserError: bad input or configuration. Thrown with the values involved; the
//    `burst` command prints its message as one line and exits with code 2.
//  - RunFailure: a run that could not finish although its input was good: a dead or hung
//    worker, a timeout, a lost connection. One line naming the rank and what it waited
//    for; exit code 1 (as torchrun's for a failed worker).
//  - BURST_ASSERT: an internal invariant. Active in every build type (plain assert
//    vanishes in Release); a failure is a bug in burst, so it aborts with context.
#include <stdexcept>
#include <string>

namespace burst {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

class RunFailure : public std::runtime_error {
 public:
  explicit RunFailure(const std::string& message) : std::runtime_error(message) {}
};

// The `burst` command's exit codes (docs/architecture.md, "Errors and exit codes").
constexpr int kExitRunFailed = 1;  // RunFailure
constexpr int kExitBadInput = 2;   // UserError, and command lines CLI11 refuses
constexpr int kExitInternal = 3;   // any other exception: a bug in burst

// The exit code of an error (RunFailure 1, UserError 2, anything else 3), and back: how
// errors cross a process or plugin boundary that passes only a code and a message.
int exit_code_of(const std::exception& error);
[[noreturn]] void throw_for_exit_code(int code, const std::string& message);

[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const std::string& message);

}  // namespace burst

#define BURST_ASSERT(condition, message)                                         \
  do {                                                                           \
    if (!(condition)) ::burst::assertion_failed(#condition, __FILE__, __LINE__, \
                                                (message));                      \
  } while (false)
