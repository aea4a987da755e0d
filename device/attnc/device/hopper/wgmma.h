//===- hopper/wgmma.h - warpgroup matrix products and their fragments ----===//
//
// wgmma.mma_async: the four warps of a warpgroup (128 threads, starting at
// a warp index divisible by 4) multiply a 64 x 16 A by a 16 x N B into a
// 64 x N f32 accumulator held in their registers. B is always read from
// shared memory through a descriptor (smem_layout.h); A is read from shared
// memory too (SS: S = Q.K^T) or from registers (RS: O += P.V, with P the
// softmax probabilities left in registers by the first product).
//
// The instructions are asynchronous: wgmmaFence() before the first one
// that touches registers written by ordinary instructions, wgmmaCommit()
// to close a group, wgmmaWait<n>() until at most n groups are in flight.
// Until the wait, the accumulator and A registers belong to the tensor
// cores; fenceOperand() keeps the compiler from moving their reads and
// writes across the asm boundaries.
//
// The fragment layouts (which thread holds which element) are plain
// constexpr functions, visible to host code so tests can check them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_WGMMA_H
#define ATTNC_DEVICE_HOPPER_WGMMA_H

#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/wgmma_widths.h"
#include "attnc/device/prelude.h"
#if ATTNC_IS_DEVICE
#include "attnc/device/mma.h" // Mma<T>::pack
#endif

namespace attnc {
namespace hopper {

/// Threads of a warpgroup and rows of one wgmma.
constexpr int kWarpgroupThreads = 128;
constexpr int kWgmmaM = 64;

/// Where register `i` of warpgroup thread `t` (0..127) sits in a 64 x N
/// accumulator: warp t/32 owns rows 16 (t/32) .. +15; lane l holds rows
/// l/4 and l/4 + 8 and columns 2 (l%4) and 2 (l%4) + 1 of every 8-column
/// group; register i is column group i/4, row half (i/2)%2, column i%2.
struct AccumulatorLayout {
  static constexpr int row(int thread, int i) {
    return 16 * (thread / 32) + (thread % 32) / 4 + 8 * ((i / 2) % 2);
  }
  static constexpr int col(int thread, int i) {
    return 8 * (i / 4) + 2 * (thread % 4) + i % 2;
  }
};

/// Where the 16-bit element `half` (0 low, 1 high) of register `r` (0..3)
/// of an A fragment (a 64 x 16 step of A from registers) sits: the layout
/// of mma.sync's m16n8k16 A, one 16-row slice per warp.
struct AFragmentLayout {
  static constexpr int row(int thread, int r) {
    return 16 * (thread / 32) + (thread % 32) / 4 + 8 * (r % 2);
  }
  static constexpr int col(int thread, int r, int half) {
    return 8 * (r / 2) + 2 * (thread % 4) + half;
  }
};

/// The accumulator register that element `half` of register `r` of A step
/// `k` takes its value from, when the accumulator of one product (S, 64 x
/// N) becomes the A of the next (P, k16 steps over N): the same thread
/// holds both, so the conversion needs no shuffles.
constexpr int accumulatorIndexOfA(int k, int r, int half) {
  return 8 * k + 2 * r + half;
}

/// The f32 accumulator of a 64 x N product: N / 2 registers per thread.
template <int N> struct Accumulator {
  static_assert(N % kWgmmaK == 0 && N >= kWgmmaK && N <= 256,
                "wgmma widths here are multiples of 16 up to 256");
  static constexpr int kCols = N;
  static constexpr int kRegs = N / 2;
  float d[kRegs];
};

/// One k16 step of A in registers: 8 16-bit values per thread.
struct AFragment {
  u32 r[4];
};

#if ATTNC_IS_DEVICE

template <typename T> struct WgmmaInput;
template <> struct WgmmaInput<bf16> { static constexpr bool kBf16 = true; };
template <> struct WgmmaInput<f16> { static constexpr bool kBf16 = false; };

ATTNC_DEVICE void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
ATTNC_DEVICE void wgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int Pending> ATTNC_DEVICE void wgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(Pending) : "memory");
}

/// Pins the accumulator's registers at this point of the program, so that
/// no read or write of them moves into the window where wgmma owns them.
template <int N> ATTNC_DEVICE void fenceOperand(Accumulator<N> &acc) {
#pragma unroll
  for (int i = 0; i < Accumulator<N>::kRegs; ++i)
    asm volatile("" : "+f"(acc.d[i])::"memory");
}
ATTNC_DEVICE void fenceOperand(AFragment &a) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
    asm volatile("" : "+r"(a.r[i])::"memory");
}

/// Waits until at most `Pending` commit groups are in flight, after which
/// `acc` (written by the groups waited for) may be read.
template <int Pending, int N> ATTNC_DEVICE void wgmmaWait(Accumulator<N> &acc) {
  wgmmaWait<Pending>();
  fenceOperand(acc);
}

template <int N> ATTNC_DEVICE void zero(Accumulator<N> &acc) {
#pragma unroll
  for (int i = 0; i < Accumulator<N>::kRegs; ++i)
    acc.d[i] = 0.0f;
}

// One asm statement per (N, input type); the operand spellings per N come
// from wgmma_widths.h. p = (accumulate != 0): false overwrites D.
#define ATTNC_WGMMA_SS_ASM(N, TYPE)                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " ATTNC_WGMMA_SS_SCALE_##N    \
               ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE    \
               "." TYPE " " ATTNC_WGMMA_D_##N ", " ATTNC_WGMMA_SS_##N ";\n}\n" \
               : ATTNC_WGMMA_ACC_##N(acc.d)                                    \
               : "l"(a), "l"(b), "r"(accumulate), "n"(TransB))
#define ATTNC_WGMMA_RS_ASM(N, TYPE)                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " ATTNC_WGMMA_RS_SCALE_##N    \
               ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE    \
               "." TYPE " " ATTNC_WGMMA_D_##N ", " ATTNC_WGMMA_RS_##N ";\n}\n" \
               : ATTNC_WGMMA_ACC_##N(acc.d)                                    \
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "l"(b),   \
                 "r"(accumulate), "n"(TransB))

/// acc (+)= A.B for one k16 step, A and B from shared memory. TransB is 0
/// for a K-major B (Sw128Tile::kMajor), 1 for an MN-major one (mnMajor).
template <typename T, int TransB, int N>
ATTNC_DEVICE void wgmmaSS(Accumulator<N> &acc, u64 a, u64 b, u32 accumulate) {
#define ATTNC_WGMMA_SS_CASE(W)                                                 \
  if constexpr (N == W) {                                                      \
    if constexpr (WgmmaInput<T>::kBf16)                                        \
      ATTNC_WGMMA_SS_ASM(W, "bf16");                                           \
    else                                                                       \
      ATTNC_WGMMA_SS_ASM(W, "f16");                                            \
  } else
  ATTNC_WGMMA_WIDTHS(ATTNC_WGMMA_SS_CASE) {
    static_assert(N < 0, "no wgmma spelling for this N");
  }
#undef ATTNC_WGMMA_SS_CASE
}

/// acc (+)= A.B for one k16 step, A from registers, B from shared memory.
template <typename T, int TransB, int N>
ATTNC_DEVICE void wgmmaRS(Accumulator<N> &acc, const AFragment &a, u64 b,
                          u32 accumulate) {
#define ATTNC_WGMMA_RS_CASE(W)                                                 \
  if constexpr (N == W) {                                                      \
    if constexpr (WgmmaInput<T>::kBf16)                                        \
      ATTNC_WGMMA_RS_ASM(W, "bf16");                                           \
    else                                                                       \
      ATTNC_WGMMA_RS_ASM(W, "f16");                                            \
  } else
  ATTNC_WGMMA_WIDTHS(ATTNC_WGMMA_RS_CASE) {
    static_assert(N < 0, "no wgmma spelling for this N");
  }
#undef ATTNC_WGMMA_RS_CASE
}
#undef ATTNC_WGMMA_SS_ASM
#undef ATTNC_WGMMA_RS_ASM

/// Issues S = Q.K^T for one K tile as one commit group: a K-major SS
/// wgmma per k16 step of the head dim, the first overwriting S. Q is a 64
/// x D tile at shared address `q`, K an N x D tile at `k`.
template <typename T, typename QTile, typename KTile>
ATTNC_DEVICE void issueQK(Accumulator<KTile::kRows> &s, u32 q, u32 k) {
  static_assert(QTile::kRows == kWgmmaM, "one warpgroup computes 64 rows");
  static_assert(QTile::kCols == KTile::kCols, "Q and K share the head dim");
  fenceOperand(s);
  wgmmaFence();
#pragma unroll
  for (int step = 0; step < QTile::kCols / kWgmmaK; ++step)
    wgmmaSS<T, 0>(s, QTile::kMajor(q, step), KTile::kMajor(k, step), step > 0);
  wgmmaCommit();
}

/// Issues O += P.V as one commit group: an RS wgmma per k16 step of the
/// keys, P from registers, V (N keys x Dv, at shared address `v`) read
/// MN-major.
template <typename T, typename VTile>
ATTNC_DEVICE void issuePV(Accumulator<VTile::kCols> &o,
                          AFragment (&p)[VTile::kRows / kWgmmaK], u32 v) {
  // P's registers are written by ordinary instructions (the rounding of
  // S): they must be complete before the fence, not scheduled past it.
#pragma unroll
  for (int step = 0; step < VTile::kRows / kWgmmaK; ++step)
    fenceOperand(p[step]);
  fenceOperand(o);
  wgmmaFence();
#pragma unroll
  for (int step = 0; step < VTile::kRows / kWgmmaK; ++step)
    wgmmaRS<T, 1>(o, p[step], VTile::mnMajor(v, step), 1);
  wgmmaCommit();
}

/// Rounds a 64 x N accumulator to 16-bit A fragments, one per k16 step of
/// N, in the same threads (accumulatorIndexOfA).
template <typename T, int N>
ATTNC_DEVICE void toAFragments(const Accumulator<N> &acc,
                               AFragment (&a)[N / kWgmmaK]) {
#pragma unroll
  for (int k = 0; k < N / kWgmmaK; ++k)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      a[k].r[r] = Mma<T>::pack(acc.d[accumulatorIndexOfA(k, r, 0)],
                               acc.d[accumulatorIndexOfA(k, r, 1)]);
}

/// setmaxnreg: moves registers between warpgroups of a warp-specialized
/// kernel (producers give theirs up, consumers take them). Every warp of
/// the warpgroup executes the same one; it takes effect only in a kernel
/// whose register count is capped at entry (__launch_bounds__(threads, 1))
/// and whose roles are the branches of one if/else (ptxas warns C7508 when
/// it ignores it).
template <int Regs> ATTNC_DEVICE void raiseRegisterLimit() {
  static_assert(Regs % 8 == 0 && Regs >= 24 && Regs <= 256,
                "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
}
template <int Regs> ATTNC_DEVICE void lowerRegisterLimit() {
  static_assert(Regs % 8 == 0 && Regs >= 24 && Regs <= 256,
                "setmaxnreg takes a multiple of 8 in [24, 256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_WGMMA_H
