#pragma once
// One rank's timeline of training steps, written as Chrome trace events (the JSON Object
// Format: {"traceEvents": [...]}) that Perfetto and chrome://tracing open. Libtorch-free.
//
// Every event is a complete event ("ph": "X") on this rank's process (pid = rank) in one of
// the lanes below (tid), with ts and dur in microseconds from the run's trace origin (a
// steady_clock time every rank takes right after a common barrier; see docs/runtime.md for
// the skew that leaves). Metadata events ("ph": "M") name each process "rank N" and each
// lane. The gathering of several ranks' events into one file is the executor's
// (PlanExecutor::gather_trace); this file only records and formats.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace burst::runtime::trace {

using Clock = std::chrono::steady_clock;

// The lanes (tids) of a rank's process, top to bottom.
enum class Lane : int {
  step = 0,       // one event per step: the whole step
  compute = 1,    // layer forward/backward, optimizer update
  recv = 2,       // blocked in a receive (communication)
  send = 3,       // blocked until a send completed (communication)
  allreduce = 4,  // blocked in an all-reduce (communication)
  idle = 5,       // blocked while other ranks run layers this rank does not (see plan_executor.h)
  background = 6,  // the rank's background job's steps (another process, at SCHED_IDLE)
};
constexpr int kLaneCount = 7;
const char* lane_name(Lane lane);

class Recorder {
 public:
  // Starts recording: the next `steps` steps (begin_step .. end_step) are recorded, with
  // times relative to `origin`.
  void start(Clock::time_point origin, int64_t steps);
  bool started() const { return started_; }

  // Brackets one step; `recording()` tells whether events of this step are kept.
  void begin_step();
  void end_step();
  bool recording() const { return recording_; }
  int64_t steps_recorded() const { return steps_recorded_; }
  int64_t current_step() const { return step_; }  // 1-based, of the steps since start()

  // One complete event; `args` is the body of a JSON object ("\"peer\": 1") or empty.
  // Ignored unless recording().
  void add(Lane lane, Clock::time_point begin, Clock::time_point end, const std::string& name,
           const std::string& args = {});

  // An event outside the steps' brackets (step 0 in its args), kept when it lies within
  // the recorded steps: from the trace origin to the end of the last recorded step.
  void add_in_window(Lane lane, Clock::time_point begin, Clock::time_point end, const std::string& name);

  // The events events_json() writes: the recorded ones and the metadata.
  size_t size() const { return events_.size() + kMetadataEvents; }
  static constexpr size_t kMetadataEvents = 2 + 2 * kLaneCount;  // process name/order, lane names/order

  // This rank's events, metadata first, as JSON objects separated by ",\n" (no brackets),
  // ready to be spliced into a traceEvents array.
  std::string events_json(int rank) const;

 private:
  struct Event {
    Lane lane;
    int64_t step;
    double begin_us;
    double duration_us;
    std::string name;
    std::string args;
  };
  bool started_ = false;
  bool recording_ = false;
  Clock::time_point origin_{};
  int64_t limit_ = 0;
  int64_t step_ = 0;
  int64_t steps_recorded_ = 0;
  Clock::time_point window_end_{};
  std::vector<Event> events_;
};

// `s` as the contents of a JSON string (quotes, backslashes and control characters escaped).
std::string json_escape(const std::string& s);

// The whole trace file: {"traceEvents": [fragments...], "displayTimeUnit": "ms",
// "otherData": {...}} where `fragments` are events_json() of each rank and `other_data` is
// the body of the otherData object (may be empty).
std::string chrome_trace(const std::vector<std::string>& fragments, const std::string& other_data);

// Writes `content` to `path` through `path`.partial and a rename, so readers never see a
// half-written file. Throws UserError when it cannot.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace burst::runtime::trace
