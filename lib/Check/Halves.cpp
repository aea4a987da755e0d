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

namespace {
/// A float with `E` exponent bits (bias 2^(E-1) - 1) and `M` mantissa bits,
/// rounded to nearest even and saturated to `maxCode` (the largest finite
/// magnitude's bits).
uint8_t toMinifloat(float value, int E, int M, uint8_t maxCode) {
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  float a = std::fabs(value);
  if (std::isnan(value))
    return uint8_t(sign | 0x7f);
  if (std::isinf(value))
    return uint8_t(sign | maxCode);
  int bias = (1 << (E - 1)) - 1;
  int exponent;
  float mantissa = std::frexp(a, &exponent); // a = m * 2^e, m in [0.5, 1)
  int biased = exponent - 1 + bias;
  int code;
  if (a == 0.0f) {
    code = 0;
  } else if (biased <= 0) {
    // Subnormal: a multiple of 2^(1 - bias - M); rounding up to the
    // smallest normal gives its code.
    code = int(std::nearbyint(std::ldexp(a, bias - 1 + M)));
  } else {
    int m = int(std::nearbyint((mantissa * 2 - 1) * (1 << M)));
    code = (biased << M) + m; // m == 2^M carries into the exponent
  }
  if (code > maxCode)
    code = maxCode;
  return uint8_t(sign | code);
}
} // namespace

uint8_t toF8E4M3(float value) { return toMinifloat(value, 4, 3, 0x7e); }
float fromF8E4M3(uint8_t bits) {
  int exponent = (bits >> 3) & 0xf, mantissa = bits & 0x7;
  float value = exponent == 0xf && mantissa == 0x7 ? NAN
                : exponent == 0
                    ? std::ldexp(float(mantissa), -9)
                    : std::ldexp(float(mantissa + 8), exponent - 10);
  return (bits & 0x80) ? -value : value;
}
uint8_t toF8E5M2(float value) { return toMinifloat(value, 5, 2, 0x7b); }
float fromF8E5M2(uint8_t bits) {
  int exponent = (bits >> 2) & 0x1f, mantissa = bits & 0x3;
  float value = exponent == 0x1f ? (mantissa ? NAN : INFINITY)
                : exponent == 0
                    ? std::ldexp(float(mantissa), -16)
                    : std::ldexp(float(mantissa + 4), exponent - 17);
  return (bits & 0x80) ? -value : value;
}

} // namespace attnc
