#pragma once
// Repeated timing of one piece of work until its median is stable, and the statistics of
// the samples. libtorch-free: the work is a callback that times itself.
#include <functional>
#include <vector>

#include "burst/util/units.h"

namespace burst::profiler {

// When to stop repeating (see ProfileOptions for the meaning of each field).
struct RepetitionPolicy {
  int warmup = 2;
  int min_repetitions = 5;
  int max_repetitions = 100;
  double stable_within = 0.02;
  Seconds time_budget{1.0};
};

// The result of one measurement. All zero for work that was not measured.
struct Summary {
  Seconds median;
  double spread = 0;  // (p90 - p10) / median; 0 when the median is 0
  int repetitions = 0;
};

// Median of `samples` (non-empty); the mean of the middle two for an even count.
double median_of(std::vector<double> samples);

// The q-quantile (q in [0, 1]) of `samples` (non-empty), interpolating linearly between
// the closest ranks (NumPy's default).
double quantile_of(std::vector<double> samples, double q);

// Whether the median of the last half of `samples` (the later ceil(n/2) samples) is within
// `within` (relative) of the median of all of them. An all-zero series is stable.
bool is_stable(const std::vector<double>& samples, double within);

// Median, spread and count of `samples` (seconds; non-empty).
Summary summarize(const std::vector<double>& samples);

// Runs `sample` (one run of the work; returns the seconds it timed) policy.warmup times
// untimed, then repeatedly until the policy says stop, and summarises the timed samples.
// The budget counts wall time of the timed runs including what `sample` does outside its
// own timing (freeing results), so a measurement never runs far past it.
Summary measure(const std::function<double()>& sample, const RepetitionPolicy& policy);

}  // namespace burst::profiler
