//===- InputNoise.h - the random inputs of a checked run --------*- C++ -*-===//
//
// `attnc run` fills every input with random values before each run: about
// 10^8 of them at the benchmarks' prefill shapes, host time that every
// timed comparison on the GPU machine pays. The standard library's normal
// distribution over a Mersenne twister costs 30-35 ns a sample; with these
// generators a 2 x 8192 prefill run took 9 s instead of 12 there. They are
// deterministic for a seed and never give zeros.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CHECK_INPUTNOISE_H
#define ATTNC_CHECK_INPUTNOISE_H

#include <cmath>
#include <cstdint>

namespace attnc {

/// SplitMix64: a 64-bit state stepped by a constant and mixed; every seed,
/// zero included, gives a full-period sequence.
class RandomBits {
public:
  explicit RandomBits(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1), never 0 or 1.
  double open01() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; }

private:
  uint64_t state;
};

/// Standard normal samples by the Box-Muller transform, two per pair of
/// uniforms.
class NormalSamples {
public:
  explicit NormalSamples(uint64_t seed) : bits(seed) {}
  double next() {
    if (hasSpare) {
      hasSpare = false;
      return spare;
    }
    double radius = std::sqrt(-2.0 * std::log(bits.open01()));
    double angle = 6.283185307179586 * bits.open01();
    spare = radius * std::sin(angle);
    hasSpare = true;
    return radius * std::cos(angle);
  }

private:
  RandomBits bits;
  double spare = 0.0;
  bool hasSpare = false;
};

} // namespace attnc

#endif // ATTNC_CHECK_INPUTNOISE_H
