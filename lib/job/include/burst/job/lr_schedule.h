#pragma once
// Learning-rate schedules: the rate of step s as a pure function of s, so every rank, every
// plan and a resumed run set the same rate on the same step. No libtorch.
//
// Steps are 0-based. With W warmup steps, step s < W runs at base x (s + 1) / W (the first
// step already moves; Megatron and Hugging Face's schedulers start at 0 and so skip it), and
// the schedule proper runs over the remaining steps, with progress p = (s - W) / (S - W) from
// 0 at the first of them towards 1 after the last (S: the run's steps):
//  - constant: base;
//  - cosine:   min + (base - min) x (1 + cos(pi p)) / 2  (torch's CosineAnnealingLR, Megatron's
//              cosine decay to --min-lr);
//  - linear:   min + (base - min) x (1 - p);
//  - step:     base x gamma^floor((s - W) / step_size)  (torch's StepLR).
#include <cstdint>
#include <string>

#include "burst/util/enum_names.h"

namespace burst::job {

enum class LearningRateKind { constant, cosine, linear, step };
inline constexpr EnumNames<LearningRateKind, 4> kLearningRateKindNames{
    "learning-rate schedule",
    {{{LearningRateKind::constant, "constant"},
      {LearningRateKind::cosine, "cosine"},
      {LearningRateKind::linear, "linear"},
      {LearningRateKind::step, "step"}}}};

struct LearningRateSchedule {
  LearningRateKind kind = LearningRateKind::constant;
  int64_t warmup_steps = 0;  // >= 0, at most total_steps
  int64_t total_steps = 0;   // the run's steps (S); needed by cosine and linear
  double min_learning_rate = 0;  // cosine and linear end here; in [0, base]
  int64_t step_size = 0;     // step: steps between decays (> 0)
  double gamma = 0.1;        // step: the factor of each decay, in (0, 1]
};

// The rate of step `step` for a base rate `base` (docs/runtime.md, "Learning-rate schedules").
double learning_rate_at(const LearningRateSchedule& schedule, double base, int64_t step);

// UserError naming the option and its value for a schedule that cannot run on `base`: a
// non-finite or non-positive base, warmup beyond the run's steps, a minimum outside
// [0, base], step without a positive step size, a gamma outside (0, 1].
void check_learning_rate_schedule(const LearningRateSchedule& schedule, double base);

// "constant", "cosine", "linear", "step"; and back (UserError for another word).
const char* learning_rate_kind_name(LearningRateKind kind);
LearningRateKind parse_learning_rate_kind(const std::string& word);

}  // namespace burst::job
