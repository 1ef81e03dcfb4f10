// Learning-rate schedules and AdamW in the executor: ranks as threads, float64. The rate of a
// step is a function of the step alone (lr_schedule.h), so a schedule on several ranks, under
// ZeRO, or resumed from a checkpoint gives one rank's parameters to 1e-9. The model is a GPT:
// a CNN's convolution bias in front of batch norm has a gradient that is only rounding
// (batch norm takes the mean out), and Adam divides it by its own size, so ranks that add
// the same sums in another order differ there by ~1e-7 with no error in either.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "burst/graph/zoo.h"
#include "burst/plan/plan.h"
#include "in_process_communicator.h"
#include "threaded_training.h"

// Its own namespace: a unity build compiles it with the other runtime tests.
namespace burst::runtime::schedule_test {
namespace {

using testing::InProcessWorld;

constexpr int kSteps = 4;
constexpr int64_t kBatch = 8;

using testing::tiny_gpt2;

// AdamW (decay 0.01) at 0.01, one warmup step, then cosine to 0.001 over the run's 4 steps.
ExecutorOptions adamw_cosine(int zero_stage) {
  ExecutorOptions options;
  options.seed = 5;
  options.optimizer = OptimizerOptions{job::Optimizer::AdamW, 0.01, 0.0, 0.01, {}};
  options.optimizer.schedule.kind = job::LearningRateKind::cosine;
  options.optimizer.schedule.warmup_steps = 1;
  options.optimizer.schedule.total_steps = kSteps;
  options.optimizer.schedule.min_learning_rate = 0.001;
  options.dtype = torch::kFloat64;
  options.program.zero_stage = zero_stage;
  return options;
}

testing::Parameters train(const plan::Plan& plan, const ExecutorOptions& options, int steps = kSteps,
                          const testing::RankHooks& hooks = {}) {
  InProcessWorld world(plan.devices, std::chrono::seconds(60));
  return testing::train_threads(tiny_gpt2(), plan, steps, world, options, testing::random_batches(tiny_gpt2(), kBatch),
                                true, true, hooks)
      .first;
}

plan::Plan data_parallel(int devices) { return plan::plan_data_parallel(tiny_gpt2(), devices, kBatch); }

TEST(LearningRateScheduleRuntime, FirstWarmupStepRunsAtItsShareOfTheRate) {
  // Plain SGD, 2 warmup steps to 0.2: step 0 runs at 0.2 x 1/2, the same update as a
  // constant 0.1 (the same operations on the same numbers: equal to rounding).
  ExecutorOptions warm;
  warm.seed = 3;
  warm.dtype = torch::kFloat64;
  warm.optimizer = OptimizerOptions{job::Optimizer::Sgd, 0.2, 0.0, 0.0, {}};
  warm.optimizer.schedule.warmup_steps = 2;
  warm.optimizer.schedule.total_steps = kSteps;
  ExecutorOptions constant = warm;
  constant.optimizer = OptimizerOptions{job::Optimizer::Sgd, 0.1, 0.0, 0.0, {}};
  EXPECT_LT(testing::largest_relative_error(train(data_parallel(1), constant, 1), train(data_parallel(1), warm, 1)),
            1e-15);
}

TEST(LearningRateScheduleRuntime, CosineAdamWOnTwoRanksAndUnderZeroEqualsOneRank) {
  const testing::Parameters one = train(data_parallel(1), adamw_cosine(0));
  EXPECT_LT(testing::largest_relative_error(one, train(data_parallel(2), adamw_cosine(0))), 1e-9);
  EXPECT_LT(testing::largest_relative_error(one, train(data_parallel(2), adamw_cosine(1))), 1e-9);
  // The schedule is applied: a constant rate gives other parameters.
  ExecutorOptions constant = adamw_cosine(0);
  constant.optimizer.schedule = job::LearningRateSchedule{};
  EXPECT_GT(testing::largest_relative_error(one, train(data_parallel(1), constant)), 1e-6);
}

TEST(LearningRateScheduleRuntime, AdamWCheckpointResumesOnTheSameSchedule) {
  // Two steps on 2 ranks under ZeRO 1, gathered; two more on 4 ranks from the checkpoint
  // (the rate of steps 2 and 3 is the schedule's for them): one rank's four steps.
  std::mutex mutex;
  std::vector<checkpoint::TensorBytes> state;
  testing::RankHooks gather;
  gather.after_steps = [&state, &mutex](PlanExecutor& executor) {
    std::vector<checkpoint::TensorBytes> gathered = executor.gather_training_state();  // collective
    const std::lock_guard<std::mutex> lock(mutex);
    if (!gathered.empty()) state = std::move(gathered);
  };
  train(data_parallel(2), adamw_cosine(1), 2, gather);
  bool has_adam_moments = false;
  for (const checkpoint::TensorBytes& tensor : state) has_adam_moments |= tensor.name.find(":exp_avg_sq") != std::string::npos;
  EXPECT_TRUE(has_adam_moments);
  testing::RankHooks resume;
  resume.first_step = 2;
  resume.before_steps = [&state](PlanExecutor& executor) { executor.load_training_state(state); };
  const testing::Parameters resumed = train(data_parallel(4), adamw_cosine(0), 2, resume);
  EXPECT_LT(testing::largest_relative_error(train(data_parallel(1), adamw_cosine(0)), resumed), 1e-9);
}

}  // namespace
}  // namespace burst::runtime::schedule_test
