#include "train_log.h"

#include <algorithm>

#include <fmt/format.h>

namespace burst::runtime::detail {

void StepTimesSum::add(const StepTimes& times) {
  sum_.compute_ms += times.compute_ms;
  sum_.communication_ms += times.communication_ms;
  sum_.idle_ms += times.idle_ms;
  sum_.total_ms += times.total_ms;
  sum_.background_samples += times.background_samples;
  sum_.background_cpu_ms += times.background_cpu_ms;
  sum_.data_ms += times.data_ms;
  ++steps_;
}

StepTimes StepTimesSum::mean_and_reset() {
  const double n = std::max(1, steps_);
  StepTimes mean{sum_.compute_ms / n,         sum_.communication_ms / n, sum_.idle_ms / n,
                 sum_.total_ms / n,           sum_.background_samples / n, sum_.background_cpu_ms / n,
                 sum_.data_ms / n};
  *this = StepTimesSum();
  return mean;
}

std::string data_wait(const std::vector<StepTimes>& times) {
  double longest = 0;
  for (const StepTimes& t : times) longest = std::max(longest, t.data_ms);
  return fmt::format("data {:.2f} ms  ", longest);
}

std::string format_rank_times(const std::vector<StepTimes>& times) {
  if (times.size() <= 8) {
    std::string out = "compute/comm/idle ms:";
    for (size_t r = 0; r < times.size(); ++r) {
      out += fmt::format(" r{} {:.2f}/{:.2f}/{:.2f}", r, times[r].compute_ms, times[r].communication_ms,
                         times[r].idle_ms);
    }
    return out;
  }
  auto spread = [&](double StepTimes::*field) {
    std::vector<double> values;
    for (const StepTimes& t : times) values.push_back(t.*field);
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    const double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    return fmt::format("{:.2f}/{:.2f}/{:.2f}", values.front(), median, values.back());
  };
  return fmt::format("min/median/max ms over {} ranks: compute {}  comm {}  idle {}", times.size(),
                     spread(&StepTimes::compute_ms), spread(&StepTimes::communication_ms),
                     spread(&StepTimes::idle_ms));
}


std::string background_summary(const std::vector<StepTimes>& times) {
  double samples = 0, busy = 0;
  for (const StepTimes& t : times) {
    samples += t.background_samples;
    busy += t.total_ms > 0 ? (t.compute_ms + t.background_cpu_ms) / t.total_ms : 0;
  }
  const double step_ms = times.empty() ? 0 : times[0].total_ms;
  return fmt::format("bg {:.1f} samples/s  busy {:.0f}%  ", step_ms > 0 ? samples * 1000.0 / step_ms : 0.0,
                     100.0 * busy / static_cast<double>(std::max<size_t>(times.size(), 1)));
}

}  // namespace burst::runtime::detail
