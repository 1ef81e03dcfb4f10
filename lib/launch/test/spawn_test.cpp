// The local launcher, with /bin/sh one-liners as workers: the rank variables reach them, a
// failing worker stops the others quickly, every process is reaped and none is left over.
#include "burst/launch/spawn.h"

#include <dirent.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "burst/util/error.h"

namespace burst::launch {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::vector<std::string> shell(const std::string& script) { return {"/bin/sh", "-c", script}; }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether a process (not a zombie) of process group `group` is alive, from /proc.
bool group_has_live_process(pid_t group) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(proc)) {
    std::ifstream stat_file(std::string("/proc/") + entry->d_name + "/stat");
    std::string text;
    if (!std::getline(stat_file, text)) continue;
    // "pid (command) state ppid pgrp ...": the command may hold spaces and parentheses.
    std::istringstream fields(text.substr(text.rfind(')') + 1));
    char state = 0;
    long parent = 0, process_group = 0;
    if (fields >> state >> parent >> process_group && process_group == group && state != 'Z') {
      found = true;
    }
  }
  closedir(proc);
  return found;
}

bool process_alive(pid_t pid) {
  std::ifstream stat_file(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(stat_file, text)) return false;
  return text.substr(text.rfind(')') + 2, 1) != "Z";
}

// Polls `condition` for up to 2 s: processes take a moment to die after SIGKILL.
template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = Clock::now() + 2s;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

void expect_everything_reaped(const SpawnResult& result) {
  int status = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);  // no child left, zombie or alive
  EXPECT_EQ(errno, ECHILD);
  for (const WorkerExit& worker : result.workers) {
    EXPECT_TRUE(eventually([&] { return !group_has_live_process(worker.pid); }))
        << "rank " << worker.rank << " left processes behind";
  }
}

std::string temp_dir() {
  std::string pattern = ::testing::TempDir() + "burst_spawn_test_XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(SpawnWorkers, RankVariablesReachEveryWorker) {
  const std::string directory = temp_dir();
  SpawnOptions options;
  options.extra_environment = {{"OUT_DIR", directory}, {"RANK", "overridden"}, {"EXTRA", "hi"}};
  // "sh" without a slash: found in PATH.
  const SpawnResult result = spawn_workers(
      {"sh", "-c",
       "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT "
       "$EXTRA\" > \"$OUT_DIR/rank$RANK\""},
      3, 0, options);
  ASSERT_TRUE(result.succeeded()) << result.describe();
  EXPECT_EQ(result.describe(), "all 3 workers succeeded");
  EXPECT_GE(result.master_port, 1);
  EXPECT_LE(result.master_port, 65535);
  ASSERT_EQ(result.workers.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(result.workers[rank].rank, rank);
    EXPECT_TRUE(result.workers[rank].succeeded());
    EXPECT_EQ(read_line(fmt::format("{}/rank{}", directory, rank)),
              fmt::format("{} 3 {} 3 127.0.0.1 {} hi", rank, rank, result.master_port));
  }
  expect_everything_reaped(result);
  std::filesystem::remove_all(directory);
}

TEST(SpawnWorkers, UsesTheGivenPort) {
  const SpawnResult result = spawn_workers(shell("test \"$MASTER_PORT\" = 23456"), 2, 23456);
  EXPECT_TRUE(result.succeeded()) << result.describe();
  EXPECT_EQ(result.master_port, 23456);
}

TEST(SpawnWorkers, NamesTheFailingRankAndExitCode) {
  const SpawnResult result = spawn_workers(shell("if [ $RANK = 2 ]; then exit 3; fi"), 4, 0);
  EXPECT_FALSE(result.succeeded());
  ASSERT_EQ(result.first_failed_rank, 2);
  EXPECT_EQ(result.workers[2].exit_code, 3);
  EXPECT_FALSE(result.workers[2].signaled);
  EXPECT_EQ(result.describe().rfind("rank 2 exited with code 3", 0), 0u) << result.describe();
  expect_everything_reaped(result);
}

TEST(SpawnWorkers, AFailingWorkerStopsTheOthersQuickly) {
  // Ranks 0 and 2 would sleep 100 s; rank 1 exits with 3 after 0.2 s. SIGTERM ends the
  // sleepers (shell and sleep alike, as a process group) well within the grace period.
  SpawnOptions options;
  options.grace_period = 3s;
  const auto start = Clock::now();
  const SpawnResult result = spawn_workers(
      shell("if [ $RANK = 1 ]; then sleep 0.2; exit 3; fi; sleep 100; true"), 3, 0, options);
  EXPECT_LT(seconds_since(start), 2.5);
  ASSERT_EQ(result.first_failed_rank, 1);
  EXPECT_EQ(result.workers[1].exit_code, 3);
  for (const int rank : {0, 2}) {
    EXPECT_TRUE(result.workers[rank].stopped_by_launcher);
    EXPECT_TRUE(result.workers[rank].signaled);
    EXPECT_EQ(result.workers[rank].signal, SIGTERM);
  }
  EXPECT_EQ(result.describe(), "rank 1 exited with code 3; stopped 2 other workers");
  expect_everything_reaped(result);
}

TEST(SpawnWorkers, KillsWorkersThatIgnoreSigtermAfterTheGracePeriod) {
  // Rank 0 ignores SIGTERM (and its sleep inherits that), so only SIGKILL ends it, 0.3 s
  // after rank 1's failure.
  SpawnOptions options;
  options.grace_period = 300ms;
  const auto start = Clock::now();
  const SpawnResult result = spawn_workers(
      shell("if [ $RANK = 1 ]; then sleep 0.2; exit 3; fi; trap '' TERM; sleep 100; true"), 2, 0,
      options);
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.45);  // 0.2 s until the failure + 0.3 s grace, minus scheduling slack
  EXPECT_LT(elapsed, 3.0);
  ASSERT_EQ(result.first_failed_rank, 1);
  EXPECT_TRUE(result.workers[0].signaled);
  EXPECT_EQ(result.workers[0].signal, SIGKILL);
  expect_everything_reaped(result);
}

TEST(SpawnWorkers, NamesTheSignalThatKilledAWorker) {
  const SpawnResult result = spawn_workers(shell("kill -SEGV $$"), 1, 0);
  ASSERT_EQ(result.first_failed_rank, 0);
  EXPECT_TRUE(result.workers[0].signaled);
  EXPECT_EQ(result.workers[0].signal, SIGSEGV);
  EXPECT_EQ(result.describe().rfind("rank 0 was killed by SIGSEGV", 0), 0u) << result.describe();
}

TEST(SpawnWorkers, WhatAWorkerLeftRunningEndsWithIt) {
  // The worker starts a background sleep and exits 0; the sleep must not outlive it.
  const std::string directory = temp_dir();
  SpawnOptions options;
  options.extra_environment = {{"OUT_DIR", directory}};
  const SpawnResult result =
      spawn_workers(shell("sleep 100 & echo $! > \"$OUT_DIR/pid\""), 1, 0, options);
  EXPECT_TRUE(result.succeeded()) << result.describe();
  const pid_t background = std::stoi(read_line(directory + "/pid"));
  EXPECT_TRUE(eventually([&] { return !process_alive(background); }));
  expect_everything_reaped(result);
  std::filesystem::remove_all(directory);
}

TEST(SpawnWorkers, ForwardsAnInterruptToTheWorkers) {
  // Rank 0 sends SIGINT to the launcher (its parent), as Ctrl-C would; the launcher passes
  // it on, and reports the interruption rather than a failed rank.
  SpawnOptions options;
  options.grace_period = 1s;
  const SpawnResult result = spawn_workers(
      shell("if [ $RANK = 0 ]; then kill -INT $PPID; fi; sleep 100; true"), 2, 0, options);
  EXPECT_EQ(result.interrupted_by, SIGINT);
  EXPECT_EQ(result.first_failed_rank, std::nullopt);
  EXPECT_FALSE(result.succeeded());
  EXPECT_EQ(result.describe(), "interrupted by SIGINT; stopped 2 workers");
  expect_everything_reaped(result);
}

TEST(SpawnWorkers, RefusesBadArgumentsBeforeStartingAnything) {
  EXPECT_THROW(spawn_workers({}, 1, 0), UserError);
  EXPECT_THROW(spawn_workers(shell("true"), 0, 0), UserError);
  EXPECT_THROW(spawn_workers(shell("true"), kMaxLocalWorkers + 1, 0), UserError);
  EXPECT_THROW(spawn_workers(shell("true"), 1, 65536), UserError);
  try {
    spawn_workers({"/nonexistent/burst"}, 1, 0);
    FAIL() << "no error";
  } catch (const UserError& error) {
    EXPECT_STREQ(error.what(),
                 "cannot start workers: '/nonexistent/burst' is not an executable file");
  }
  try {
    spawn_workers({"burst-no-such-program"}, 1, 0);
    FAIL() << "no error";
  } catch (const UserError& error) {
    EXPECT_STREQ(error.what(),
                 "cannot start workers: 'burst-no-such-program' is not found in PATH");
  }
}

TEST(LocalSystem, PicksAPortAndFindsThisProgram) {
  const int port = pick_free_port();
  EXPECT_GE(port, 1);
  EXPECT_LE(port, 65535);
  EXPECT_NE(current_executable().find("burst_launch_test"), std::string::npos);
}

TEST(SignalName, NamesCommonSignals) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGRTMIN + 1), fmt::format("signal {}", SIGRTMIN + 1));
}

}  // namespace
}  // namespace burst::launch
