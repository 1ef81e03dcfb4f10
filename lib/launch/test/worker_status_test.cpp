// Worker status files: what a worker notes is what the launcher reads, also after the
// worker died without a word (a killed child process).
#include "burst/launch/worker_status.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace burst::launch {
namespace {

class StatusDirectory {
 public:
  StatusDirectory() {
    path_ = std::filesystem::temp_directory_path() / ("burst-status-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
    ::setenv(kStatusDirectoryVariable, path_.c_str(), 1);
  }
  ~StatusDirectory() {
    ::unsetenv(kStatusDirectoryVariable);
    std::filesystem::remove_all(path_);
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(WorkerStatus, NothingWithoutTheVariable) {
  ::unsetenv(kStatusDirectoryVariable);
  EXPECT_FALSE(WorkerStatus::from_environment(0).has_value());
}

TEST(WorkerStatus, TheLauncherReadsTheLatestActivityOrFailure) {
  const StatusDirectory directory;
  EXPECT_FALSE(read_worker_status(directory.path(), 3).has_value());
  std::optional<WorkerStatus> status = WorkerStatus::from_environment(3);
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(read_worker_status(directory.path(), 3).has_value());  // nothing noted yet
  status->doing("step 1 of 10");
  status->doing("step 2 of 10");
  std::optional<RecordedStatus> read = read_worker_status(directory.path(), 3);
  ASSERT_TRUE(read.has_value());
  EXPECT_FALSE(read->failed);
  EXPECT_EQ(read->text, "step 2 of 10");
  status->failed("step 2: all-reduce timed out");
  read = read_worker_status(directory.path(), 3);
  ASSERT_TRUE(read.has_value());
  EXPECT_TRUE(read->failed);
  EXPECT_EQ(read->text, "step 2: all-reduce timed out");
  status->doing(std::string(5000, 'x'));  // longer than the file: cut, not overflowed
  EXPECT_EQ(read_worker_status(directory.path(), 3)->text.size(), 1022u);
}

// A child notes its step and is killed with SIGKILL: the note survives it.
TEST(WorkerStatus, SurvivesAKilledWorker) {
  const StatusDirectory directory;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::optional<WorkerStatus> status = WorkerStatus::from_environment(1);
    if (status) status->doing("step 7 of 9");
    ::raise(SIGKILL);
    ::_exit(0);
  }
  int wait_status = 0;
  ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wait_status));
  const std::optional<RecordedStatus> read = read_worker_status(directory.path(), 1);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->text, "step 7 of 9");
}

}  // namespace
}  // namespace burst::launch
