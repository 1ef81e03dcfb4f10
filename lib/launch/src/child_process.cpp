#include "burst/launch/child_process.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::launch {

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  BURST_ASSERT(!argv.empty(), "a child process needs a program");
  // Everything the child needs before the fork: after it, only async-signal-safe calls.
  std::vector<std::string> words = argv;
  std::vector<char*> pointers;
  for (std::string& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw UserError(fmt::format("cannot start '{}': {}", argv[0], std::strerror(errno)));
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
    ::execv(pointers[0], pointers.data());
    ::_exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

bool ChildProcess::ended() {
  if (pid_ <= 0) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  return true;
}

}  // namespace burst::launch
