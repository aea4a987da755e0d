//===- widen.h - fp8 KV elements and the queries they meet, in f16 --------===//
//
// An fp8 cache is read at one byte per element and widened in shared memory
// before the products, which take 16-bit operands. Every e4m3 and e5m2 value
// (NaN and infinities included) is exactly an f16, and sm_89's cvt turns two
// of them into an f16 pair in one instruction, so the products over an fp8
// cache run in f16 whatever the queries' type: bf16 queries are scaled by a
// power of two into f16's range once per warp (exact for every element
// within a factor 2^28 of the warp's largest; smaller ones round as f16
// subnormals), and the power is folded into the score scale. Probabilities are
// then f16 too (three more mantissa bits than bf16). The dequantization scales
// are not applied here: the kernel folds the key scale into the score scale and
// the value scale into the output's normalization.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_WIDEN_H
#define ATTNC_DEVICE_WIDEN_H

#include "attnc/device/mma.h"
#include "attnc/device/prelude.h"

namespace attnc {

/// Whether elements of `T` are stored in one byte and widened on load.
template <typename T> constexpr bool kNarrow = sizeof(T) == 1;

template <typename A, typename B> constexpr bool kSame = false;
template <typename A> constexpr bool kSame<A, A> = true;

/// The 16-bit type the products take: the queries' own, or f16 over an fp8
/// cache.
template <typename Query, typename KV, bool Narrow = kNarrow<KV>>
struct ProductType {
  using type = Query;
};
template <typename Query, typename KV> struct ProductType<Query, KV, true> {
  using type = f16;
};

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

/// Sixteen fp8 values (a 16-byte chunk) to sixteen f16 values (two chunks),
/// in order.
template <typename From>
ATTNC_DEVICE void widenChunk(const uint4 &in, uint4 (&out)[2]) {
  u32 wide[8];
  f8x4ToF16<From>(in.x, reinterpret_cast<u32(&)[2]>(wide[0]));
  f8x4ToF16<From>(in.y, reinterpret_cast<u32(&)[2]>(wide[2]));
  f8x4ToF16<From>(in.z, reinterpret_cast<u32(&)[2]>(wide[4]));
  f8x4ToF16<From>(in.w, reinterpret_cast<u32(&)[2]>(wide[6]));
  out[0] = make_uint4(wide[0], wide[1], wide[2], wide[3]);
  out[1] = make_uint4(wide[4], wide[5], wide[6], wide[7]);
}

/// The larger magnitude of a bf16 pair, as a float.
ATTNC_DEVICE float bf16x2AbsMax(u32 pair) {
  return fmaxf(fabsf(__uint_as_float(pair << 16)),
               fabsf(__uint_as_float(pair & 0xffff0000u)));
}

/// A bf16 pair times `scale` (a power of two) as an f16 pair.
ATTNC_DEVICE u32 bf16x2ToF16x2(u32 pair, float scale) {
  u32 out;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;"
      : "=r"(out)
      : "f"(__uint_as_float(pair & 0xffff0000u) * scale),
        "f"(__uint_as_float(pair << 16) * scale));
  return out;
}

/// The power of two e such that `largest` * 2^-e lies in [2^14, 2^15), well
/// inside f16's range (at least -126, so that 2^-e is a float).
ATTNC_DEVICE int f16RangeExponent(float largest) {
  if (!(largest > 0.0f) || largest > 3.0e38f)
    return 0; // zeros, NaN and infinities keep their scale
  int exponent = int((__float_as_uint(largest) >> 23) & 0xff) - 127;
  int e = exponent - 14;
  return e < -126 ? -126 : e;
}

/// f16RangeExponent of the largest of the warp's `largest` (each lane's
/// own largest magnitude): one power of two for every row the warp keeps.
ATTNC_DEVICE int warpF16RangeExponent(float largest) {
  for (int offset = 16; offset > 0; offset /= 2)
    largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, offset));
  return f16RangeExponent(largest);
}

/// 2^e as a float, exactly (-126 <= e <= 127).
ATTNC_DEVICE float powerOfTwo(int e) {
  return __uint_as_float(u32(127 + e) << 23);
}

} // namespace attnc

#endif // ATTNC_DEVICE_WIDEN_H
