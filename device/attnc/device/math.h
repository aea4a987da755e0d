//===- math.h - fast float math through PTX -------------------------------===//
//
// The online softmax works in base 2 with log2(e) folded into the score
// scale, so exp2 and log2 map to single MUFU instructions.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_MATH_H
#define ATTNC_DEVICE_MATH_H

#include "attnc/device/prelude.h"

namespace attnc {

ATTNC_DEVICE float negInf() {
  float r;
  asm("mov.b32 %0, 0xff800000;" : "=f"(r));
  return r;
}
ATTNC_DEVICE float fastExp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
/// 1/x to within an ulp, in one instruction: IEEE division brings a
/// slow-path subroutine (about 80 instructions) into every kernel.
ATTNC_DEVICE float fastRcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
ATTNC_DEVICE float fastLog2(float x) {
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
ATTNC_DEVICE float fastTanh(float x) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
/// One FMNMX each, where a comparison and a select are two dependent
/// instructions. A NaN operand drops out of the extreme, but not out of
/// the softmax: it still reaches the exponentials and the sums.
ATTNC_DEVICE float maxf(float a, float b) { return fmaxf(a, b); }
ATTNC_DEVICE float minf(float a, float b) { return fminf(a, b); }

/// ALiBi slope of `head` among `heads`: the geometric sequence of the ALiBi
/// paper, interleaved for head counts that are not powers of two.
ATTNC_DEVICE float alibiSlope(int head, int heads) {
  int pow2 = 1;
  while (pow2 * 2 <= heads)
    pow2 *= 2;
  if (head < pow2)
    return fastExp2(-8.0f * float(head + 1) / float(pow2));
  return fastExp2(-4.0f * float(2 * (head - pow2) + 1) / float(pow2));
}

} // namespace attnc

#endif // ATTNC_DEVICE_MATH_H
