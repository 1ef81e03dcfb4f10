#pragma once
// A local launcher for `--nproc N`, like torchrun's: N copies of a program, each told its
// rank through RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and
// MASTER_PORT, watched until all finish or one fails.
//
// Process hygiene:
//  - Each worker leads its own process group, so stopping a worker also stops whatever it
//    started (a shell's children, a data loader's helpers).
//  - Each worker gets SIGKILL if the launcher dies (Linux PR_SET_PDEATHSIG), so a killed
//    launcher orphans none.
//  - SIGINT, SIGTERM and SIGHUP sent to the launcher while it waits (Ctrl-C in a terminal
//    reaches only the launcher, since the workers have their own groups) are forwarded to
//    every worker; a second one escalates to SIGKILL at once.
//  - On the first worker that exits non-zero or dies by a signal, the others get SIGTERM,
//    then SIGKILL after the grace period. spawn_workers returns only after every worker
//    has been reaped.
// The launcher blocks those signals (and SIGCHLD) in the calling thread while it waits and
// takes them with sigtimedwait, so it installs no handlers; call it from the main thread of
// a process whose other threads block them too (or have none), before starting libtorch.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace burst::launch {

inline constexpr int kMaxLocalWorkers = 1024;

struct SpawnOptions {
  // Time a worker has between SIGTERM and SIGKILL when the launcher stops it.
  std::chrono::milliseconds grace_period{5000};
  // Extra variables for every worker (e.g. OMP_NUM_THREADS); the rank variables win.
  std::map<std::string, std::string> extra_environment;
};

// How one worker ended.
struct WorkerExit {
  int rank = 0;
  pid_t pid = 0;
  bool signaled = false;     // killed by a signal (then `signal`), else exited (`exit_code`)
  int exit_code = 0;
  int signal = 0;
  bool core_dumped = false;
  // The launcher had already asked it to stop (after another worker failed or the launcher
  // was interrupted), so its end is a consequence, not a cause.
  bool stopped_by_launcher = false;

  bool succeeded() const { return !signaled && exit_code == 0; }
  // "rank 2 exited with code 3", "rank 1 was killed by SIGSEGV (core dumped)".
  std::string describe() const;
};

struct SpawnResult {
  int master_port = 0;
  std::vector<WorkerExit> workers;  // by rank
  // The first worker seen to fail on its own (ties in one wake-up: the lowest rank).
  std::optional<int> first_failed_rank;
  // The signal the launcher received and forwarded, if it was interrupted.
  std::optional<int> interrupted_by;

  bool succeeded() const { return !first_failed_rank && !interrupted_by; }
  // One line for the user: "rank 2 exited with code 3; stopped the 3 other workers",
  // "interrupted by SIGINT", or "all 4 workers succeeded".
  std::string describe() const;
};

// Starts `nproc` workers running argv (argv[0] is the program: a path, or a name looked up
// in PATH before anything starts; use current_executable() to run this program again) and
// waits for them as described above. master_port 0 picks a free loopback port
// (pick_free_port). Throws UserError before starting anything when argv is empty, the
// program cannot be found or executed, nproc is outside [1, kMaxLocalWorkers] or the port
// outside [0, 65535]; std::system_error when fork fails (workers already started are
// stopped first). A worker whose exec fails exits with code 127 after saying why on stderr.
SpawnResult spawn_workers(const std::vector<std::string>& argv, int nproc, int master_port,
                          const SpawnOptions& options = {});

// A TCP port that was free on 127.0.0.1 a moment ago (bind to port 0, read it back, close).
// Another process could take it before rank 0 binds it; c10d's store then fails loudly.
int pick_free_port();

// This program's path (/proc/self/exe), to start copies of it.
std::string current_executable();

// "SIGSEGV", "SIGKILL", ... or "signal 42" for one without a well-known name.
std::string signal_name(int signal);

}  // namespace burst::launch
