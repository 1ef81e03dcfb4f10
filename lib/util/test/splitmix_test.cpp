// SplitMix64 against the reference implementation's published outputs, and its helpers.
#include <gtest/gtest.h>

#include "burst/util/splitmix.h"

namespace burst::util {
namespace {

TEST(SplitMix64, MatchesTheReferenceSequence) {
  // Vigna's splitmix64.c with x = 1234567 gives these first three outputs (the values
  // other ports, e.g. Java's SplittableRandom tests, check against).
  SplitMix64 random(1234567);
  EXPECT_EQ(random.next(), 6457827717110365317ULL);
  EXPECT_EQ(random.next(), 3203168211198807973ULL);
  EXPECT_EQ(random.next(), 9817491932198370423ULL);
}

TEST(SplitMix64, BelowStaysInRangeAndReachesEveryValue) {
  SplitMix64 random(7);
  int seen[5] = {};
  for (int draw = 0; draw < 5000; ++draw) {
    const uint64_t value = random.below(5);
    ASSERT_LT(value, 5u);
    ++seen[value];
  }
  // 1000 expected per value; the standard deviation is sqrt(5000 * 0.2 * 0.8) ~ 28.
  for (const int count : seen) EXPECT_NEAR(count, 1000, 150);
  EXPECT_EQ(random.below(1), 0u);
}

TEST(SplitMix64, UnitFloatIsInTheHalfOpenUnitInterval) {
  SplitMix64 random(11);
  double sum = 0;
  for (int draw = 0; draw < 10000; ++draw) {
    const float value = random.unit_float();
    ASSERT_GE(value, 0.0f);
    ASSERT_LT(value, 1.0f);
    sum += value;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);  // mean 1/2, standard error ~0.003
}

TEST(SplitMix64, DerivedStreamsDiffer) {
  EXPECT_NE(derive_seed(1, 0), derive_seed(1, 1));
  EXPECT_NE(derive_seed(1, 0), derive_seed(2, 0));
  EXPECT_EQ(derive_seed(5, 9), derive_seed(5, 9));
}

}  // namespace
}  // namespace burst::util
