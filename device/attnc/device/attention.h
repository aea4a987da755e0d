//===- attention.h - one CTA of tiled attention ---------------------------===//
//
// A CTA owns BlockM "rows" of one request and one KV head: row r is query
// token r / Group of query head kvHead * Group + r % Group, so the query
// heads of a GQA group share every K/V tile (decode of a group larger than 8
// packs it into the M tile; smaller groups take transposed_decode.h). WarpsM x
// WarpsN warps: warp (wm, wn) owns 16 rows and a BlockN / WarpsN slice of every
// KV tile, keeps its own online-softmax state and the warps' states are merged
// in shared memory at the end.
//
// An fp8 cache lands in the pipeline stages at one byte per element, and the
// products run in f16 (widen.h): keys widen in registers straight from their
// stage (keyFragment), values through one f16 tile into which each thread
// widens the chunks it copied.
//
// Generated kernels drive the CTA through the free functions at the bottom,
// one per attn_gpu op; transposed_decode.h's CTA takes the same ones.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_ATTENTION_H
#define ATTNC_DEVICE_ATTENTION_H

#include "attnc/device/pipelined_cta.h"

namespace attnc {

/// Query rows as the products' M side: S = Q K^T, O += P V.
template <class C> struct AttentionCta : PipelinedCta<C> {
  using Base = PipelinedCta<C>;
  using S = typename Base::S;
  using M = typename Base::M;
  using KVElem = typename Base::KVElem;
  using Base::kQueryToF16, Base::queryScale, Base::rowBegin, Base::rows,
      Base::tileBegin, Base::tileAt, Base::lane, Base::wm, Base::wn,
      Base::qTile, Base::kTile, Base::vTile, Base::kStage, Base::keyFragment,
      Base::store;
  static_assert(S::kBlockM == 16 * C::kWarpsM, "16 rows per M warp");

  float s[S::kNTiles][4];
  float o[S::kDTiles][4];
  float rowMax[2], rowSum[2], slope[2];
  u32 qFrag[C::kQInRegs ? S::kD / 16 : 1][4];

  /// Row (0 or 1) of this thread's accumulators -> row within the CTA.
  ATTNC_DEVICE int localRow(int half) const {
    return wm * 16 + (lane >> 2) + 8 * half;
  }

  /// Returns false for a CTA past the end of its request.
  ATTNC_DEVICE bool begin(const AttnParams &params, void *sharedMem) {
    if (!this->locateCta(params, sharedMem))
      return false;
    for (int half = 0; half < 2; ++half) {
      rowMax[half] = negInf();
      rowSum[half] = 0.0f;
      slope[half] = this->slopeOf(rowBegin + localRow(half));
    }
    for (int t = 0; t < S::kDTiles; ++t)
      for (int e = 0; e < 4; ++e)
        o[t][e] = 0.0f;
    return true;
  }

  /// Waits for tile `t` (Base::landTile); before the first, the query
  /// fragments a thread keeps.
  ATTNC_DEVICE void waitTile(int t) {
    this->landTile(t);
    if (t == tileBegin) {
      if constexpr (kQueryToF16)
        scaleQueryIntoF16();
      if (C::kQInRegs)
        for (int kk = 0; kk < S::kD / 16; ++kk)
          loadQueryFragment(qFrag[kk], kk);
    }
  }

  /// Brings the warp's queries (its 16 rows) into f16's range.
  ATTNC_DEVICE void scaleQueryIntoF16() {
    float largest = 0.0f;
    for (int kk = 0; kk < S::kD / 16; ++kk) {
      u32 a[4];
      loadQueryBits(a, kk);
      for (int i = 0; i < 4; ++i)
        largest = fmaxf(largest, bf16x2AbsMax(a[i]));
    }
    this->adoptF16Scale(largest);
  }

  /// The A fragment of query columns [16 kk, 16 kk + 16) as stored.
  ATTNC_DEVICE void loadQueryBits(u32 (&a)[4], int kk) {
    if constexpr (S::kKeysInRegisters) {
      // The keys' fragments hold dims 4t..4t+3 of each 16 (keyFragment):
      // the queries' k order is permuted alike, a0/a2 and a1/a3 each one
      // 8-byte load of rows g and g + 8.
      int col = kk * 16 + (lane % 4) * 4;
      for (int half = 0; half < 2; ++half) {
        int row = wm * 16 + lane / 4 + 8 * half;
        uint2 pair = *reinterpret_cast<const uint2 *>(qTile() +
                                                      swizzle<S::kD>(row, col));
        a[half] = pair.x;
        a[2 + half] = pair.y;
      }
    } else {
      int row = wm * 16 + (lane % 16);
      int col = kk * 16 + (lane / 16) * 8;
      ldmatrixX4(a, sharedAddress(qTile() + swizzle<S::kD>(row, col)));
    }
  }

  /// The A fragment of query columns [16 kk, 16 kk + 16) in the products'
  /// type.
  ATTNC_DEVICE void loadQueryFragment(u32 (&a)[4], int kk) {
    loadQueryBits(a, kk);
    if constexpr (kQueryToF16)
      for (int i = 0; i < 4; ++i)
        a[i] = bf16x2ToF16x2(a[i], queryScale);
  }

  // --- Products -------------------------------------------------------------
  ATTNC_DEVICE void scores(int t) {
    const u16 *k = kTile((t - tileBegin) % C::kStages);
    for (int nt = 0; nt < S::kNTiles; ++nt)
      for (int e = 0; e < 4; ++e)
        s[nt][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < S::kD / 16; ++kk) {
      u32 a[4];
      if (C::kQInRegs) {
        for (int i = 0; i < 4; ++i)
          a[i] = qFrag[kk][i];
      } else {
        loadQueryFragment(a, kk);
      }
      if constexpr (S::kKeysInRegisters) {
        const u8 *stage = kStage((t - tileBegin) % C::kStages);
#pragma unroll
        for (int nt = 0; nt < S::kNTiles; ++nt) {
          u32 b[2];
          keyFragment(b, stage, wn * S::kWarpCols + nt * 8 + lane / 4, kk);
          M::run(s[nt], a, b[0], b[1]);
        }
        continue;
      }
#pragma unroll
      for (int np = 0; np < S::kNTiles / 2; ++np) {
        int row = wn * S::kWarpCols + np * 16 + (lane / 16) * 8 + lane % 8;
        int col = kk * 16 + ((lane / 8) % 2) * 8;
        u32 b[4];
        ldmatrixX4(b, sharedAddress(k + swizzle<S::kD>(row, col)));
        M::run(s[2 * np], a, b[0], b[1]);
        M::run(s[2 * np + 1], a, b[2], b[3]);
      }
    }
  }

  /// Turns raw products into base-2 logits: modifiers, then the mask when
  /// the tile is partial.
  template <bool Partial> ATTNC_DEVICE void modifyScores(int t) {
    int n = tileAt(t);
#pragma unroll
    for (int nt = 0; nt < S::kNTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int row = localRow(e / 2);
        int key = n * S::kBlockN + wn * S::kWarpCols + nt * 8 + (lane % 4) * 2 +
                  (e % 2);
        s[nt][e] = this->template logit<Partial>(s[nt][e], rowBegin + row, key,
                                                 slope[e / 2]);
      }
  }

  ATTNC_DEVICE void onlineSoftmax() {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float mx = rowMax[half];
      for (int nt = 0; nt < S::kNTiles; ++nt)
        mx = maxf(mx, maxf(s[nt][2 * half], s[nt][2 * half + 1]));
      mx = maxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = maxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // A row that has seen no key keeps -inf; shift by 0 so exp2 stays 0.
      float base = mx == negInf() ? 0.0f : mx;
      float alpha = fastExp2(rowMax[half] - base);
      rowMax[half] = mx;
      rowSum[half] *= alpha;
      for (int dt = 0; dt < S::kDTiles; ++dt) {
        o[dt][2 * half] *= alpha;
        o[dt][2 * half + 1] *= alpha;
      }
      for (int nt = 0; nt < S::kNTiles; ++nt)
        for (int e = 2 * half; e < 2 * half + 2; ++e) {
          s[nt][e] = fastExp2(s[nt][e] - base);
          rowSum[half] += s[nt][e];
        }
    }
  }

  ATTNC_DEVICE void accumulateValues(int t) {
    const u16 *v = vTile((t - tileBegin) % C::kStages);
#pragma unroll
    for (int kk = 0; kk < S::kWarpCols / 16; ++kk) {
      u32 a[4] = {M::pack(s[2 * kk][0], s[2 * kk][1]),
                  M::pack(s[2 * kk][2], s[2 * kk][3]),
                  M::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                  M::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < S::kDTiles / 2; ++dp) {
        int row = wn * S::kWarpCols + kk * 16 + ((lane / 8) % 2) * 8 + lane % 8;
        int col = dp * 16 + (lane / 16) * 8;
        u32 b[4];
        ldmatrixX4Trans(b, sharedAddress(v + swizzle<S::kDV>(row, col)));
        M::run(o[2 * dp], a, b[0], b[1]);
        M::run(o[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }

  // --- Epilogue -------------------------------------------------------------
  /// Merges the warps' states, normalizes, and writes the output and LSE
  /// (or this split's partial state) through Base::store.
  ATTNC_DEVICE void finish() {
    auto tiles = this->drainIntoEpilogue();
    for (int half = 0; half < 2; ++half) {
      rowSum[half] += __shfl_xor_sync(0xffffffffu, rowSum[half], 1);
      rowSum[half] += __shfl_xor_sync(0xffffffffu, rowSum[half], 2);
      if (lane % 4 == 0)
        this->publishRow(tiles, localRow(half), rowMax[half], rowSum[half]);
    }
    __syncthreads();
    float *share = tiles.shares + wn * S::kBlockM * S::kDV;
    for (int half = 0; half < 2; ++half) {
      int row = localRow(half);
      float factor = this->shareFactor(tiles, row, rowMax[half], lane % 4 == 0);
      for (int dt = 0; dt < S::kDTiles; ++dt)
        *reinterpret_cast<float2 *>(share + row * S::kDV + dt * 8 +
                                    (lane % 4) * 2) =
            make_float2(o[dt][2 * half] * factor, o[dt][2 * half + 1] * factor);
    }
    __syncthreads();
    store(tiles.shares, tiles.lses);
  }
};

} // namespace attnc

#endif // ATTNC_DEVICE_ATTENTION_H
