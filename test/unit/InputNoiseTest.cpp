//===- InputNoiseTest.cpp - the random inputs of a checked run ------------===//
//
// The generators `attnc run` fills its inputs with: the same values for the
// same seed, others for another, and standard normal samples (none zero)
// whose moments and tails match the distribution.
//
//===----------------------------------------------------------------------===//

#include "attnc/Check/InputNoise.h"

#include <gtest/gtest.h>

#include <cmath>

namespace attnc {
namespace {

TEST(InputNoise, SameSeedSameValuesOtherSeedOthers) {
  NormalSamples a(7), b(7), c(8);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    double x = a.next(), y = b.next(), z = c.next();
    EXPECT_EQ(x, y) << "sample " << i;
    differ += x != z;
  }
  EXPECT_GT(differ, 990);
}

TEST(InputNoise, UniformsStayInsideTheOpenInterval) {
  RandomBits bits(0);
  double lo = 1.0, hi = 0.0;
  for (int i = 0; i < 100000; ++i) {
    double u = bits.open01();
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_GT(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1.0 - 1e-3);
}

// A million samples: the mean within 5 standard errors of 0, the variance
// within 1 %, and the share beyond 3 sigma near 0.27 %.
TEST(InputNoise, SamplesAreStandardNormal) {
  NormalSamples normal(1234);
  const int n = 1000000;
  double sum = 0, squares = 0;
  int zeros = 0, tails = 0;
  for (int i = 0; i < n; ++i) {
    double x = normal.next();
    sum += x;
    squares += x * x;
    zeros += x == 0.0;
    tails += std::abs(x) > 3.0;
  }
  double mean = sum / n, variance = squares / n - mean * mean;
  EXPECT_LT(std::abs(mean), 5.0 / std::sqrt(double(n)));
  EXPECT_NEAR(variance, 1.0, 0.01);
  EXPECT_EQ(zeros, 0);
  EXPECT_NEAR(double(tails) / n, 0.0027, 0.0005);
}

} // namespace
} // namespace attnc
