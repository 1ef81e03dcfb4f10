#include "measurement.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "burst/util/error.h"

namespace burst::profiler {

double median_of(std::vector<double> samples) { return quantile_of(std::move(samples), 0.5); }

double quantile_of(std::vector<double> samples, double q) {
  BURST_ASSERT(!samples.empty(), "quantile of no samples");
  std::sort(samples.begin(), samples.end());
  const double rank = q * static_cast<double>(samples.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, samples.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return samples[below] + fraction * (samples[above] - samples[below]);
}

bool is_stable(const std::vector<double>& samples, double within) {
  const double all = median_of(samples);
  const auto half = static_cast<std::ptrdiff_t>(samples.size() / 2);
  const std::vector<double> last_half(samples.begin() + half, samples.end());
  return std::abs(median_of(last_half) - all) <= within * all;
}

Summary summarize(const std::vector<double>& samples) {
  Summary summary;
  const double median = median_of(samples);
  summary.median = Seconds(median);
  if (median > 0) {
    summary.spread = (quantile_of(samples, 0.9) - quantile_of(samples, 0.1)) / median;
  }
  summary.repetitions = static_cast<int>(samples.size());
  return summary;
}

Summary measure(const std::function<double()>& sample, const RepetitionPolicy& policy) {
  BURST_ASSERT(policy.min_repetitions >= 1 && policy.max_repetitions >= policy.min_repetitions,
               "repetition limits out of order");
  for (int i = 0; i < policy.warmup; ++i) sample();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<double> samples;
  while (true) {
    samples.push_back(sample());
    const int count = static_cast<int>(samples.size());
    if (count >= policy.max_repetitions) break;
    if (count < policy.min_repetitions) continue;
    const Seconds used(std::chrono::duration<double>(Clock::now() - start).count());
    if (used >= policy.time_budget || is_stable(samples, policy.stable_within)) break;
  }
  return summarize(samples);
}

}  // namespace burst::profiler
