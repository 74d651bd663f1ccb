#include "core/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tesscpp::core {
namespace {

TEST(Float16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(DoubleToHalf(f))));
    } else {
      EXPECT_EQ(DoubleToHalf(f), h) << std::hex << h;
    }
  }
}

TEST(Float16, DoubleRoundsOnceNotTwice) {
  // 1 + 2^-11 + 2^-30 is just above the tie between 1 and 1 + 2^-10: a direct
  // rounding goes up; rounding to float32 first lands on the tie and goes to even.
  EXPECT_EQ(DoubleToHalf(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)), 0x3c01);
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(DoubleToHalf(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(DoubleToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(DoubleToHalf(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(DoubleToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(DoubleToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
}

}  // namespace
}  // namespace tesscpp::core
