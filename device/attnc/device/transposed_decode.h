//===- transposed_decode.h - decode with the keys as the products' rows ---===//
//
// A decode CTA's rows are one token's GQA group: 1 to 8 query heads. In
// attention.h's layout they fill the M side of mma.m16n8k16, 16 rows of
// which a group of 4 leaves 12 empty, and every product, exponential and
// output rescale runs on them too. Here the products are transposed,
// S^T = K Q^T and O^T += V^T P^T: the keys (and the value dims) take the 16
// rows, the group takes the 8 columns, and a warp issues half the products
// for the same keys, holds half the output accumulators and exponentiates
// half the scores.
//
// Fragments (lane = 4 g + t): S^T's accumulator holds keys g and g + 8 of
// queries 2t and 2t + 1; O^T's holds dims g and g + 8 of the same queries.
// A query's row maximum and sum are reduced over the lanes of its t (xor
// 4, 8, 16). The probabilities become P^T's B fragment through one
// movmatrix.trans per 8 keys.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_TRANSPOSED_DECODE_H
#define ATTNC_DEVICE_TRANSPOSED_DECODE_H

#include "attnc/device/pipelined_cta.h"

namespace attnc {

/// Transposes an 8 x 8 matrix of 16-bit pairs held as an mma fragment (lane
/// 4 g + t holds row g, columns 2t and 2t + 1).
ATTNC_DEVICE u32 transposeFragment(u32 pair) {
  u32 out;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;"
               : "=r"(out)
               : "r"(pair));
  return out;
}

template <class C> struct TransposedDecodeCta : PipelinedCta<C> {
  using Base = PipelinedCta<C>;
  using S = typename Base::S;
  using M = typename Base::M;
  using Base::kQueryToF16, Base::queryScale, Base::rowBegin, Base::tileBegin,
      Base::tileAt, Base::lane, Base::wn, Base::qTile, Base::kTile, Base::vTile,
      Base::kStage, Base::keyFragment, Base::store;
  static_assert(S::kBlockM == limits::kTransposedDecodeRows && C::kWarpsM == 1,
                "a token's group of up to 8 query heads, warps side by side");
  /// 16-key steps of a warp's slice of each KV tile, 16-dim steps of the
  /// output.
  static constexpr int kKeySteps = S::kWarpCols / 16;
  static constexpr int kDimSteps = S::kDV / 16;

  float s[kKeySteps][4];
  float o[kDimSteps][4];
  /// The statistics of queries 2t and 2t + 1 (this lane's columns).
  float rowMax[2], rowSum[2], slope[2];
  u32 qFrag[C::kQInRegs ? S::kD / 16 : 1][2];

  /// Row g of this lane's fragments (lane = 4 g + t), and its query columns.
  ATTNC_DEVICE int fragmentRow() const { return lane / 4; }
  ATTNC_DEVICE int queryColumn(int q) const { return (lane % 4) * 2 + q; }

  /// Returns false for a CTA past the end of its request.
  ATTNC_DEVICE bool begin(const AttnParams &params, void *sharedMem) {
    if (!this->locateCta(params, sharedMem))
      return false;
    for (int q = 0; q < 2; ++q) {
      rowMax[q] = negInf();
      rowSum[q] = 0.0f;
      slope[q] = this->slopeOf(rowBegin + queryColumn(q));
    }
    for (int d = 0; d < kDimSteps; ++d)
      for (int e = 0; e < 4; ++e)
        o[d][e] = 0.0f;
    return true;
  }

  /// Waits for tile `t` (Base::landTile); before the first, the query
  /// fragments a thread keeps.
  ATTNC_DEVICE void waitTile(int t) {
    this->landTile(t);
    if (t == tileBegin) {
      if constexpr (kQueryToF16) {
        float largest = 0.0f;
        for (int kk = 0; kk < S::kD / 16; ++kk) {
          u32 b[2];
          loadQueryBits(b, kk);
          largest =
              fmaxf(largest, fmaxf(bf16x2AbsMax(b[0]), bf16x2AbsMax(b[1])));
        }
        this->adoptF16Scale(largest);
      }
      if (C::kQInRegs)
        for (int kk = 0; kk < S::kD / 16; ++kk)
          loadQueryFragment(qFrag[kk], kk);
    }
  }

  /// Q^T's B fragment of dims [16 kk, 16 kk + 16) as stored: query g's dims
  /// 2t, 2t + 1 and 2t + 8, 2t + 9, or, when fp8 keys widen in registers,
  /// dims 4t..4t+3 (keyFragment's order) in one 8-byte load.
  ATTNC_DEVICE void loadQueryBits(u32 (&b)[2], int kk) {
    if constexpr (S::kKeysInRegisters) {
      uint2 pair = *reinterpret_cast<const uint2 *>(
          qTile() + swizzle<S::kD>(fragmentRow(), kk * 16 + (lane % 4) * 4));
      b[0] = pair.x;
      b[1] = pair.y;
    } else {
      for (int half = 0; half < 2; ++half)
        b[half] = *reinterpret_cast<const u32 *>(
            qTile() +
            swizzle<S::kD>(fragmentRow(), kk * 16 + 8 * half + (lane % 4) * 2));
    }
  }

  ATTNC_DEVICE void loadQueryFragment(u32 (&b)[2], int kk) {
    loadQueryBits(b, kk);
    if constexpr (kQueryToF16)
      for (int i = 0; i < 2; ++i)
        b[i] = bf16x2ToF16x2(b[i], queryScale);
  }

  /// K's A fragment of keys [key0, key0 + 16), dims [16 kk, 16 kk + 16).
  ATTNC_DEVICE void loadKeyFragment(u32 (&a)[4], int stage, int key0, int kk) {
    if constexpr (S::kKeysInRegisters) {
      u32 lo[2], hi[2];
      keyFragment(lo, kStage(stage), key0 + fragmentRow(), kk);
      keyFragment(hi, kStage(stage), key0 + fragmentRow() + 8, kk);
      a[0] = lo[0];
      a[1] = hi[0];
      a[2] = lo[1];
      a[3] = hi[1];
    } else {
      int row = key0 + ((lane / 8) % 2) * 8 + lane % 8;
      int col = kk * 16 + (lane / 16) * 8;
      ldmatrixX4(a, sharedAddress(kTile(stage) + swizzle<S::kD>(row, col)));
    }
  }

  // --- Products -------------------------------------------------------------
  ATTNC_DEVICE void scores(int t) {
    int stage = (t - tileBegin) % C::kStages;
    for (int ks = 0; ks < kKeySteps; ++ks)
      for (int e = 0; e < 4; ++e)
        s[ks][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < S::kD / 16; ++kk) {
      u32 b[2];
      if (C::kQInRegs) {
        b[0] = qFrag[kk][0];
        b[1] = qFrag[kk][1];
      } else {
        loadQueryFragment(b, kk);
      }
#pragma unroll
      for (int ks = 0; ks < kKeySteps; ++ks) {
        u32 a[4];
        loadKeyFragment(a, stage, wn * S::kWarpCols + ks * 16, kk);
        M::run(s[ks], a, b[0], b[1]);
      }
    }
  }

  /// Turns raw products into base-2 logits: modifiers, then the mask when
  /// the tile is partial.
  template <bool Partial> ATTNC_DEVICE void modifyScores(int t) {
    int n = tileAt(t);
#pragma unroll
    for (int ks = 0; ks < kKeySteps; ++ks)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int key = n * S::kBlockN + wn * S::kWarpCols + ks * 16 + fragmentRow() +
                  8 * (e / 2);
        s[ks][e] = this->template logit<Partial>(
            s[ks][e], rowBegin + queryColumn(e % 2), key, slope[e % 2]);
      }
  }

  ATTNC_DEVICE void onlineSoftmax() {
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      float mx = rowMax[q];
      for (int ks = 0; ks < kKeySteps; ++ks)
        mx = maxf(mx, maxf(s[ks][q], s[ks][2 + q]));
      for (int offset = 4; offset < 32; offset *= 2)
        mx = maxf(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
      // A query that has seen no key keeps -inf; shift by 0 so exp2 stays 0.
      float base = mx == negInf() ? 0.0f : mx;
      float alpha = fastExp2(rowMax[q] - base);
      rowMax[q] = mx;
      rowSum[q] *= alpha;
      for (int d = 0; d < kDimSteps; ++d) {
        o[d][q] *= alpha;
        o[d][2 + q] *= alpha;
      }
      for (int ks = 0; ks < kKeySteps; ++ks)
        for (int e = q; e < 4; e += 2) {
          s[ks][e] = fastExp2(s[ks][e] - base);
          rowSum[q] += s[ks][e];
        }
    }
  }

  ATTNC_DEVICE void accumulateValues(int t) {
    const u16 *v = vTile((t - tileBegin) % C::kStages);
#pragma unroll
    for (int ks = 0; ks < kKeySteps; ++ks) {
      // P^T's B fragment: keys 2t, 2t + 1 (and + 8) of query g.
      u32 b0 = transposeFragment(M::pack(s[ks][0], s[ks][1]));
      u32 b1 = transposeFragment(M::pack(s[ks][2], s[ks][3]));
      int row = wn * S::kWarpCols + ks * 16 + (lane / 16) * 8 + lane % 8;
#pragma unroll
      for (int d = 0; d < kDimSteps; ++d) {
        int col = d * 16 + ((lane / 8) % 2) * 8;
        u32 a[4];
        ldmatrixX4Trans(a, sharedAddress(v + swizzle<S::kDV>(row, col)));
        M::run(o[d], a, b0, b1);
      }
    }
  }

  // --- Epilogue -------------------------------------------------------------
  /// Merges the warps' states, normalizes, and writes the output and LSE
  /// (or this split's partial state) through Base::store.
  ATTNC_DEVICE void finish() {
    auto tiles = this->drainIntoEpilogue();
    for (int q = 0; q < 2; ++q) {
      for (int offset = 4; offset < 32; offset *= 2)
        rowSum[q] += __shfl_xor_sync(0xffffffffu, rowSum[q], offset);
      if (fragmentRow() == 0)
        this->publishRow(tiles, queryColumn(q), rowMax[q], rowSum[q]);
    }
    __syncthreads();
    float *share = tiles.shares + wn * S::kBlockM * S::kDV;
    for (int q = 0; q < 2; ++q) {
      int row = queryColumn(q);
      float factor =
          this->shareFactor(tiles, row, rowMax[q], fragmentRow() == 0);
      for (int d = 0; d < kDimSteps; ++d)
        for (int half = 0; half < 2; ++half)
          share[row * S::kDV + d * 16 + fragmentRow() + 8 * half] =
              o[d][2 * half + q] * factor;
    }
    __syncthreads();
    store(tiles.shares, tiles.lses);
  }
};

} // namespace attnc

#endif // ATTNC_DEVICE_TRANSPOSED_DECODE_H
