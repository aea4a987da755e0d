//===- MinifloatTest.cpp - the reference's fp8 encoding and decoding ------===//
//
// The checker stores an fp8 cache through toF8E4M3 / toF8E5M2 and the
// reference reads it back through fromF8E4M3 / fromF8E5M2; the kernels
// decode the same bytes in hardware. These pin the formats to their
// definitions (OCP 8-bit floating point: e4m3 without infinities, one NaN
// per sign; e5m2 IEEE-like).
//
//===----------------------------------------------------------------------===//

#include "attnc/Check/Halves.h"

#include <gtest/gtest.h>

#include <cmath>

namespace attnc {
namespace {

TEST(Minifloat, E4M3DecodesItsLandmarks) {
  EXPECT_EQ(fromF8E4M3(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(fromF8E4M3(0x80)));
  EXPECT_EQ(fromF8E4M3(0x38), 1.0f);
  EXPECT_EQ(fromF8E4M3(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  EXPECT_EQ(fromF8E4M3(0x08), std::ldexp(1.0f, -6)); // smallest normal
  EXPECT_EQ(fromF8E4M3(0x7e), 448.0f);               // largest finite
  EXPECT_EQ(fromF8E4M3(0xfe), -448.0f);
  EXPECT_TRUE(std::isnan(fromF8E4M3(0x7f)));
  EXPECT_TRUE(std::isnan(fromF8E4M3(0xff)));
}

TEST(Minifloat, E5M2DecodesItsLandmarks) {
  EXPECT_EQ(fromF8E5M2(0x3c), 1.0f);
  EXPECT_EQ(fromF8E5M2(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(fromF8E5M2(0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(fromF8E5M2(0x7b), 57344.0f);
  EXPECT_EQ(fromF8E5M2(0x7c), INFINITY);
  EXPECT_EQ(fromF8E5M2(0xfc), -INFINITY);
  EXPECT_TRUE(std::isnan(fromF8E5M2(0x7d)));
}

// Every finite code encodes back to itself, and the decoded values rise
// with the code (so that rounding to the nearest one is well defined).
TEST(Minifloat, FiniteCodesRoundTripInOrder) {
  for (int code = 0; code < 0x7f; ++code) {
    EXPECT_EQ(toF8E4M3(fromF8E4M3(uint8_t(code))), code) << code;
    EXPECT_EQ(toF8E4M3(fromF8E4M3(uint8_t(code | 0x80))), code | 0x80) << code;
    if (code > 0)
      EXPECT_LT(fromF8E4M3(uint8_t(code - 1)), fromF8E4M3(uint8_t(code)));
  }
  for (int code = 0; code < 0x7c; ++code) {
    EXPECT_EQ(toF8E5M2(fromF8E5M2(uint8_t(code))), code) << code;
    if (code > 0)
      EXPECT_LT(fromF8E5M2(uint8_t(code - 1)), fromF8E5M2(uint8_t(code)));
  }
}

// Between two neighbours the nearer wins, a tie goes to the even code, and
// magnitudes past the largest finite value saturate to it.
TEST(Minifloat, RoundsToNearestEvenAndSaturates) {
  for (int code = 1; code < 0x7e; ++code) {
    float lo = fromF8E4M3(uint8_t(code)), hi = fromF8E4M3(uint8_t(code + 1));
    float mid = (lo + hi) / 2;
    EXPECT_EQ(toF8E4M3(std::nextafter(mid, lo)), code);
    EXPECT_EQ(toF8E4M3(std::nextafter(mid, hi)), code + 1);
    EXPECT_EQ(toF8E4M3(mid), code % 2 == 0 ? code : code + 1);
  }
  EXPECT_EQ(toF8E4M3(1000.0f), 0x7e);
  EXPECT_EQ(toF8E4M3(-1e9f), 0xfe);
  EXPECT_EQ(toF8E5M2(1e6f), 0x7b);
  EXPECT_EQ(toF8E4M3(std::ldexp(1.0f, -11)), 0x00); // below half the least
}

} // namespace
} // namespace attnc
