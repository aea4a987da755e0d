//===- pipelined_cta.h - what both mma.sync CTAs share --------------------===//
//
// The mma.sync schedules (attention.h: query rows as the products' rows;
// transposed_decode.h: keys as the rows) share how a CTA gets its tiles and
// how it leaves its state: the query tile, the K/V pipeline of cp.async
// stages (an fp8 cache landing at one byte per element, values widened into
// one f16 tile), and the epilogue's store of the warps' summed shares with
// the fused split-KV merge.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_PIPELINED_CTA_H
#define ATTNC_DEVICE_PIPELINED_CTA_H

#include "attnc/device/copy.h"
#include "attnc/device/masked_rows.h"
#include "attnc/device/math.h"
#include "attnc/device/mma.h"
#include "attnc/device/params.h"
#include "attnc/device/prelude.h"
#include "attnc/device/shared_storage.h"
#include "attnc/device/split_merge.h"
#include "attnc/device/widen.h"

namespace attnc {

/// What the kernel derives at compile time from the generated configuration
/// `C`, which carries every decision the compiler made (tiles, stages, mask
/// classification, shared-memory size).
template <class C> struct Shape {
  static constexpr int kD = C::kHeadDimQK;
  static constexpr int kDV = C::kHeadDimV;
  static constexpr int kBlockM = C::kBlockM;
  static constexpr int kBlockN = C::kBlockN;
  static constexpr int kWarps = C::kWarpsM * C::kWarpsN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kWarpCols = kBlockN / C::kWarpsN;
  static constexpr int kNTiles = kWarpCols / 8;
  static constexpr int kDTiles = kDV / 8;
  static constexpr int kQElems = kBlockM * kD;
  static constexpr int kKElems = kBlockN * kD;
  static constexpr int kVElems = kBlockN * kDV;
  /// Bytes of a K/V element in the cache, and whether it is widened.
  static constexpr int kKVBytes = sizeof(typename C::KVElem);
  static constexpr bool kWiden = kNarrow<typename C::KVElem>;
  /// fp8 keys widened in registers from their stage (no 16-bit K tile).
  static constexpr bool kKeysInRegisters =
      kWiden && limits::fp8KeysInRegisters(kD);
  /// The query tile, the K/V stages and the widened tiles during the loop,
  /// the warps' shares and row statistics in the epilogue (shared_storage.h).
  static constexpr PipelinedStorage storage() {
    return pipelinedStorage(kBlockM, kBlockN, kD, kDV, kKVBytes, C::kStages,
                            C::kWarpsN);
  }
  static_assert(storage().bytes == C::kSmemBytes,
                "the config's size is the planner's, from the same layout");
  static_assert(kWarpCols % 16 == 0, "each warp needs 16-key steps");
  static_assert(kD % limits::kKernelHeadDimStep == 0 &&
                    kDV % limits::kKernelHeadDimStep == 0 &&
                    kD <= limits::kMaxKernelHeadDim &&
                    kDV <= limits::kMaxKernelHeadDim,
                "head dims the products step over (attn-plan refuses others)");
};

/// The query tile, the K/V pipeline and the epilogue's store of one
/// mma.sync CTA; the products and their fragments are the derived CTA's.
template <class C>
struct PipelinedCta
    : MaskedRows<C, Shape<C>::kBlockM, Shape<C>::kBlockN, C::kGroup> {
  using S = Shape<C>;
  using Rows = MaskedRows<C, S::kBlockM, S::kBlockN, C::kGroup>;
  using Elem = typename C::Elem;
  using KVElem = typename C::KVElem;
  /// The products' operand type (f16 over an fp8 cache).
  using ProductElem = typename ProductType<Elem, KVElem>::type;
  using M = Mma<ProductElem>;
  /// bf16 queries meeting an fp8 cache are scaled into f16 per warp.
  static constexpr bool kQueryToF16 = !kSame<Elem, ProductElem>;
  float queryScale = 1.0f; // the power of two the query fragments carry
  using Rows::batch, Rows::rowBegin, Rows::rows, Rows::qLen, Rows::kvLen,
      Rows::qToken0, Rows::kvToken0, Rows::pageBegin, Rows::tileBegin,
      Rows::tileEnd, Rows::p, Rows::split, Rows::queryOf, Rows::headOf,
      Rows::tileAt;

  u8 *smem;
  int kvHead;
  int warp, lane, wm, wn;

  /// Decode CTAs (a row of warps, each taking its own slice of every KV
  /// tile) copy, widen and read K/V slice by slice: each warp copies the
  /// rows it alone reads, so the K/V loop synchronizes warps, not the CTA,
  /// and a warp that waits on memory holds no other warp back.
  static constexpr bool kWarpSlices = C::kWarpsM == 1 && C::kWarpsN > 1;
  /// Threads that copy a K/V slice, and its rows: a warp's keys, or the
  /// CTA's whole tile.
  static constexpr int kCopyThreads = kWarpSlices ? 32 : S::kThreads;
  static constexpr int kCopyRows = kWarpSlices ? S::kWarpCols : S::kBlockN;
  ATTNC_DEVICE int copyThread() const {
    return kWarpSlices ? lane : int(threadIdx.x);
  }
  ATTNC_DEVICE int copyRow0() const { return kWarpSlices ? wn * kCopyRows : 0; }
  ATTNC_DEVICE void syncCopies() {
    if (kWarpSlices)
      __syncwarp();
    else
      __syncthreads();
  }

  /// The rows a thread copies of its K/V slice when every copying thread
  /// keeps one 16-byte chunk column of rows of `Dim` elements.
  template <int Dim> struct CopyRows {
    static constexpr int kChunks = Dim * S::kKVBytes / 16;
    static constexpr bool kOneColumn = kCopyThreads % kChunks == 0;
    static constexpr int kStep = kOneColumn ? kCopyThreads / kChunks : 1;
    static constexpr int kCount = (kCopyRows + kStep - 1) / kStep;
  };
  /// Paged K and V rows are found through the page table, a global load
  /// each. A thread reads the pages of its rows of the next tile while this
  /// one's copies are issued, so that no copy waits for its page index
  /// (pages of 1 slot: 0.77x of contiguous speed when each did). More than
  /// 8 rows per thread (16 at head dim 256) leave no registers for their
  /// pages beside the output accumulators (spills).
  ///
  /// Where pages hold a multiple of a copy slice's rows (a decode warp's 16
  /// keys, a prefill CTA's tile; slices start at multiples of their rows),
  /// the whole slice lies in one page: one page id per thread and tile, and
  /// the thread's rows at constant strides from its first, instead of a
  /// 64-bit page offset per row (a third of an fp8 tile's instructions).
  static constexpr bool kSliceInOnePage =
      C::kKVLayout == TokenLayout::Paged && C::kPageSize % kCopyRows == 0;
  static constexpr bool kPagesAhead =
      C::kKVLayout == TokenLayout::Paged && S::kD == S::kDV &&
      CopyRows<S::kD>::kOneColumn &&
      (kSliceInOnePage || CopyRows<S::kD>::kCount <= 8);
  static constexpr int kPageIds =
      kPagesAhead && !kSliceInOnePage ? CopyRows<S::kD>::kCount : 1;
  int pagesTile = -1; // the visible tile whose pages `pages` holds
  int pages[kPageIds];
  static constexpr int kPageSlots = C::kPageSize > 0 ? C::kPageSize : 1;

  ATTNC_DEVICE u16 *qTile() { return reinterpret_cast<u16 *>(smem); }
  /// Pipeline stage `stage` of K and V as the cache stores them.
  ATTNC_DEVICE u8 *kStage(int stage) {
    return smem + 2 * S::kQElems + stage * S::kKElems * S::kKVBytes;
  }
  ATTNC_DEVICE u8 *vStage(int stage) {
    return kStage(C::kStages) + stage * S::kVElems * S::kKVBytes;
  }
  /// The 16-bit K and V tiles the products read: the stage itself, or the
  /// one tile an fp8 stage is widened into.
  ATTNC_DEVICE u16 *kTile(int stage) {
    return reinterpret_cast<u16 *>(S::kWiden ? vStage(C::kStages)
                                             : kStage(stage));
  }
  ATTNC_DEVICE u16 *vTile(int stage) {
    return reinterpret_cast<u16 *>(
        S::kWiden
            ? vStage(C::kStages) + (S::kKeysInRegisters ? 0 : 2 * S::kKElems)
            : vStage(stage));
  }
  /// Byte offset of 16-byte chunk `chunk` of row `row` in a stage of rows
  /// of `Dim` elements: swizzled for the products' ldmatrix and for the
  /// fragment loads of fp8 keys (rows of an even number of chunks), plain
  /// where only the copying thread reads it back to widen it.
  template <int Dim> ATTNC_DEVICE static int stageOffset(int row, int chunk) {
    if constexpr (!S::kWiden)
      return 2 * swizzle<Dim>(row, chunk * 8);
    else if constexpr (limits::fp8KeysInRegisters(Dim))
      return 2 * swizzle<Dim / 2>(row, chunk * 8);
    else
      return row * Dim + chunk * 16;
  }

  // --- Setup ----------------------------------------------------------------
  /// Finds the CTA's rows and tiles; false for a CTA past the end of its
  /// request or a split past its last.
  ATTNC_DEVICE bool locateCta(const AttnParams &params, void *sharedMem) {
    smem = static_cast<u8 *>(sharedMem);
    kvHead = blockIdx.y / params.num_splits;
    warp = threadIdx.x / 32;
    lane = threadIdx.x % 32;
    wm = warp / C::kWarpsN;
    wn = warp % C::kWarpsN;
    if (!this->locate(params, blockIdx.z, kvHead * C::kGroup,
                      blockIdx.y % params.num_splits, blockIdx.x * S::kBlockM))
      return false;
    // A split past the request's last holds no keys; a kernel that merges
    // its own splits neither stores nor counts it.
    return !(C::kMergeSplits && split >= this->requestSplits);
  }

  // --- Loads ----------------------------------------------------------------
  ATTNC_DEVICE void loadQuery() {
    constexpr int chunks = S::kD / 8;
    const Elem *q = static_cast<const Elem *>(p->q);
    for (int idx = threadIdx.x; idx < S::kBlockM * chunks; idx += S::kThreads) {
      int row = idx / chunks, chunk = idx % chunks;
      bool valid = row < rows;
      int r = rowBegin + (valid ? row : 0);
      const Elem *src =
          q + (i64(qToken0 + queryOf(r)) * C::kNumQHeads + headOf(r)) * S::kD +
          chunk * 8;
      cpAsync16(sharedAddress(qTile() + swizzle<S::kD>(row, chunk * 8)), src,
                valid);
    }
  }

  /// First element of key/value row `key` of this CTA's KV head.
  template <int Dim>
  ATTNC_DEVICE const KVElem *kvRow(const void *base, i64 pageStride,
                                   int key) const {
    if (C::kKVLayout == TokenLayout::Paged)
      return pagedRow<Dim>(base, pageStride,
                           p->page_indices[pageBegin + key / kPageSlots], key);
    return static_cast<const KVElem *>(base) +
           (i64(kvToken0 + key) * C::kNumKVHeads + kvHead) * Dim;
  }

  /// First element of key/value row `key`, which lies in page `page`.
  template <int Dim>
  ATTNC_DEVICE const KVElem *pagedRow(const void *base, i64 pageStride,
                                      int page, int key) const {
    return static_cast<const KVElem *>(base) + i64(page) * pageStride +
           pagedSlotOffset(C::kPageOrder, kvHead, key % kPageSlots, kPageSlots,
                           C::kNumKVHeads, Dim);
  }

  /// Reads into `pages` the pages of the rows this thread copies of
  /// visible tile `t` (a key past the request reads the first page, as the
  /// zero-filled copy of that row does), or its slice's one page.
  ATTNC_DEVICE void readPages(int t) {
    using Rows = CopyRows<S::kD>;
    int n = tileAt(t);
#pragma unroll
    for (int i = 0; i < kPageIds; ++i) {
      int key = n * S::kBlockN + copyRow0() +
                (kSliceInOnePage ? 0 : copyThread() / Rows::kChunks) +
                i * Rows::kStep;
      pages[i] =
          p->page_indices[pageBegin + (key < kvLen ? key : 0) / kPageSlots];
    }
  }

  /// Copies this thread's column of tile `t` with the pages `readPages`
  /// found.
  template <int Dim>
  ATTNC_DEVICE void loadPagedColumn(u8 *tile, const void *base, i64 pageStride,
                                    int t) {
    using Rows = CopyRows<Dim>;
    int chunk = copyThread() % Rows::kChunks;
    int n = tileAt(t);
    // The slice's first row, when one page holds the whole slice: computed
    // once, not per row (ptxas does not hoist the 64-bit page offset).
    const KVElem *sliceRow0 = nullptr;
    if constexpr (kSliceInOnePage)
      sliceRow0 = pagedRow<Dim>(base, pageStride, pages[0],
                                n * S::kBlockN + copyRow0());
#pragma unroll
    for (int i = 0; i < Rows::kCount; ++i) {
      int slot = copyThread() / Rows::kChunks + i * Rows::kStep;
      if (slot >= kCopyRows)
        break;
      int row = copyRow0() + slot;
      int key = n * S::kBlockN + row;
      bool valid = key < kvLen;
      const KVElem *src;
      if constexpr (kSliceInOnePage) {
        // Slot `slot` of the slice's page, which holds every row of the
        // slice (also those past the request: their copies read nothing).
        constexpr i64 slotStride =
            C::kPageOrder == PageOrder::HND ? Dim : i64(C::kNumKVHeads) * Dim;
        src = sliceRow0 + slot * slotStride;
      } else {
        src = pagedRow<Dim>(base, pageStride, pages[i], valid ? key : 0);
      }
      cpAsync16(sharedAddress(tile + stageOffset<Dim>(row, chunk)),
                src + chunk * kChunkElems, valid);
    }
  }

  /// Elements of a K/V row in one 16-byte chunk.
  static constexpr int kChunkElems = 16 / S::kKVBytes;

  template <int Dim>
  ATTNC_DEVICE void loadKVChunk(u8 *tile, const void *base, i64 pageStride,
                                int n, int row, int chunk) {
    int key = n * S::kBlockN + row;
    bool valid = key < kvLen;
    const KVElem *src = kvRow<Dim>(base, pageStride, valid ? key : 0);
    cpAsync16(sharedAddress(tile + stageOffset<Dim>(row, chunk)),
              src + chunk * kChunkElems, valid);
  }

  /// Calls `f(row, chunk)` for each 16-byte chunk of a K/V tile of rows of
  /// `Dim` elements that this thread copies (and, for an fp8 cache, widens).
  template <int Dim, typename F> ATTNC_DEVICE void forEachChunk(F f) const {
    using Rows = CopyRows<Dim>;
    constexpr int chunks = Rows::kChunks;
    int row0 = copyRow0(), thread = copyThread();
    if constexpr (Rows::kOneColumn) {
      // Every thread keeps one chunk column and steps over whole rows.
      int chunk = thread % chunks;
      for (int row = thread / chunks; row < kCopyRows; row += Rows::kStep)
        f(row0 + row, chunk);
    } else {
      // Rows of 10, 12, 14, ... chunks do not divide the copying threads:
      // walk the slice's chunks in order, so a pass ends within a row.
      for (int idx = thread; idx < kCopyRows * chunks; idx += kCopyThreads)
        f(row0 + idx / chunks, idx % chunks);
    }
  }

  template <int Dim>
  ATTNC_DEVICE void loadKVTile(u8 *tile, const void *base, i64 pageStride,
                               int n) {
    forEachChunk<Dim>([&](int row, int chunk) {
      loadKVChunk<Dim>(tile, base, pageStride, n, row, chunk);
    });
  }

  /// Widens the fp8 chunks this thread copied of a stage into the 16-bit
  /// tile. Chunk c of a row becomes 16-bit chunks 2c and 2c + 1, stored in
  /// an order that keeps each quarter-warp's stores on distinct banks.
  template <int Dim> ATTNC_DEVICE void widenTile(const u8 *stage, u16 *tile) {
    forEachChunk<Dim>([&](int row, int chunk) {
      uint4 in =
          loadShared16(sharedAddress(stage) + stageOffset<Dim>(row, chunk));
      uint4 out[2];
      widenChunk<KVElem>(in, out);
      // The halves' addresses are swapped, not their values (registers).
      int odd = (chunk >> 2) & 1;
      u32 lo = sharedAddress(tile + swizzle<Dim>(row, (2 * chunk + odd) * 8));
      u32 hi =
          sharedAddress(tile + swizzle<Dim>(row, (2 * chunk + 1 - odd) * 8));
      storeShared16(odd ? hi : lo, out[0]);
      storeShared16(odd ? lo : hi, out[1]);
    });
  }

  /// Issues the loads of visible tile number `t` (if it exists) into its
  /// pipeline stage and commits them as one group.
  ATTNC_DEVICE void prefetch(int t) {
    if (t < tileEnd) {
      int stage = (t - tileBegin) % C::kStages;
      if constexpr (kPagesAhead) {
        if (pagesTile != t)
          readPages(t);
        loadPagedColumn<S::kD>(kStage(stage), p->k, p->k_page_stride, t);
        loadPagedColumn<S::kDV>(vStage(stage), p->v, p->v_page_stride, t);
        if (t + 1 < tileEnd)
          readPages(t + 1);
        pagesTile = t + 1;
      } else {
        int n = tileAt(t);
        loadKVTile<S::kD>(kStage(stage), p->k, p->k_page_stride, n);
        loadKVTile<S::kDV>(vStage(stage), p->v, p->v_page_stride, n);
      }
    }
    cpAsyncCommit();
  }

  /// Waits until tile `t` has landed and every thread that reads this
  /// thread's slice is done with the stage the next prefetch overwrites
  /// (and, for an fp8 cache, with the 16-bit tiles, which it then widens
  /// tile `t` into: a thread reads back only the chunks it copied, so they
  /// need no barrier before).
  ATTNC_DEVICE void landTile(int t) {
    cpAsyncWait<C::kStages - 2>();
    // The first tile waits for the whole CTA: the query tile is shared.
    if (t == tileBegin)
      __syncthreads();
    else
      syncCopies();
    if constexpr (S::kWiden) {
      int stage = (t - tileBegin) % C::kStages;
      if constexpr (!S::kKeysInRegisters)
        widenTile<S::kD>(kStage(stage), kTile(stage));
      widenTile<S::kDV>(vStage(stage), vTile(stage));
      syncCopies();
    }
  }

  /// Takes the power of two that brings queries whose largest magnitude in
  /// this thread is `largest` (the warp's rows) into f16's range, and folds
  /// its inverse into the score scale.
  ATTNC_DEVICE void adoptF16Scale(float largest) {
    int e = warpF16RangeExponent(largest);
    queryScale = powerOfTwo(-e);
    this->kScale *= powerOfTwo(e);
  }

  /// The B fragment of key `key`, dims [16 kk, 16 kk + 16), widened from
  /// its fp8 stage: lane t of the key's quad takes dims 4t..4t+3 as its
  /// k pairs (2t, 2t+1) and (2t+8, 2t+9), the queries' order
  /// (loadQueryBits), one 4-byte load and two cvt.
  ATTNC_DEVICE void keyFragment(u32 (&b)[2], const u8 *stage, int key, int kk) {
    u32 bytes = *reinterpret_cast<const u32 *>(
        stage + stageOffset<S::kD>(key, kk) + (lane % 4) * 4);
    f8x4ToF16<KVElem>(bytes, b);
  }

  // --- Epilogue -------------------------------------------------------------
  // Warps that split the keys each leave their normalized share of the
  // output in a tile of their own, summed as it is stored (store): float
  // atomics on shared memory are compare-and-swap loops, and four warps
  // contending for one tile cost a decode CTA tens of microseconds.

  /// The epilogue's view of shared memory (the pipeline's, once it drained):
  /// each warp column's f32 share [WarpsN][BlockM][DV], then its row maxima
  /// and row sums [WarpsN][BlockM], then the rows' LSEs.
  struct EpilogueTiles {
    float *shares, *maxes, *sums, *lses;
  };
  ATTNC_DEVICE EpilogueTiles drainIntoEpilogue() {
    cpAsyncWait<0>();
    __syncthreads();
    float *shares = reinterpret_cast<float *>(smem);
    float *maxes = shares + C::kWarpsN * S::kBlockM * S::kDV;
    float *sums = maxes + C::kWarpsN * S::kBlockM;
    return {shares, maxes, sums, sums + C::kWarpsN * S::kBlockM};
  }
  /// Publishes this warp column's maximum and sum of local row `row`.
  ATTNC_DEVICE void publishRow(const EpilogueTiles &tiles, int row, float max,
                               float sum) {
    tiles.maxes[wn * S::kBlockM + row] = max;
    tiles.sums[wn * S::kBlockM + row] = sum;
  }
  /// After every warp published: the factor that normalizes this warp's
  /// share of local row `row` (whose maximum here is `max`), and the row's
  /// LSE, written by `lseWriter`.
  ATTNC_DEVICE float shareFactor(const EpilogueTiles &tiles, int row, float max,
                                 bool lseWriter) {
    float total = negInf();
    for (int w = 0; w < C::kWarpsN; ++w)
      total = maxf(total, tiles.maxes[w * S::kBlockM + row]);
    float base = total == negInf() ? 0.0f : total;
    float sum = 0.0f;
    for (int w = 0; w < C::kWarpsN; ++w)
      sum += tiles.sums[w * S::kBlockM + row] *
             fastExp2(tiles.maxes[w * S::kBlockM + row] - base);
    if (lseWriter && wn == 0)
      tiles.lses[row] = sum > 0.0f ? (base + fastLog2(sum)) * kLn2 : negInf();
    return sum > 0.0f ? fastExp2(max - base) / sum * this->valueScale() : 0.0f;
  }

  /// Whether the CTA stores a partial state: one of several splits of its
  /// request (all of them for a separate merge kernel, which reads every
  /// split of every request). Never under a plan of one split.
  ATTNC_DEVICE bool storesPartial() const {
    if constexpr (C::kKVSplits == 1)
      return false;
    return C::kMergeSplits ? this->requestSplits > 1 : p->num_splits > 1;
  }
  ATTNC_DEVICE i64 outRowOf(int row) const {
    int r = rowBegin + row;
    return i64(qToken0 + queryOf(r)) * C::kNumQHeads + headOf(r);
  }

  /// Writes rows of the sum of the warps' shares.
  ATTNC_DEVICE void store(const float *shares, const float *lses) {
    bool partial = storesPartial();
    constexpr int chunks = S::kDV / 8;
    for (int idx = threadIdx.x; idx < rows * chunks; idx += S::kThreads) {
      int row = idx / chunks, chunk = idx % chunks;
      i64 outRow = outRowOf(row);
      float sum[8];
      for (int e = 0; e < 8; ++e)
        sum[e] = 0.0f;
      for (int w = 0; w < C::kWarpsN; ++w)
        for (int e = 0; e < 8; ++e)
          sum[e] += shares[(w * S::kBlockM + row) * S::kDV + chunk * 8 + e];
      if (partial) {
        storeChunk(p->partial_out +
                       (split * p->partial_split_stride + outRow) * S::kDV +
                       chunk * 8,
                   sum);
      } else {
        storeChunk(static_cast<typename C::Out *>(p->out) + outRow * S::kDV +
                       chunk * 8,
                   sum);
      }
    }
    for (int row = threadIdx.x; row < rows; row += S::kThreads) {
      i64 outRow = outRowOf(row);
      if (partial)
        p->partial_lse[split * p->partial_split_stride + outRow] = lses[row];
      else if (C::kHasLse)
        p->lse[outRow] = lses[row];
    }
  }

  // The merge runs after the grid's last split, so each serial L2 round
  // trip in it lengthens the launch. A warp's lanes copy their 16 bytes of
  // every split of a batch into shared memory (free once the pipeline
  // drained) before they sum any: the first batch's copies are in flight
  // while the LSEs load, and no registers are held for them.
  /// A lane's share of a pass over a row: 4 floats, 16 bytes.
  static constexpr int kMergeLaneFloats = 4;
  static constexpr int kMergePassFloats = 32 * kMergeLaneFloats;
  static constexpr int kMergePasses =
      (S::kDV + kMergePassFloats - 1) / kMergePassFloats;
  static constexpr int kMergeSplitBytes = 4 * kMergePassFloats * kMergePasses;
  /// The `last` flag's 16 bytes, then each warp's [split][pass][lane] slots.
  static constexpr int kMergeFlagBytes = 16;
  static constexpr int kMergeBatchFit =
      (C::kSmemBytes - kMergeFlagBytes) / (S::kWarps * kMergeSplitBytes);
  static constexpr int kMergeBatch = kMergeBatchFit < limits::kMaxKVSplits
                                         ? int(kMergeBatchFit)
                                         : int(limits::kMaxKVSplits);
  static_assert(kMergeBatch >= 1, "a split's slots fit shared memory");
  ATTNC_DEVICE u8 *mergeSlot(int split, int pass) {
    return smem + kMergeFlagBytes +
           ((warp * kMergeBatch + split) * kMergePasses + pass) *
               (4 * kMergePassFloats) +
           lane * (4 * kMergeLaneFloats);
  }
  /// This lane's first column of pass `pass` over a row (past the row's
  /// end for some lanes of a last, partial pass).
  ATTNC_DEVICE int mergeColumn(int pass) const {
    return pass * kMergePassFloats + lane * kMergeLaneFloats;
  }
  /// Copies this lane's slices of splits [first, first + batch) of output
  /// row `outRow` into its slots. A split whose keys the row does not see
  /// is copied too, and never read: the copies start before the weights
  /// are known.
  ATTNC_DEVICE void stageSplits(int first, int batch, i64 outRow) {
    for (int i = 0; i < batch; ++i)
      for (int pass = 0; pass < kMergePasses; ++pass)
        if (mergeColumn(pass) < S::kDV)
          cpAsync16(sharedAddress(mergeSlot(i, pass)),
                    p->partial_out +
                        ((first + i) * p->partial_split_stride + outRow) *
                            S::kDV +
                        mergeColumn(pass));
    cpAsyncCommit();
  }
  /// Counts the CTA's partial state in (split_merge.h); the CTA that
  /// stores its row block's last split merges them all into the output, so
  /// that a split-KV decode step is one launch.
  ATTNC_DEVICE void mergeSplits() {
    if (!C::kMergeSplits || !storesPartial())
      return;
    int *last = reinterpret_cast<int *>(smem);
    fenceAcqRelGpu(); // this CTA's partial state before its arrival
    __syncthreads();
    if (threadIdx.x == 0)
      *last = countsInLast(
          p->split_counters +
              (i64(batch) * C::kNumKVHeads + kvHead) * gridDim.x + blockIdx.x,
          this->requestSplits);
    __syncthreads();
    if (!*last)
      return;
    fenceAcqRelGpu(); // the other splits' states after their arrivals
    // A warp per row: lane i holds split i's LSE, so the weights take one
    // load and shuffles; then each lane sums its 4-dim slices of the
    // splits' outputs from its slots, a batch at a time.
    int splits = this->requestSplits;
    auto batchAt = [&](int first) {
      return splits - first < kMergeBatch ? splits - first : kMergeBatch;
    };
    for (int row = warp; row < rows; row += S::kWarps) {
      i64 outRow = outRowOf(row);
      stageSplits(0, batchAt(0), outRow);
      SplitWeights weights = splitWeights(
          p->partial_lse, p->partial_split_stride, outRow, splits, lane);
      float weight = weights.weight;
      // Every lane takes part in each batch, past the row's end too: the
      // shuffles need the whole warp.
      float acc[kMergePasses][kMergeLaneFloats] = {};
      for (int first = 0; first < splits; first += kMergeBatch) {
        int batch = batchAt(first);
        if (first > 0)
          stageSplits(first, batch, outRow);
        cpAsyncWait<0>();
        __syncwarp(); // orders the slots' reads after the wait
        for (int i = 0; i < batch; ++i) {
          float w = __shfl_sync(0xffffffffu, weight, first + i);
          for (int pass = 0; pass < kMergePasses; ++pass) {
            // A split whose keys this row does not see weighs nothing, and
            // its output may be anything.
            if (w == 0.0f || mergeColumn(pass) >= S::kDV)
              continue;
            float4 o = *reinterpret_cast<const float4 *>(mergeSlot(i, pass));
            acc[pass][0] += w * o.x;
            acc[pass][1] += w * o.y;
            acc[pass][2] += w * o.z;
            acc[pass][3] += w * o.w;
          }
        }
        __syncwarp(); // the slots' reads before the next copies into them
      }
      for (int pass = 0; pass < kMergePasses; ++pass)
        if (mergeColumn(pass) < S::kDV)
          storeQuad(static_cast<typename C::Out *>(p->out) + outRow * S::kDV +
                        mergeColumn(pass),
                    acc[pass]);
      if (C::kHasLse && lane == 0)
        p->lse[outRow] = weights.lse();
    }
  }

  ATTNC_DEVICE static void storeChunk(float *dst, const float *src) {
    for (int e = 0; e < 8; ++e)
      dst[e] = src[e];
  }
  template <typename T>
  ATTNC_DEVICE static void storeChunk(T *dst, const float *src) {
    u32 packed[4];
    for (int e = 0; e < 4; ++e)
      packed[e] = Mma<T>::pack(src[2 * e], src[2 * e + 1]);
    *reinterpret_cast<uint4 *>(dst) =
        make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
};

} // namespace attnc

#endif // ATTNC_DEVICE_PIPELINED_CTA_H
