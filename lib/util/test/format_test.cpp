#include "burst/util/format.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "burst/util/checked_math.h"

namespace burst {
namespace {

TEST(WithThousands, GroupsDigitsInThrees) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1000), "1,000");
  EXPECT_EQ(with_thousands(138357544), "138,357,544");
  EXPECT_EQ(with_thousands(-1234), "-1,234");
  EXPECT_EQ(with_thousands(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
}

TEST(SiCompact, ThreeSignificantDigits) {
  EXPECT_EQ(si_compact(12), "12");
  EXPECT_EQ(si_compact(2048), "2.05K");
  EXPECT_EQ(si_compact(15.47e9), "15.5G");
  EXPECT_EQ(si_compact(138e6), "138M");
}

TEST(BytesCompact, BinaryUnits) {
  EXPECT_EQ(bytes_compact(12), "12 B");
  EXPECT_EQ(bytes_compact(1536), "1.50 KiB");
  EXPECT_EQ(bytes_compact(802816), "784 KiB");  // 64 x 56 x 56 floats
}

TEST(BytesDecimal, DecimalUnits) {
  EXPECT_EQ(bytes_decimal(12), "12 B");
  EXPECT_EQ(bytes_decimal(1152), "1.15 kB");
  EXPECT_EQ(bytes_decimal(553.4e6), "553 MB");
  EXPECT_EQ(bytes_decimal(40e9), "40.0 GB");
}

TEST(CheckedMath, DetectsOverflow) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(checked_mul(3, 4), 12);
  EXPECT_FALSE(checked_mul(big, 2).has_value());
  EXPECT_EQ(checked_add(big - 1, 1), big);
  EXPECT_FALSE(checked_add(big, 1).has_value());
}

}  // namespace
}  // namespace burst
