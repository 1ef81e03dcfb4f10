#pragma once
// One child process that runs a command and dies with its parent: what a worker's
// background job runs in. (spawn.h's workers need more: their own process groups, signal
// forwarding, their environment; they share the same rule that none outlives the launcher.)
#include <sys/types.h>

#include <string>
#include <vector>

namespace burst::launch {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with these arguments. The child gets SIGKILL if this process
  // dies (Linux PR_SET_PDEATHSIG). Throws UserError when it cannot fork; a program that
  // cannot be executed ends with code 127.
  explicit ChildProcess(const std::vector<std::string>& argv);
  // SIGKILL, then reaps it (a child is never left as a zombie or an orphan).
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Whether it has ended; reaps it without blocking.
  bool ended();

 private:
  pid_t pid_ = -1;
};

}  // namespace burst::launch
