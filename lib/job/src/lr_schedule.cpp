#include "burst/job/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "burst/util/error.h"

namespace burst::job {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Of the steps after warmup, how far along step `step` is: 0 at the first, (n - 1) / n at the
// last of n.
double progress(const LearningRateSchedule& schedule, int64_t step) {
  const int64_t span = std::max<int64_t>(1, schedule.total_steps - schedule.warmup_steps);
  const int64_t done = std::clamp<int64_t>(step - schedule.warmup_steps, 0, span);
  return static_cast<double>(done) / static_cast<double>(span);
}

}  // namespace

double learning_rate_at(const LearningRateSchedule& schedule, double base, int64_t step) {
  if (step < schedule.warmup_steps) {
    return base * static_cast<double>(step + 1) / static_cast<double>(schedule.warmup_steps);
  }
  const double lowest = schedule.min_learning_rate;
  switch (schedule.kind) {
    case LearningRateKind::constant:
      return base;
    case LearningRateKind::cosine:
      return lowest + (base - lowest) * 0.5 * (1.0 + std::cos(kPi * progress(schedule, step)));
    case LearningRateKind::linear:
      return lowest + (base - lowest) * (1.0 - progress(schedule, step));
    case LearningRateKind::step: {
      const int64_t decays = (step - schedule.warmup_steps) / std::max<int64_t>(1, schedule.step_size);
      return base * std::pow(schedule.gamma, static_cast<double>(decays));
    }
  }
  return base;
}

void check_learning_rate_schedule(const LearningRateSchedule& schedule, double base) {
  if (!std::isfinite(base) || !(base > 0)) throw UserError(fmt::format("--lr must be a finite number > 0, got {}", base));
  if (schedule.warmup_steps < 0) {
    throw UserError(fmt::format("--warmup-steps must be at least 0, got {}", schedule.warmup_steps));
  }
  if (schedule.total_steps > 0 && schedule.warmup_steps > schedule.total_steps) {
    throw UserError(fmt::format("--warmup-steps {} is beyond the run's {} steps", schedule.warmup_steps,
                                schedule.total_steps));
  }
  const double lowest = schedule.min_learning_rate;
  if (!std::isfinite(lowest) || lowest < 0 || lowest > base) {
    throw UserError(fmt::format("--min-lr must be between 0 and --lr ({}), got {}", base, lowest));
  }
  if (schedule.kind != LearningRateKind::step) return;
  if (schedule.step_size <= 0) {
    throw UserError(fmt::format("--lr-schedule step needs --lr-step-size N (N >= 1), got {}", schedule.step_size));
  }
  if (!std::isfinite(schedule.gamma) || !(schedule.gamma > 0) || schedule.gamma > 1) {
    throw UserError(fmt::format("--lr-gamma must be in (0, 1], got {}", schedule.gamma));
  }
}

const char* learning_rate_kind_name(LearningRateKind kind) { return kLearningRateKindNames.name(kind); }

LearningRateKind parse_learning_rate_kind(const std::string& word) { return kLearningRateKindNames.parse(word); }

}  // namespace burst::job
