//===- mma.h - shared-memory access, ldmatrix and mma.sync m16n8k16 -----===//
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"): lane l
// holds rows l/4 and l/4+8 and columns 2*(l%4)+{0,1} of each 8-column half.
// The accumulator layout of two adjacent n-tiles equals the A layout of one
// k16 step, so softmax probabilities feed the second product from registers.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_MMA_H
#define ATTNC_DEVICE_MMA_H

#include "attnc/device/prelude.h"

namespace attnc {

ATTNC_DEVICE u32 sharedAddress(const void *ptr) {
  u32 addr;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }"
      : "=r"(addr)
      : "l"(ptr));
  return addr;
}

/// Stores 16 bytes at a shared-memory address (one 128-bit store).
ATTNC_DEVICE void storeShared16(u32 addr, const uint4 &v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.x),
               "r"(v.y), "r"(v.z), "r"(v.w));
}
/// Loads 16 bytes from a shared-memory address.
ATTNC_DEVICE uint4 loadShared16(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr));
  return v;
}

ATTNC_DEVICE void ldmatrixX4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

ATTNC_DEVICE void ldmatrixX4Trans(u32 (&r)[4], u32 addr) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

template <typename T> struct Mma;

template <> struct Mma<bf16> {
  static ATTNC_DEVICE void run(float (&d)[4], const u32 (&a)[4], u32 b0,
                               u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  }
  /// Two floats to a packed pair, `lo` in the low half.
  static ATTNC_DEVICE u32 pack(float lo, float hi) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  static ATTNC_DEVICE float unpackLo(u32 v) { return __uint_as_float(v << 16); }
};

template <> struct Mma<f16> {
  static ATTNC_DEVICE void run(float (&d)[4], const u32 (&a)[4], u32 b0,
                               u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  }
  static ATTNC_DEVICE u32 pack(float lo, float hi) {
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
  static ATTNC_DEVICE float unpackLo(u32 v) {
    float r;
    asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l; }"
        : "=f"(r)
        : "r"(v));
    return r;
  }
};

} // namespace attnc

#endif // ATTNC_DEVICE_MMA_H
