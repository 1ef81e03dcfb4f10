// Learning-rate schedules against values worked out by hand (burst/job/lr_schedule.h).
#include "burst/job/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "burst/util/error.h"

namespace burst::job {
namespace {

LearningRateSchedule schedule(LearningRateKind kind, int64_t warmup, int64_t total) {
  LearningRateSchedule s;
  s.kind = kind;
  s.warmup_steps = warmup;
  s.total_steps = total;
  return s;
}

TEST(LearningRateSchedule, WarmupRisesLinearlyAndTheFirstStepMoves) {
  // 4 warmup steps to 0.8: 0.2, 0.4, 0.6, 0.8, then constant.
  const LearningRateSchedule s = schedule(LearningRateKind::constant, 4, 10);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 0.8, 0), 0.2);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 0.8, 1), 0.4);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 0.8, 3), 0.8);
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 0.8, 9), 0.8);
}

TEST(LearningRateSchedule, CosineFromTheBaseTowardsTheMinimum) {
  // 2 warmup steps of 10: 8 cosine steps, progress p = (s - 2) / 8. Base 1, minimum 0.2:
  // s = 2: p = 0, 1.0; s = 6: p = 1/2, 0.2 + 0.8 x (1 + cos(pi/2)) / 2 = 0.6;
  // s = 9: p = 7/8, 0.2 + 0.8 x (1 + cos(7 pi / 8)) / 2 = 0.2 + 0.4 x (1 - 0.92388) = 0.230448.
  LearningRateSchedule s = schedule(LearningRateKind::cosine, 2, 10);
  s.min_learning_rate = 0.2;
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 1.0, 1), 1.0);  // the last warmup step
  EXPECT_DOUBLE_EQ(learning_rate_at(s, 1.0, 2), 1.0);
  EXPECT_NEAR(learning_rate_at(s, 1.0, 6), 0.6, 1e-15);
  EXPECT_NEAR(learning_rate_at(s, 1.0, 9), 0.2 + 0.4 * (1 - std::cos(M_PI / 8)), 1e-15);
}

TEST(LearningRateSchedule, LinearAndStepDecay) {
  // Linear over 5 steps, no warmup, base 0.5 to 0: 0.5, 0.4, 0.3, 0.2, 0.1.
  const LearningRateSchedule linear = schedule(LearningRateKind::linear, 0, 5);
  EXPECT_DOUBLE_EQ(learning_rate_at(linear, 0.5, 0), 0.5);
  EXPECT_NEAR(learning_rate_at(linear, 0.5, 4), 0.1, 1e-15);
  // Step: x 0.5 every 3 steps after 1 warmup step: steps 1-3 at 1, 4-6 at 0.5, 7 at 0.25.
  LearningRateSchedule step = schedule(LearningRateKind::step, 1, 8);
  step.step_size = 3;
  step.gamma = 0.5;
  EXPECT_DOUBLE_EQ(learning_rate_at(step, 1.0, 3), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(step, 1.0, 4), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate_at(step, 1.0, 7), 0.25);
}

TEST(LearningRateSchedule, RefusesWhatCannotRun) {
  const LearningRateSchedule plain = schedule(LearningRateKind::constant, 0, 10);
  EXPECT_THROW(check_learning_rate_schedule(plain, std::numeric_limits<double>::infinity()), UserError);
  EXPECT_THROW(check_learning_rate_schedule(plain, std::nan("")), UserError);
  EXPECT_THROW(check_learning_rate_schedule(plain, 0.0), UserError);
  EXPECT_NO_THROW(check_learning_rate_schedule(plain, 0.1));
  EXPECT_THROW(check_learning_rate_schedule(schedule(LearningRateKind::constant, 11, 10), 0.1), UserError);
  EXPECT_NO_THROW(check_learning_rate_schedule(schedule(LearningRateKind::constant, 10, 10), 0.1));
  LearningRateSchedule low = plain;
  low.min_learning_rate = 0.2;  // above the base
  EXPECT_THROW(check_learning_rate_schedule(low, 0.1), UserError);
  LearningRateSchedule step = schedule(LearningRateKind::step, 0, 10);  // no step size
  EXPECT_THROW(check_learning_rate_schedule(step, 0.1), UserError);
  step.step_size = 2;
  step.gamma = 1.5;
  EXPECT_THROW(check_learning_rate_schedule(step, 0.1), UserError);
  EXPECT_THROW(parse_learning_rate_kind("exponential"), UserError);
  EXPECT_EQ(parse_learning_rate_kind("cosine"), LearningRateKind::cosine);
}

}  // namespace
}  // namespace burst::job
