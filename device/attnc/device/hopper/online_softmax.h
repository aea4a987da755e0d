//===- hopper/online_softmax.h - a tile's softmax step on wgmma rows ------===//
//
// The online softmax of the warp-specialized CTAs (prefill.h, latent.h) on
// a 64 x N wgmma accumulator: each thread holds parts of two rows (`half`
// 0 and 1, AccumulatorLayout), which the four lanes of a quad share. One
// step takes a tile's scores to unnormalized probabilities, moving the
// rows' maxima and sums on and giving the factor that rescales what the
// rows accumulated before. Scores may be held in units that `logitScale`
// turns into base-2 logits inside exp2's argument (one FFMA a score).
// The epilogue's stores of those rows (the output, or a split's partial
// state, and the LSE) are here too, so that both CTAs write one layout.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_ONLINE_SOFTMAX_H
#define ATTNC_DEVICE_HOPPER_ONLINE_SOFTMAX_H

#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/math.h"
#include "attnc/device/params.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

#if ATTNC_IS_DEVICE

/// The maximum of this thread's values in row `half`, over Chains
/// independent chains: one chain of N / 8 dependent maxima would sit on the
/// softmax's critical path.
template <int Chains, int N>
ATTNC_DEVICE float rowMaxOf(const Accumulator<N> &acc, int half) {
  constexpr int kRegs = Accumulator<N>::kRegs;
  float chain[Chains];
#pragma unroll
  for (int c = 0; c < Chains; ++c)
    chain[c] = negInf();
  int n = 0;
#pragma unroll
  for (int i = 0; i < kRegs; ++i)
    if ((i / 2) % 2 == half) {
      chain[n % Chains] = maxf(chain[n % Chains], acc.d[i]);
      ++n;
    }
#pragma unroll
  for (int width = Chains / 2; width > 0; width /= 2)
#pragma unroll
    for (int c = 0; c < width; ++c)
      chain[c] = maxf(chain[c], chain[c + width]);
  return chain[0];
}

/// How far a row's maximum may rise, in base-2 logits, before the row takes
/// it as exp2's reference. Until then the row keeps its earlier reference,
/// its probabilities reach at most 2^kLazyRescaleLog2 (well within f32 and
/// the 16-bit P), and its rescale factor is exactly 1, so that a warp whose
/// rows all keep theirs skips the output's rescale (rescaleRows): after a
/// row's first tiles its maximum seldom rises that far. The normalizer and
/// the LSE use the same reference, so the result is the same up to rounding.
constexpr float kLazyRescaleLog2 = 8.0f;

/// One tile's step: the rows' exp2 references moved on where their maxima
/// rose past kLazyRescaleLog2 (over the quad), the scores exponentiated in
/// place, the sums moved on, and in `alpha` the factor that rescales what
/// each row accumulated before this tile (exactly 1 where the reference
/// stayed). `logitScale` is positive.
template <int Chains, int N>
ATTNC_DEVICE void exponentiateRows(Accumulator<N> &s, float (&rowMax)[2],
                                   float (&rowSum)[2], float logitScale,
                                   float (&alpha)[2]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float mx = maxf(rowMax[half], rowMaxOf<Chains>(s, half));
    mx = maxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = maxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // From -inf any key moves it (an infinite rise); -inf to -inf is NaN,
    // so a row that has seen no key keeps -inf.
    bool moves = (mx - rowMax[half]) * logitScale > kLazyRescaleLog2;
    float reference = moves ? mx : rowMax[half];
    // A row that has seen no key shifts by 0, so exp2 stays 0.
    float shift = reference == negInf() ? 0.0f : reference * logitScale;
    alpha[half] = moves ? fastExp2(rowMax[half] * logitScale - shift) : 1.0f;
    rowMax[half] = reference;
    float sum = rowSum[half] * alpha[half];
#pragma unroll
    for (int i = 0; i < Accumulator<N>::kRegs; ++i)
      if ((i / 2) % 2 == half) {
        s.d[i] = fastExp2(s.d[i] * logitScale - shift);
        sum += s.d[i];
      }
    rowSum[half] = sum;
  }
}

/// Rescales what the rows accumulated by their factors from
/// exponentiateRows, unless every row of the warp kept its exp2 reference
/// (all factors exactly 1). The skip is a warp-uniform branch: call it
/// where no warpgroup-wide instruction (wgmma and its waits) sits inside.
template <int N>
ATTNC_DEVICE void rescaleRows(Accumulator<N> &o, const float (&alpha)[2]) {
  if (__all_sync(0xffffffffu, alpha[0] == 1.0f && alpha[1] == 1.0f))
    return;
#pragma unroll
  for (int i = 0; i < Accumulator<N>::kRegs; ++i)
    o.d[i] *= alpha[(i / 2) % 2];
}

/// Stores two adjacent output columns: f32 as they are, 16-bit types
/// rounded into one 32-bit word.
ATTNC_DEVICE void storePair(float *dst, float a, float b) {
  *reinterpret_cast<float2 *>(dst) = make_float2(a, b);
}
template <typename T> ATTNC_DEVICE void storePair(T *dst, float a, float b) {
  *reinterpret_cast<u32 *>(dst) = Mma<T>::pack(a, b);
}

/// Stores the accumulator's row `half` (of this thread's two), times
/// `factor`, into the output row that starts at `row`. One address serves
/// the whole row, each pair at a constant offset from the thread's first
/// column: with an address computed per pair, and a branch per pair on
/// the output's type, ptxas serialized the stores on one register (a third
/// of the stall samples of 16 x 512 prefill).
template <typename T, int N>
ATTNC_DEVICE void storeRow(T *row, const Accumulator<N> &acc, int half,
                           float factor, int thread) {
  T *first = row + AccumulatorLayout::col(thread, 0);
#pragma unroll
  for (int i = 0; i < Accumulator<N>::kRegs; i += 2)
    if ((i / 2) % 2 == half)
      storePair(first + 8 * (i / 4), acc.d[i] * factor, acc.d[i + 1] * factor);
}

/// Stores output row `outRow`'s columns [col0, ...) that this thread holds
/// in row `half` of `acc`, times `factor`, and, where `writesLse` (one
/// thread of the quad), its LSE: the kernel's output (the LSE only with
/// HasLse), or under split-KV (num_splits > 1, only where the plan
/// `MaySplit`) split `split`'s partial state, in f32, which a merge reads.
template <typename Out, int DV, bool HasLse, bool MaySplit, int N>
ATTNC_DEVICE void storeOutputRow(const AttnParams &p, int split, i64 outRow,
                                 i64 col0, const Accumulator<N> &acc, int half,
                                 float factor, int thread, bool writesLse,
                                 float lse) {
  if (MaySplit && p.num_splits > 1) {
    i64 state = split * p.partial_split_stride + outRow;
    storeRow(p.partial_out + state * DV + col0, acc, half, factor, thread);
    if (writesLse)
      p.partial_lse[state] = lse;
  } else {
    storeRow(static_cast<Out *>(p.out) + outRow * DV + col0, acc, half, factor,
             thread);
    if (HasLse && writesLse)
      p.lse[outRow] = lse;
  }
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_ONLINE_SOFTMAX_H
