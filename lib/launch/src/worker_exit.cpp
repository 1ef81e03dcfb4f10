// Describing how workers ended.
#include <csignal>

#include <fmt/format.h>

#include "burst/launch/spawn.h"

namespace burst::launch {

std::string signal_name(int signal) {
  switch (signal) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return fmt::format("signal {}", signal);
  }
}

std::string WorkerExit::describe() const {
  if (signaled) {
    return fmt::format("rank {} was killed by {}{}", rank, signal_name(signal),
                       core_dumped ? " (core dumped)" : "");
  }
  return fmt::format("rank {} exited with code {}", rank, exit_code);
}

std::string SpawnResult::describe() const {
  int stopped = 0;
  for (const WorkerExit& worker : workers) stopped += worker.stopped_by_launcher ? 1 : 0;
  const auto stopped_text = [&](const char* which) {
    return stopped == 0 ? std::string()
                        : fmt::format("; stopped {} {}worker{}", stopped, which,
                                      stopped == 1 ? "" : "s");
  };
  if (first_failed_rank) return workers.at(*first_failed_rank).describe() + stopped_text("other ");
  if (interrupted_by) return "interrupted by " + signal_name(*interrupted_by) + stopped_text("");
  return fmt::format("all {} workers succeeded", workers.size());
}

}  // namespace burst::launch
