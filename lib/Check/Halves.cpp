//===- Halves.cpp - 16-bit floats on the host -----------------------------===//

#include "attnc/Check/Halves.h"

#include <cmath>
#include <cstring>

namespace attnc {

uint16_t toBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return uint16_t(bits >> 16);
}
float fromBF16(uint16_t half) {
  uint32_t bits = uint32_t(half) << 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}
uint16_t toF16(float value) {
  // Values here are small normals; round to nearest through the exponent.
  if (value == 0.0f)
    return 0;
  uint16_t sign = value < 0 ? 0x8000 : 0;
  float a = std::fabs(value);
  int exponent;
  float mantissa = std::frexp(a, &exponent); // a = m * 2^e, m in [0.5, 1)
  int biased = exponent + 14;
  if (biased <= 0) { // subnormal
    int m = int(std::nearbyint(a / std::ldexp(1.0f, -24)));
    return uint16_t(sign | m);
  }
  int m = int(std::nearbyint((mantissa * 2 - 1) * 1024));
  if (m == 1024) {
    m = 0;
    ++biased;
  }
  return uint16_t(sign | (biased << 10) | m);
}
float fromF16(uint16_t half) {
  int exponent = (half >> 10) & 0x1f, mantissa = half & 0x3ff;
  float value = exponent == 0 ? std::ldexp(float(mantissa), -24)
                : exponent == 31
                    ? (mantissa ? NAN : INFINITY)
                    : std::ldexp(float(mantissa + 1024), exponent - 25);
  return (half & 0x8000) ? -value : value;
}

} // namespace attnc
