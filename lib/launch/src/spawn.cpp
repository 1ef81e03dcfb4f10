// Starting, watching and stopping local worker processes (see spawn.h for the contract).
#include "burst/launch/spawn.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <system_error>

#include <fmt/format.h>

#include "burst/launch/identity.h"
#include "burst/util/error.h"
#include "burst/util/json_io.h"

namespace burst::launch {
namespace {

using Clock = std::chrono::steady_clock;

// How often the wait loop looks at the workers even without a signal: SIGCHLD may be taken
// by another thread that does not block it, so signals only speed the loop up.
constexpr std::chrono::milliseconds kPollInterval{100};

// Blocks a set of signals in the calling thread for this object's lifetime.
class ScopedSignalBlock {
 public:
  explicit ScopedSignalBlock(const sigset_t& signals) {
    pthread_sigmask(SIG_BLOCK, &signals, &previous_);
  }
  ~ScopedSignalBlock() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  ScopedSignalBlock(const ScopedSignalBlock&) = delete;
  ScopedSignalBlock& operator=(const ScopedSignalBlock&) = delete;
  // The mask before blocking: what workers get back before exec.
  const sigset_t& previous() const { return previous_; }

 private:
  sigset_t previous_{};
};

// When SIGCHLD is ignored the kernel reaps children itself and waitpid cannot report
// them, so it is set to the default (which also does nothing) while workers run.
class ScopedChildSignalDefault {
 public:
  ScopedChildSignalDefault() {
    sigaction(SIGCHLD, nullptr, &previous_);
    if (previous_.sa_handler == SIG_IGN) {
      struct sigaction default_action {};
      default_action.sa_handler = SIG_DFL;
      sigaction(SIGCHLD, &default_action, nullptr);
      changed_ = true;
    }
  }
  ~ScopedChildSignalDefault() {
    if (changed_) sigaction(SIGCHLD, &previous_, nullptr);
  }
  ScopedChildSignalDefault(const ScopedChildSignalDefault&) = delete;
  ScopedChildSignalDefault& operator=(const ScopedChildSignalDefault&) = delete;

 private:
  struct sigaction previous_ {};
  bool changed_ = false;
};

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

// argv[0] as a path: as given when it has a '/', else the first match in PATH.
std::string resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (!is_executable_file(program)) {
      throw UserError(fmt::format("cannot start workers: '{}' is not an executable file",
                                  text_excerpt(program)));
    }
    return program;
  }
  const char* path_variable = std::getenv("PATH");
  const std::string search = path_variable != nullptr ? path_variable : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= search.size()) {
    const size_t end = std::min(search.find(':', start), search.size());
    const std::string directory = end == start ? "." : search.substr(start, end - start);
    const std::string candidate = directory + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  throw UserError(fmt::format("cannot start workers: '{}' is not found in PATH",
                              text_excerpt(program)));
}

// Strings and the null-terminated char* array execve wants, built before fork: the child
// of a multi-threaded process may only make async-signal-safe calls, so it allocates nothing.
class CStringArray {
 public:
  explicit CStringArray(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (std::string& text : strings_) pointers_.push_back(text.data());
    pointers_.push_back(nullptr);
  }
  char* const* get() const { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

// This process's environment with `overrides` replacing or adding variables.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (overrides.count(text.substr(0, text.find('='))) == 0) entries.push_back(text);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  return entries;
}

struct Worker {
  pid_t pid = 0;
  bool running = false;
  WorkerExit exit;
};

// The child's side of fork: own process group, death signal, original mask, exec.
[[noreturn]] void become_worker(pid_t launcher, const sigset_t& original_mask,
                                const std::string& program, const CStringArray& argv,
                                const CStringArray& environment, const std::string& exec_failure) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(127);  // the launcher died before the line above
  pthread_sigmask(SIG_SETMASK, &original_mask, nullptr);
  execve(program.c_str(), argv.get(), environment.get());
  const ssize_t ignored = write(STDERR_FILENO, exec_failure.data(), exec_failure.size());
  (void)ignored;
  _exit(127);
}

class WorkerGroup {
 public:
  explicit WorkerGroup(std::chrono::milliseconds grace_period) : grace_period_(grace_period) {}

  void add(int rank, pid_t pid) {
    Worker worker;
    worker.pid = pid;
    worker.running = true;
    worker.exit.rank = rank;
    worker.exit.pid = pid;
    workers_.push_back(worker);
  }

  bool any_running() const {
    for (const Worker& worker : workers_) {
      if (worker.running) return true;
    }
    return false;
  }

  // Reaps every worker that has ended; returns the ranks that failed on their own.
  std::vector<int> reap_ended() {
    std::vector<int> failed;
    for (Worker& worker : workers_) {
      if (!worker.running) continue;
      int status = 0;
      const pid_t reaped = waitpid(worker.pid, &status, WNOHANG);
      if (reaped == 0) continue;
      BURST_ASSERT(reaped == worker.pid, fmt::format("waitpid({}) failed: {}", worker.pid,
                                                     std::strerror(errno)));
      worker.running = false;
      if (WIFSIGNALED(status)) {
        worker.exit.signaled = true;
        worker.exit.signal = WTERMSIG(status);
        worker.exit.core_dumped = WCOREDUMP(status);
      } else {
        worker.exit.exit_code = WEXITSTATUS(status);
      }
      // Whatever the worker left running in its process group ends with it.
      kill(-worker.pid, SIGKILL);
      if (!worker.exit.succeeded() && !worker.exit.stopped_by_launcher) {
        failed.push_back(worker.exit.rank);
      }
    }
    return failed;
  }

  // Asks every running worker (its whole process group) to stop: `signal` first, SIGKILL
  // once the grace period is over (see escalate_if_due).
  void stop(int signal) {
    if (!stop_deadline_) stop_deadline_ = Clock::now() + grace_period_;
    signal_running(signal);
  }
  void kill_now() {
    signal_running(SIGKILL);
    killed_ = true;
  }
  bool stopping() const { return stop_deadline_.has_value(); }
  void escalate_if_due() {
    if (stop_deadline_ && !killed_ && Clock::now() >= *stop_deadline_) kill_now();
  }
  // How long the wait loop may sleep: the poll interval, or less to meet the deadline.
  std::chrono::nanoseconds next_wait() const {
    std::chrono::nanoseconds wait = kPollInterval;
    if (stop_deadline_ && !killed_) {
      wait = std::min<std::chrono::nanoseconds>(wait, *stop_deadline_ - Clock::now());
    }
    return std::max<std::chrono::nanoseconds>(wait, std::chrono::nanoseconds{0});
  }

  std::vector<WorkerExit> exits() const {
    std::vector<WorkerExit> result;
    for (const Worker& worker : workers_) result.push_back(worker.exit);
    return result;
  }

  // Kills and reaps every worker; for error paths.
  void kill_and_reap_all() {
    kill_now();
    for (Worker& worker : workers_) {
      if (!worker.running) continue;
      int status = 0;
      while (waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
      }
      worker.running = false;
    }
  }

 private:
  void signal_running(int signal) {
    for (Worker& worker : workers_) {
      if (!worker.running) continue;
      worker.exit.stopped_by_launcher = true;
      kill(-worker.pid, signal);
    }
  }

  std::chrono::milliseconds grace_period_;
  std::vector<Worker> workers_;
  std::optional<Clock::time_point> stop_deadline_;
  bool killed_ = false;
};

// Waits until every worker has ended, handling failures and the launcher's own signals.
void wait_for_workers(WorkerGroup& group, const sigset_t& wait_signals, SpawnResult& result) {
  for (;;) {
    const std::vector<int> failed = group.reap_ended();
    if (!failed.empty() && !result.first_failed_rank && !group.stopping()) {
      result.first_failed_rank = failed.front();  // reap_ended goes by rank: lowest first
      group.stop(SIGTERM);
    }
    if (!group.any_running()) return;
    group.escalate_if_due();

    const auto wait = group.next_wait();
    timespec timeout{};
    timeout.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
    const int signal = sigtimedwait(&wait_signals, nullptr, &timeout);
    if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
      if (!result.interrupted_by) result.interrupted_by = signal;
      if (group.stopping()) {
        group.kill_now();  // asked again: no more grace
      } else {
        group.stop(signal);  // forward what the launcher got, like torchrun
      }
    }
  }
}

}  // namespace

// Long: start, wait and stop share the children and the signal
// state they were started with, in the order torchrun's agent follows.
SpawnResult spawn_workers(const std::vector<std::string>& argv, int nproc, int master_port,
                          const SpawnOptions& options) {
  if (argv.empty()) throw UserError("cannot start workers: no program given");
  if (nproc < 1 || nproc > kMaxLocalWorkers) {
    throw UserError(fmt::format("--nproc must be between 1 and {}, got {}", kMaxLocalWorkers,
                                nproc));
  }
  if (master_port < 0 || master_port > 65535) {
    throw UserError(fmt::format("master port must be between 1 and 65535 (0: pick a free one), "
                                "got {}",
                                master_port));
  }
  const std::string program = resolve_program(argv[0]);
  SpawnResult result;
  result.master_port = master_port != 0 ? master_port : pick_free_port();

  // Everything the children need, prepared before the first fork.
  const CStringArray child_argv(argv);
  std::vector<CStringArray> child_environments;
  child_environments.reserve(static_cast<size_t>(nproc));  // the arrays point into themselves
  for (int rank = 0; rank < nproc; ++rank) {
    std::map<std::string, std::string> variables = options.extra_environment;
    variables["RANK"] = std::to_string(rank);
    variables["LOCAL_RANK"] = std::to_string(rank);
    variables["WORLD_SIZE"] = std::to_string(nproc);
    variables["LOCAL_WORLD_SIZE"] = std::to_string(nproc);
    variables["MASTER_ADDR"] = kLoopbackAddress;
    variables["MASTER_PORT"] = std::to_string(result.master_port);
    child_environments.emplace_back(environment_with(variables));
  }
  const std::string exec_failure =
      fmt::format("burst: worker cannot execute '{}'\n", text_excerpt(program));

  sigset_t wait_signals;
  sigemptyset(&wait_signals);
  for (const int signal : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&wait_signals, signal);
  const ScopedChildSignalDefault child_signal_default;
  const ScopedSignalBlock blocked(wait_signals);
  WorkerGroup group(options.grace_period);
  const pid_t launcher = getpid();
  for (int rank = 0; rank < nproc; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      const int error = errno;
      group.kill_and_reap_all();
      throw std::system_error(error, std::generic_category(),
                              fmt::format("starting worker {} of {}", rank, nproc));
    }
    if (pid == 0) {
      become_worker(launcher, blocked.previous(), program, child_argv, child_environments[rank],
                    exec_failure);
    }
    // Also from this side, so the group exists before the launcher may signal it
    // (EACCES once the child has exec'd is fine: it did it itself by then).
    setpgid(pid, pid);
    group.add(rank, pid);
  }
  wait_for_workers(group, wait_signals, result);
  result.workers = group.exits();
  return result;
}

}  // namespace burst::launch
