// The shuffling sampler: permutations, determinism, drop_last and resuming.
#include <algorithm>
#include <map>
#include <numeric>

#include <gtest/gtest.h>

#include "burst/data/sampler.h"
#include "burst/util/error.h"

namespace burst::data {
namespace {

std::string sampler_error(int64_t size, int64_t batch) {
  try {
    EpochSampler sampler(size, batch, 0);
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no error)";
}

std::vector<int64_t> sorted(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<int64_t> iota_vector(int64_t size) {
  std::vector<int64_t> values(static_cast<size_t>(size));
  std::iota(values.begin(), values.end(), int64_t{0});
  return values;
}

TEST(EpochSampler, EachEpochIsAPermutation) {
  const EpochSampler sampler(103, 10, 5);
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    EXPECT_EQ(sorted(sampler.epoch_order(epoch).permutation()), iota_vector(103));
  }
}

TEST(EpochSampler, DropsTheLastPartialBatch) {
  // 103 samples in batches of 10: 10 full steps; 3 samples sit out each epoch.
  const EpochSampler sampler(103, 10, 5);
  EXPECT_EQ(sampler.steps_per_epoch(), 10);
  const EpochOrder order = sampler.epoch_order(0);
  EXPECT_EQ(order.epoch(), 0);
  EXPECT_EQ(order.steps(), 10);
  std::vector<int64_t> seen;
  for (int64_t step = 0; step < order.steps(); ++step) {
    const std::vector<int64_t> batch = order.batch(step);
    ASSERT_EQ(batch.size(), 10u);
    EXPECT_EQ(batch, sampler.batch(0, step));
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  // The batches are the permutation's first 100 entries, so no sample appears twice.
  EXPECT_EQ(seen, std::vector<int64_t>(order.permutation().begin(),
                                       order.permutation().begin() + 100));
  const std::vector<int64_t> unique_seen = sorted(seen);
  EXPECT_EQ(std::adjacent_find(unique_seen.begin(), unique_seen.end()), unique_seen.end());
}

TEST(EpochSampler, SameSeedSameOrderOtherSeedOrEpochDiffers) {
  const EpochSampler sampler(1000, 32, 123);
  const EpochSampler same(1000, 32, 123);
  const EpochSampler other_seed(1000, 32, 124);
  EXPECT_EQ(sampler.epoch_order(3).permutation(), same.epoch_order(3).permutation());
  EXPECT_NE(sampler.epoch_order(3).permutation(), other_seed.epoch_order(3).permutation());
  EXPECT_NE(sampler.epoch_order(0).permutation(), sampler.epoch_order(1).permutation());
  // The batch size does not change the order, only how it is cut.
  EXPECT_EQ(sampler.epoch_order(2).permutation(),
            EpochSampler(1000, 7, 123).epoch_order(2).permutation());
  // A shuffle, not the identity.
  EXPECT_NE(sampler.epoch_order(0).permutation(), iota_vector(1000));
}

TEST(EpochSampler, ShufflesUniformly) {
  // Fisher-Yates with unbiased draws makes all 3! = 6 orders of 3 samples equally likely:
  // over 6000 epochs each appears 1000 times, standard deviation sqrt(6000 * 5/36) ~ 29.
  const EpochSampler sampler(3, 1, 77);
  std::map<std::vector<int64_t>, int> counts;
  for (int64_t epoch = 0; epoch < 6000; ++epoch) ++counts[sampler.epoch_order(epoch).permutation()];
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [order, count] : counts) EXPECT_NEAR(count, 1000, 150);
}

TEST(EpochSampler, PositionsMapGlobalStepsToEpochsAndBack) {
  const EpochSampler sampler(103, 10, 5);  // 10 steps per epoch
  EXPECT_EQ(sampler.position(0), (SamplerPosition{0, 0}));
  EXPECT_EQ(sampler.position(9), (SamplerPosition{0, 9}));
  EXPECT_EQ(sampler.position(10), (SamplerPosition{1, 0}));
  EXPECT_EQ(sampler.position(37), (SamplerPosition{3, 7}));
  for (int64_t global_step = 0; global_step < 50; ++global_step) {
    EXPECT_EQ(sampler.global_step(sampler.position(global_step)), global_step);
  }
}

TEST(EpochSampler, ResumingFromAPositionGivesTheSameSequence) {
  // Training straight through 3 epochs, and a second sampler (a restarted process) that
  // resumes at global step 17 (epoch 1, step 7), see the same batches from there on.
  const EpochSampler sampler(103, 10, 99);
  std::vector<std::vector<int64_t>> straight;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const EpochOrder order = sampler.epoch_order(epoch);
    for (int64_t step = 0; step < order.steps(); ++step) straight.push_back(order.batch(step));
  }
  const EpochSampler restarted(103, 10, 99);
  for (int64_t global_step = 17; global_step < 30; ++global_step) {
    const SamplerPosition position = restarted.position(global_step);
    EXPECT_EQ(restarted.batch(position.epoch, position.step), straight[global_step]);
  }
}

TEST(EpochSampler, RefusesImpossibleSizes) {
  EXPECT_NE(sampler_error(0, 1).find("the dataset is empty"), std::string::npos);
  EXPECT_NE(sampler_error(10, 0).find("global batch must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(sampler_error(10, 11).find("global batch 11 is larger than the dataset (10 samples)"),
            std::string::npos);
  EXPECT_EQ(sampler_error(10, 10), "(no error)");
  const EpochSampler sampler(10, 3, 0);
  EXPECT_THROW(sampler.epoch_order(-1), UserError);
  EXPECT_THROW(sampler.position(-1), UserError);
  EXPECT_THROW(sampler.global_step({int64_t{1} << 62, 0}), UserError);  // 2^62 * 3 overflows
}

}  // namespace
}  // namespace burst::data
