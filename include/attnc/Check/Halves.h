//===- Halves.h - 16-bit floats on the host ---------------------*- C++ -*-===//
//
// The checker and the GPU tests write inputs as bf16 / f16 bits and round
// the reference's values the way the device does (cvt.rn: to nearest even).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CHECK_HALVES_H
#define ATTNC_CHECK_HALVES_H

#include <cstdint>

namespace attnc {

uint16_t toBF16(float value);
float fromBF16(uint16_t half);
/// For finite values within f16's range (the checker's inputs and products).
uint16_t toF16(float value);
float fromF16(uint16_t half);
/// fp8 as the kernels' caches store it: round to nearest even, saturating
/// to the largest finite value (as vLLM's and FlashInfer's quantizers do);
/// decoding is exact, NaN and infinities included.
uint8_t toF8E4M3(float value);
float fromF8E4M3(uint8_t bits);
uint8_t toF8E5M2(float value);
float fromF8E5M2(uint8_t bits);

} // namespace attnc

#endif // ATTNC_CHECK_HALVES_H
