//===- widen.h - fp8 KV elements to the queries' 16-bit type --------------===//
//
// An fp8 cache is read at one byte per element and widened in shared memory
// before the products, which take 16-bit operands. Every e4m3 and e5m2 value
// (NaN and infinities included) is exactly an f16, and sm_89's cvt turns two
// of them into an f16 pair; for bf16 queries each pair goes on through f32,
// which is exact too. The dequantization scales are not applied here: the
// kernel folds the key scale into the score scale and the value scale into
// the output's normalization.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_WIDEN_H
#define ATTNC_DEVICE_WIDEN_H

#include "attnc/device/prelude.h"

namespace attnc {

/// Whether elements of `T` are stored in one byte and widened on load.
template <typename T> constexpr bool kNarrow = sizeof(T) == 1;

template <typename A, typename B> constexpr bool kSame = false;
template <typename A> constexpr bool kSame<A, A> = true;

/// Four fp8 values (one u32, first element in the low byte) to two f16
/// pairs, the first pair's first element in its low half.
template <typename From> ATTNC_DEVICE void f8x4ToF16(u32 in, u32 (&out)[2]);

template <> ATTNC_DEVICE void f8x4ToF16<f8e4m3>(u32 in, u32 (&out)[2]) {
  asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %2;\n"
      "  cvt.rn.f16x2.e4m3x2 %0, lo; cvt.rn.f16x2.e4m3x2 %1, hi; }"
      : "=r"(out[0]), "=r"(out[1])
      : "r"(in));
}
template <> ATTNC_DEVICE void f8x4ToF16<f8e5m2>(u32 in, u32 (&out)[2]) {
  asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %2;\n"
      "  cvt.rn.f16x2.e5m2x2 %0, lo; cvt.rn.f16x2.e5m2x2 %1, hi; }"
      : "=r"(out[0]), "=r"(out[1])
      : "r"(in));
}

/// An f16 pair to a bf16 pair (exact for values that came from fp8).
ATTNC_DEVICE u32 f16x2ToBf16x2(u32 in) {
  u32 out;
  asm("{ .reg .b16 lo, hi; .reg .f32 flo, fhi; mov.b32 {lo, hi}, %1;\n"
      "  cvt.f32.f16 flo, lo; cvt.f32.f16 fhi, hi;\n"
      "  cvt.rn.bf16x2.f32 %0, fhi, flo; }"
      : "=r"(out)
      : "r"(in));
  return out;
}

/// Sixteen fp8 values (a 16-byte chunk) to sixteen 16-bit values (two
/// chunks), in order.
template <typename From, typename To>
ATTNC_DEVICE void widenChunk(const uint4 &in, uint4 (&out)[2]) {
  u32 words[4] = {in.x, in.y, in.z, in.w};
  u32 wide[8];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    u32 pair[2];
    f8x4ToF16<From>(words[w], pair);
    for (int h = 0; h < 2; ++h)
      wide[2 * w + h] = kSame<To, bf16> ? f16x2ToBf16x2(pair[h]) : pair[h];
  }
  out[0] = make_uint4(wide[0], wide[1], wide[2], wide[3]);
  out[1] = make_uint4(wide[4], wide[5], wide[6], wide[7]);
}

} // namespace attnc

#endif // ATTNC_DEVICE_WIDEN_H
