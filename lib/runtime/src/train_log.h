#pragma once
// The training log's lines: step times summed between log lines, the per-rank part and the
// background job's summary. Internal to lib/runtime.
#include <string>
#include <vector>

#include "burst/runtime/plan_executor.h"

namespace burst::runtime::detail {

// Step times summed over the steps since the last log line.
class StepTimesSum {
 public:
  void add(const StepTimes& times);
  // Per step; background samples and CPU time too (per-step figures, as one step's were).
  StepTimes mean_and_reset();

 private:
  StepTimes sum_;
  int steps_ = 0;
};

// "data 0.12 ms  ": the longest any rank's step waited for its samples.
std::string data_wait(const std::vector<StepTimes>& times);

// The log line's per-rank part: "compute/comm/idle ms: r0 5.10/6.20/1.60 r1 ..." for up to 8
// ranks; beyond, the minimum / median / maximum over the ranks of each.
std::string format_rank_times(const std::vector<StepTimes>& times);

// "bg 812.3 samples/s  busy 97%  ": every rank's background samples in the step over the
// step's time, and the mean over ranks of (foreground compute + background CPU) / step.
std::string background_summary(const std::vector<StepTimes>& times);

}  // namespace burst::runtime::detail
