//===- split_merge.h - split-KV kernels that merge their own splits -------===//
//
// A kernel with `merge_splits` (attn-fuse-split-merge) stores each split's
// partial state (an f32 output row and its LSE) in the launch's workspace,
// and merges them into the output (merge.h's formula) in one of two ways:
// - the mma.sync CTAs (pipelined_cta.h) count their split in on its row
//   block's counter, and the CTA that counts in last merges the row block,
//   staging the splits through its shared memory; it puts the counter back
//   to zero, so that the next launch, or a replayed CUDA graph, starts
//   clean. That merge runs after the row block's last split, so each serial
//   L2 round trip in it lengthens the launch;
// - the latent kernel (hopper/latent.h) merges in a second launch of
//   itself, over the whole grid: each warp a whole row (up to 4 splits) or
//   128 columns of one at a time, its splits loaded into registers.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_SPLIT_MERGE_H
#define ATTNC_DEVICE_SPLIT_MERGE_H

#include "attnc/device/math.h"
#include "attnc/device/mma.h"
#include "attnc/device/params.h"
#include "attnc/device/prelude.h"

namespace attnc {

#if ATTNC_IS_DEVICE

/// Release and acquire around the relaxed counter: the order a merge needs,
/// without fence.sc's global ordering point (MEMBAR.SC.GPU). A thread's
/// partial stores come before the fence that precedes the count; the
/// merging CTA's loads come after the fence that follows it.
ATTNC_DEVICE void fenceAcqRelGpu() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

/// Counts one split in on `counter`; true for the last of `splits`, which
/// also zeroes the counter for the next launch. One thread calls it, after
/// every thread of its CTA that stored the split fenced and met it.
ATTNC_DEVICE bool countsInLast(int *counter, int splits) {
  bool last = atomicAdd(counter, 1) == splits - 1;
  if (last)
    atomicExch(counter, 0);
  return last;
}

/// A row's weights over its splits, one lane per split: lane i's `weight`
/// is split i's share of the merged row. A split whose keys the row does
/// not see weighs nothing (its LSE is -inf).
struct SplitWeights {
  float weight, base, sum;
  /// The merged row's LSE.
  ATTNC_DEVICE float lse() const {
    return sum > 0.0f ? (base + fastLog2(sum)) * kLn2 : negInf();
  }
};

/// The weights of output row `outRow`'s `splits` partial states, from the
/// LSEs at `partialLse` (`stride` rows apart); every lane of the warp
/// calls it.
ATTNC_DEVICE SplitWeights splitWeights(const float *partialLse, i64 stride,
                                       i64 outRow, int splits, int lane) {
  static_assert(limits::kMaxKVSplits <= 32, "a lane per split");
  float lse = lane < splits
                  ? __ldcg(partialLse + lane * stride + outRow) * kLog2E
                  : negInf();
  float total = lse;
  for (int offset = 16; offset > 0; offset /= 2)
    total = maxf(total, __shfl_xor_sync(0xffffffffu, total, offset));
  SplitWeights w;
  w.base = total == negInf() ? 0.0f : total;
  float part = lane < splits ? fastExp2(lse - w.base) : 0.0f;
  w.sum = part;
  for (int offset = 16; offset > 0; offset /= 2)
    w.sum += __shfl_xor_sync(0xffffffffu, w.sum, offset);
  w.weight = w.sum > 0.0f ? part / w.sum : 0.0f;
  return w;
}

/// Stores four adjacent output columns.
ATTNC_DEVICE void storeQuad(float *dst, const float *src) {
  *reinterpret_cast<float4 *>(dst) =
      make_float4(src[0], src[1], src[2], src[3]);
}
template <typename T> ATTNC_DEVICE void storeQuad(T *dst, const float *src) {
  *reinterpret_cast<uint2 *>(dst) =
      make_uint2(Mma<T>::pack(src[0], src[1]), Mma<T>::pack(src[2], src[3]));
}

/// One warp merges columns [col0, col0 + Columns) of output row `outRow`
/// (rows of DV columns) from its `splits` partial states into the output,
/// a lane's 4 columns a pass of 128, loading `Batch` splits at once into
/// registers: their loads are in flight together, and the first batch's
/// beside the LSEs, so that up to `Batch` splits cost one L2 round trip.
/// The warp at column 0 stores the LSE. Every lane of the warp calls it.
template <typename Out, int DV, int Columns, bool HasLse, int Batch>
ATTNC_DEVICE void mergeRowColumns(const AttnParams &p, i64 outRow, int col0,
                                  int splits, int lane) {
  static_assert(Columns % 128 == 0 && DV % Columns == 0,
                "whole passes of 4 columns a lane");
  constexpr int kPasses = Columns / 128;
  const float *lanePartial = p.partial_out + outRow * DV + col0 + 4 * lane;
  float4 in[Batch][kPasses];
  auto loadBatch = [&](int first) {
#pragma unroll
    for (int i = 0; i < Batch; ++i) {
      const float *src =
          lanePartial + (first + i) * p.partial_split_stride * DV;
#pragma unroll
      for (int pass = 0; pass < kPasses; ++pass)
        in[i][pass] =
            first + i < splits
                ? __ldcg(reinterpret_cast<const float4 *>(src + 128 * pass))
                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  };
  loadBatch(0);
  SplitWeights w =
      splitWeights(p.partial_lse, p.partial_split_stride, outRow, splits, lane);
  float acc[kPasses][4] = {};
  for (int first = 0;;) {
#pragma unroll
    for (int i = 0; i < Batch; ++i) {
      int split = first + i < splits ? first + i : 0;
      float weight = __shfl_sync(0xffffffffu, w.weight, split);
      // A split the row does not see, or none: its output may be anything.
      if (first + i >= splits || weight == 0.0f)
        continue;
#pragma unroll
      for (int pass = 0; pass < kPasses; ++pass) {
        acc[pass][0] += weight * in[i][pass].x;
        acc[pass][1] += weight * in[i][pass].y;
        acc[pass][2] += weight * in[i][pass].z;
        acc[pass][3] += weight * in[i][pass].w;
      }
    }
    first += Batch;
    if (first >= splits)
      break;
    loadBatch(first);
  }
  Out *laneOut = static_cast<Out *>(p.out) + outRow * DV + col0 + 4 * lane;
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass)
    storeQuad(laneOut + 128 * pass, acc[pass]);
  if (HasLse && col0 == 0 && lane == 0)
    p.lse[outRow] = w.lse();
}

#endif // ATTNC_IS_DEVICE

} // namespace attnc

#endif // ATTNC_DEVICE_SPLIT_MERGE_H
