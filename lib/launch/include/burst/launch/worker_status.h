#pragma once
// What each worker of a local launch is doing, and how it failed, for the launcher's one-line
// report (`burst train: rank 1 was killed by SIGKILL in step 5 of 100; stopped the other 3
// workers`). The launcher names a directory in BURST_STATUS_DIR; worker r keeps its status in
// DIR/rank-r, a small file it maps into memory, so noting an activity costs a copy and no
// system call, and the text survives the worker being killed.
#include <optional>
#include <string>

namespace burst::launch {

inline constexpr const char* kStatusDirectoryVariable = "BURST_STATUS_DIR";

// Worker side. Not copyable (owns the mapping).
class WorkerStatus {
 public:
  // The status file of `rank` when BURST_STATUS_DIR is set (nullopt otherwise, or when the
  // file cannot be created: reporting is best effort, never a reason to fail).
  static std::optional<WorkerStatus> from_environment(int rank);

  WorkerStatus(WorkerStatus&& other) noexcept;
  WorkerStatus& operator=(WorkerStatus&&) = delete;
  WorkerStatus(const WorkerStatus&) = delete;
  ~WorkerStatus();

  // "step 5 of 100", "writing checkpoint ...": what the worker does from now on.
  void doing(const std::string& activity);
  // The error it is about to exit with (one line).
  void failed(const std::string& message);

 private:
  explicit WorkerStatus(char* mapping) : mapping_(mapping) {}
  void write(char kind, const std::string& text);
  char* mapping_ = nullptr;
};

// Launcher side: what rank `rank` last recorded in `directory`.
struct RecordedStatus {
  bool failed = false;  // `text` is its error message; else its last activity
  std::string text;
};
std::optional<RecordedStatus> read_worker_status(const std::string& directory, int rank);

}  // namespace burst::launch
