//===- masked_rows.h - which keys a CTA's query rows see ------------------===//
//
// Every attention schedule gives a CTA a block of rows of one request and
// walks its keys in tiles. What a row sees is the same whichever schedule
// computes it, so it is defined here once: where the request's tokens are
// (dense, ragged or paged), the closed-form tile range of the causal and
// window masks with their sinks, which tiles need the per-element mask,
// and the logit of one (row, key) pair after every modifier.
//
// A CTA's rows are `RowsPerToken` query heads of each query token, starting
// at head `head0`: the mma.sync schedules pack a GQA group into the rows
// (RowsPerToken = group), the Hopper schedule gives a CTA one head.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_MASKED_ROWS_H
#define ATTNC_DEVICE_MASKED_ROWS_H

#include "attnc/device/captures.h"
#include "attnc/device/math.h"
#include "attnc/device/params.h"
#include "attnc/device/prelude.h"
#include "attnc/device/widen.h"

namespace attnc {

#if ATTNC_IS_DEVICE

template <class C, int BlockM, int BlockN, int RowsPerToken> struct MaskedRows {
  static constexpr bool kWindowLeft = C::kHasWindowLeft;
  static constexpr bool kWindowRight = C::kHasWindowRight;
  static_assert(C::kLowerBound == kWindowLeft &&
                    C::kUpperBound == (C::kCausal || kWindowRight),
                "the analyzed bounds are the declarative masks'");
  static_assert(!C::kHasSinks || kWindowLeft, "sinks come with a window");
  static constexpr bool kMods = C::kHasSoftcap || C::kAlibi || C::kScoreMod;
  static constexpr bool kAlwaysPartial =
      C::kPartialTiles == PartialTiles::Always;

  const AttnParams *p;
  int batch, head0, split, rowBegin, rows;
  int qLen, kvLen, qToken0, kvToken0, pageBegin;
  int firstPos, lastPos; // positions of the CTA's first and last query
  // An fp8 cache's dequantization scales for the CTA's KV head (the key
  // scale times the power of two of its f16 queries).
  float kScale = 1.0f, vScale = 1.0f;
  int sinkTiles, mainBegin, mainEnd, tileBegin, tileEnd;
  int requestSplits; // the splits with tiles of this request (at least 1)

  // The variant's numbers, read where the launch put them (params.h); a
  // kernel whose config compiles its scale and soft-cap in
  // (kCompiledScale) uses its constants instead.
  static constexpr bool kCompiledScores = C::kCompiledScale > 0.0f;
  ATTNC_DEVICE i64 windowLeft() const { return p->values.window_left; }
  ATTNC_DEVICE i64 windowRight() const { return p->values.window_right; }
  ATTNC_DEVICE i64 sinks() const { return p->values.sinks; }
  ATTNC_DEVICE float scale() const {
    return kCompiledScores ? C::kCompiledScale : p->values.scale;
  }
  ATTNC_DEVICE float softcap() const {
    return kCompiledScores ? C::kCompiledSoftcap : p->values.softcap;
  }
  ATTNC_DEVICE float softcapInverse() const {
    return kCompiledScores ? 1.0f / C::kCompiledSoftcap : fastRcp(softcap());
  }
  ATTNC_DEVICE float scaleLog2() const {
    return kCompiledScores ? C::kCompiledScale * kLog2E : p->values.scale_log2;
  }
  ATTNC_DEVICE float softcapLog2() const {
    return kCompiledScores ? C::kCompiledSoftcap * kLog2E
                           : p->values.softcap_log2;
  }
  ATTNC_DEVICE float tanhScale() const {
    return kCompiledScores ? C::kCompiledScale / C::kCompiledSoftcap
                           : p->values.tanh_scale;
  }

  ATTNC_DEVICE int queryOf(int row) const { return row / RowsPerToken; }
  ATTNC_DEVICE int headOf(int row) const { return head0 + row % RowsPerToken; }
  /// `key`, or the request's last key for one past its end: a tile's rows
  /// there are masked, and what a copy reads for them must be finite (a
  /// masked probability is 0, and 0 x NaN is not), with no predicate on it.
  ATTNC_DEVICE int lastKeyFrom(int key) const {
    return key < kvLen ? key : kvLen - 1;
  }

  /// Reads the request's lengths and plans the CTA's tiles; false for a
  /// CTA past the end of its request.
  ATTNC_DEVICE bool locate(const AttnParams &params, int batchIndex,
                           int firstHead, int splitIndex, int firstRow) {
    p = &params;
    batch = batchIndex;
    head0 = firstHead;
    split = splitIndex;
    rowBegin = firstRow;
    if (C::kQLayout == TokenLayout::Ragged) {
      qToken0 = params.q_indptr[batch];
      qLen = params.q_indptr[batch + 1] - qToken0;
    } else {
      qToken0 = batch * params.q_len;
      qLen = params.q_len;
    }
    rows = qLen * RowsPerToken - rowBegin;
    if (rows <= 0)
      return false;
    if (rows > BlockM)
      rows = BlockM;
    pageBegin = 0;
    kvToken0 = 0;
    if (C::kKVLayout == TokenLayout::Paged) {
      pageBegin = params.kv_indptr[batch];
      int pages = params.kv_indptr[batch + 1] - pageBegin;
      kvLen = pages > 0
                  ? (pages - 1) * C::kPageSize + params.last_page_len[batch]
                  : 0;
    } else if (C::kKVLayout == TokenLayout::Ragged) {
      kvToken0 = params.kv_indptr[batch];
      kvLen = params.kv_indptr[batch + 1] - kvToken0;
    } else {
      kvToken0 = batch * params.kv_len;
      kvLen = params.kv_len;
    }
    if (C::kKVScales) {
      int kvHead = firstHead / C::kGroup;
      kScale = params.k_scale[C::kKScalePerHead ? kvHead : 0];
      vScale = params.v_scale[C::kVScalePerHead ? kvHead : 0];
    }
    firstPos = queryOf(rowBegin) + kvLen - qLen;
    lastPos = queryOf(rowBegin + rows - 1) + kvLen - qLen;
    planTiles();
    return true;
  }

  // --- Tile schedule --------------------------------------------------------
  // Visible tiles are the sink tiles [0, sinkTiles) then the main range
  // [mainBegin, mainEnd) (closed-form bounds of the causal / window masks);
  // the split owns [tileBegin, tileEnd) of that sequence.
  ATTNC_DEVICE int numVisibleTiles() const {
    return sinkTiles + (mainEnd - mainBegin);
  }
  ATTNC_DEVICE int tileAt(int t) const {
    return t < sinkTiles ? t : mainBegin + (t - sinkTiles);
  }

  ATTNC_DEVICE void planTiles() {
    // Window extents may be as large as any position: compare in i64.
    int lo = 0, hi = kvLen;
    if (C::kUpperBound) {
      if (C::kCausal)
        hi = lastPos + 1 < hi ? lastPos + 1 : hi;
      if (kWindowRight && lastPos + windowRight() + 1 < hi)
        hi = int(lastPos + windowRight() + 1);
    }
    if (C::kLowerBound && firstPos - windowLeft() > lo)
      lo = int(firstPos - windowLeft());
    if (hi < 0)
      hi = 0;
    mainBegin = lo / BlockN;
    mainEnd = (hi + BlockN - 1) / BlockN;
    if (mainEnd < mainBegin)
      mainEnd = mainBegin;
    sinkTiles = 0;
    if (C::kLowerBound && C::kHasSinks) {
      int sinkKeys = sinks() < hi ? int(sinks()) : hi;
      sinkTiles = (sinkKeys + BlockN - 1) / BlockN;
      if (sinkTiles >= mainBegin) { // the ranges touch: one range
        mainBegin = 0;
        sinkTiles = 0;
      }
    }
    int total = numVisibleTiles();
    // Even shares cover every tile, however long the request: the launch
    // has no CTAs for more than num_splits splits.
    int perSplit = (total + p->num_splits - 1) / p->num_splits;
    if (p->split_tiles > perSplit)
      perSplit = p->split_tiles;
    requestSplits =
        total > 0 && perSplit > 0 ? (total + perSplit - 1) / perSplit : 1;
    tileBegin = split * perSplit < total ? split * perSplit : total;
    tileEnd = tileBegin + perSplit < total ? tileBegin + perSplit : total;
  }

  /// The CTA's visited tiles, [tilesBegin(), tilesEnd()) in visiting order
  /// (attn_gpu.tiles_begin and tiles_end).
  ATTNC_DEVICE int tilesBegin() const { return tileBegin; }
  ATTNC_DEVICE int tilesEnd() const { return tileEnd; }
  /// Whether the `t`-th visited tile needs the per-element mask
  /// (attn_gpu.tile_is_partial).
  ATTNC_DEVICE bool visitsPartialTile(int t) const {
    return tileIsPartial(tileAt(t));
  }

  /// Whether tile `n` needs the per-element mask (some key is hidden from
  /// some row): the closed-form test of the analyzed masks.
  ATTNC_DEVICE bool tileIsPartial(int n) const {
    if (kAlwaysPartial)
      return true;
    int k0 = n * BlockN, k1 = k0 + BlockN - 1;
    if (k1 >= kvLen)
      return true;
    if (C::kCausal && k1 > firstPos)
      return true;
    if (kWindowRight && k1 > firstPos + windowRight())
      return true;
    if (kWindowLeft && k0 < lastPos - windowLeft() &&
        !(C::kHasSinks && k1 < sinks()))
      return true;
    return false;
  }

  /// The keys a row sees under the declarative masks, as offsets from key
  /// `from`: [lo, hi] (the request's keys, causal and window), and below lo
  /// the sinks before sinkEnd. A row past the CTA's rows sees none. Offsets
  /// from a thread's first column let a tile compare its registers'
  /// constant columns against two or three values per row, instead of
  /// building each score's row and key from its position.
  ///
  /// The tests combine without short circuits: with them, NVVM branched
  /// around each score's second and third compare.
  struct SeenKeys {
    int lo, hi, sinkEnd;
    ATTNC_DEVICE bool has(int key) const {
      bool seen = key <= hi;
      if constexpr (kWindowLeft)
        seen &= (key >= lo) | (C::kHasSinks && key < sinkEnd);
      return seen;
    }
  };
  ATTNC_DEVICE SeenKeys seenKeys(int row, int from = 0) const {
    int pos = queryOf(row) + kvLen - qLen;
    // Window extents may be as large as any position: compare in i64.
    int hi = kvLen - 1;
    if (C::kCausal && pos < hi)
      hi = pos;
    if (kWindowRight && pos + windowRight() < hi)
      hi = int(pos + windowRight());
    if (row - rowBegin >= rows)
      hi = -1;
    int lo =
        kWindowLeft && pos - windowLeft() > 0 ? int(pos - windowLeft()) : 0;
    int sinkEnd = !C::kHasSinks ? 0 : sinks() < kvLen ? int(sinks()) : kvLen;
    return {lo - from, hi - from, sinkEnd - from};
  }

  /// Whether the variant's mask_mod shows `key` to `row` (true without one).
  ATTNC_DEVICE bool maskModShows(int row, int key) const {
    return !C::kMaskMod ||
           C::maskMod(batch, headOf(row), queryOf(row), key, qLen, kvLen, *p);
  }

  /// Whether `row` (of the CTA's block) sees `key`. A schedule that
  /// compares document segments itself, from ids it keeps in registers,
  /// passes Segments = false.
  template <bool Segments = C::kSegments>
  ATTNC_DEVICE bool visible(int row, int key) const {
    if (!seenKeys(row).has(key))
      return false;
    if (Segments &&
        p->q_segments[qToken0 + queryOf(row)] != p->kv_segments[kvToken0 + key])
      return false;
    return maskModShows(row, key);
  }

  /// The ALiBi slope of `row`'s head (0 without ALiBi).
  ATTNC_DEVICE float slopeOf(int row) const {
    return C::kAlibi ? alibiSlope(headOf(row), C::kNumQHeads) : 0.0f;
  }

  /// `x` where `row` sees `key`, -inf where it does not; only partial tiles
  /// ask.
  template <bool Partial, bool Segments = C::kSegments>
  ATTNC_DEVICE float masked(float x, int row, int key) const {
    return Partial && !visible<Segments>(row, key) ? negInf() : x;
  }

  /// The factor of the raw products: an fp8 cache's key scale, times the
  /// power of two its products' f16 queries carry (widen.h).
  static constexpr bool kKeyScale = C::kKVScales || kNarrow<typename C::KVElem>;
  ATTNC_DEVICE float keyScale() const { return kKeyScale ? kScale : 1.0f; }
  /// The factor of the normalized output: an fp8 cache's value scale.
  ATTNC_DEVICE float valueScale() const { return C::kKVScales ? vScale : 1.0f; }

  /// The base-2 logit of a raw product Q.K for (`row`, `key`): scale,
  /// soft-cap, ALiBi and score_mod, then, on a partial tile, the mask.
  template <bool Partial, bool Segments = C::kSegments>
  ATTNC_DEVICE float logit(float raw, int row, int key, float slope) const {
    float x = raw * keyScale();
    if (kMods) {
      x *= scale();
      if (C::kHasSoftcap)
        x = softcap() * fastTanh(x * softcapInverse());
      int query = queryOf(row);
      if (C::kAlibi)
        x += slope * float(key - (query + kvLen - qLen));
      if (C::kScoreMod)
        x = C::scoreMod(x, batch, headOf(row), query, key, qLen, kvLen, *p);
      x *= kLog2E;
    } else {
      x *= scaleLog2();
    }
    return masked<Partial, Segments>(x, row, key);
  }
};

#endif // ATTNC_IS_DEVICE

} // namespace attnc

#endif // ATTNC_DEVICE_MASKED_ROWS_H
