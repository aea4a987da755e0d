//===- hopper/latent.h - multi-head latent attention on wgmma -------------===//
//
// The sm_90a schedule for multi-head latent attention (DeepSeek's MLA with
// the up-projections absorbed into the queries): every query head reads one
// shared cache row of D = latent + rope elements per token, and the value is
// the row's first DV (latent) elements. A CTA's 64 rows are consecutive
// (token, head) pairs of one request, all of its query heads packed, so a
// KV tile loaded once serves every head (at 128 heads and more, a plan may
// pair a token's two row blocks in a cluster whose producers each load
// half of every tile for both: cluster.h). A CTA is persistent over the
// work items of work_order.h and has three warpgroups:
//
// - the producer loads the item's query rows and then each KV tile (keys
//   and values at once: the same bytes) into a ring of kStages stages,
//   with the copy engine, or, from pages that are not whole swizzle atoms
//   (SGLang's pages of one slot), gathering rows with cp.async, or, from
//   an fp8 cache, staging its rows with cp.async and widening them in place
//   into 16-bit tiles (row_widen.h; the scales fold into the scores and the
//   normalizers);
// - the scorer (consumer 0) computes S = Q.K^T over all D columns, the
//   masks and the online softmax, and hands each tile's probabilities P
//   and the rows' rescale factors to the other consumer through shared
//   memory; it keeps the output's first DV / 2 columns;
// - the value consumer (consumer 1) keeps the other DV / 2 columns: for
//   each tile it rescales them and adds P.V.
//
// A 64 x DV f32 output is too many registers for one warpgroup (DV / 2 a
// thread); split by columns, each consumer holds DV / 4. For each tile the
// scorer issues and waits for its scores, computes the softmax, hands P
// over, then issues its half of the tile's P.V and waits for it before the
// next tile's scores: with two stages of whole cache rows, a tile held
// across the next one's scores would leave no stage to load into (the
// scorer's program, AttnLowerToGPU.cpp). The value consumer's half of a
// tile's P.V runs beside the scorer's next scores.
//
// A split-KV launch with `merge_splits` stores every split's partial state
// and is followed by a second launch of the same kernel, its merge pass,
// whose warps merge them over the whole grid: the CTAs end together, so the
// last CTA of a row block would merge it alone in the launch's tail
// (split_merge.h). With one split the results are stored directly.
//
// Generated kernels drive the CTA through free functions, one per attn_gpu
// op, as the warp-specialized prefill (prefill.h) does; the scorer and the
// value consumer run separate programs (attn_gpu.is_scorer).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_LATENT_H
#define ATTNC_DEVICE_HOPPER_LATENT_H

#include "attnc/device/hopper/cluster.h"
#include "attnc/device/hopper/grid_dependency.h"
#include "attnc/device/hopper/kv_copies.h"
#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/online_softmax.h"
#include "attnc/device/hopper/params.h"
#include "attnc/device/hopper/row_gather.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/tma.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/hopper/work_order.h"
#include "attnc/device/masked_rows.h"
#include "attnc/device/math.h"
#include "attnc/device/mma.h"
#include "attnc/device/prelude.h"
#include "attnc/device/shared_storage.h"
#include "attnc/device/split_merge.h"

namespace attnc {

/// What the latent kernel derives from the generated configuration `C`.
/// How the producer fills a KV tile (copy engine or gathered rows) is
/// kv_copies.h's, shared with the prefill.
template <class C> struct LatentShape : hopper::KVCopies<C> {
  static_assert(C::kWarpsN == 1 && C::kWarpsM == 12,
                "a producer, a scorer and a value warpgroup");
  static_assert(C::kNumKVHeads == 1 && C::kGroup == C::kNumQHeads,
                "one latent head serves every query head");
  static_assert(sizeof(typename C::KVElem) == 2 ? !C::kKVScales
                                                : hopper::KVCopies<C>::kWidenKV,
                "wgmma reads 16-bit latent tiles as loaded; fp8 ones are "
                "widened by the producer");
  static constexpr int kD = C::kHeadDimQK;
  static constexpr int kDV = C::kHeadDimV;
  /// Each consumer's output columns: whole 64-column blocks, so that the
  /// value consumer's half of V starts on a block (smem_layout.h).
  static constexpr int kHalfDV = kDV / 2;
  static_assert(kHalfDV % 64 == 0 && kHalfDV <= 256 && kDV < kD,
                "the value halves are whole column blocks of one wgmma");
  static constexpr int kBlockM = C::kBlockM;
  static_assert(kBlockM == hopper::kWgmmaM,
                "one wgmma's 64 rows (PlanAttr::verify)");
  static constexpr int kBlockN = C::kBlockN;
  static constexpr int kStages = C::kStages;
  static constexpr int kThreads = 32 * C::kWarpsM;
  /// CTAs of a cluster that share their KV loads (cluster.h): the two row
  /// blocks of one token's 128 heads, which see the same keys; the planner
  /// clusters only copy-engine loads.
  static constexpr int kClusterCtas = C::kClusterCtas;
  static_assert(kClusterCtas == 1 ||
                    (kClusterCtas == 2 && !hopper::KVCopies<C>::kGatherKV),
                "clusters of two multicast copy-engine loads");
  using QTile = hopper::Sw128Tile<kBlockM, kD>;
  using KVTile = hopper::Sw128Tile<kBlockN, kD>;
  using PTile = hopper::Sw128Tile<kBlockM, kBlockN>;
  /// Shared memory from a 1024-byte aligned base: Q, the KV stages, P, the
  /// rows' rescale factors and normalizers, the barriers (shared_storage.h).
  static constexpr LatentStorage storage() {
    return latentStorage(kBlockM, kBlockN, kD, kStages);
  }
  static constexpr int kQOffset = int(storage().q);
  static constexpr int kKVOffset = int(storage().kv);
  static constexpr int kPOffset = int(storage().p);
  static constexpr int kAlphaOffset = int(storage().alphas);
  static constexpr int kNormOffset = int(storage().norms);
  static constexpr int kBarrierOffset = int(storage().barriers);
  static constexpr int kBarriers = int(storage().barrierCount);
  static constexpr int kSmemBytes = int(storage().bytes);
  static_assert(kSmemBytes == C::kSmemBytes,
                "the config's size is the planner's, from the same layout");
  /// setmaxnreg budgets, as in the prefill (prefill.h): the consumers
  /// share what the producer leaves of the launch's pool.
  static constexpr int kLaunchRegisters = 65536 / kThreads / 8 * 8;
  static constexpr int kConsumerRegisters =
      (kThreads * kLaunchRegisters -
       128 * hopper::KVCopies<C>::kProducerRegisters) /
      256 / 8 * 8;
};

#if ATTNC_IS_DEVICE

template <class C>
struct LatentCta : MaskedRows<C, LatentShape<C>::kBlockM,
                              LatentShape<C>::kBlockN, C::kNumQHeads> {
  using S = LatentShape<C>;
  using Rows = MaskedRows<C, S::kBlockM, S::kBlockN, C::kNumQHeads>;
  using Elem = typename C::Elem;
  /// The products' 16-bit type: the queries', or f16 over an fp8 cache,
  /// which widens to f16 in one instruction a pair (widen.h).
  using Product = typename ProductType<Elem, typename C::KVElem>::type;
  using Out = typename C::Out;
  using QTile = typename S::QTile;
  using KVTile = typename S::KVTile;
  using PTile = typename S::PTile;
  using Rows::rowBegin, Rows::rows, Rows::qToken0, Rows::kvToken0,
      Rows::tileBegin, Rows::tileEnd, Rows::p, Rows::split, Rows::tileAt;

  const TmaAttnParams *tp;
  u32 base; // shared address of the aligned tiles
  hopper::Mbarrier *bars;
  float *alphas;     // the rows' rescale factors of the latest tile
  float *norms;      // the rows' final normalizers
  WorkCursor cursor; // as in prefill.h
  int ring, itemTiles, liveItems, qRound; // as in prefill.h
  // Consumers only.
  int consumer, thread;
  hopper::Accumulator<S::kHalfDV> o;
  hopper::Accumulator<S::kBlockN> s;
  float rowMax[2], rowSum[2];
  int scoredTile, valuesTile;

  ATTNC_DEVICE hopper::Mbarrier &qFull() { return bars[0]; }
  ATTNC_DEVICE hopper::Mbarrier &qEmpty() { return bars[1]; }
  ATTNC_DEVICE hopper::Mbarrier &kvFull(int stage) { return bars[2 + stage]; }
  ATTNC_DEVICE hopper::Mbarrier &kvEmpty(int stage) {
    return bars[2 + S::kStages + stage];
  }
  ATTNC_DEVICE u32 qTile() const { return base + S::kQOffset; }
  ATTNC_DEVICE u32 kvTile(int stage) const {
    return base + S::kKVOffset + stage * KVTile::kBytes;
  }
  ATTNC_DEVICE u32 pTile() const { return base + S::kPOffset; }
  ATTNC_DEVICE int stageOf(int t) const {
    return (ring + (t - tileBegin)) % S::kStages;
  }
  ATTNC_DEVICE u32 phaseOf(int t) const {
    return u32((ring + (t - tileBegin)) / S::kStages) & 1u;
  }

  // --- Setup ----------------------------------------------------------------
  /// Sets up the CTA's barriers; false in the merge pass, which merges
  /// before it returns. Every launch may overlap the one before it
  /// (PlanAttr::overlapsPreviousLaunch): its CTAs wait for the earlier
  /// grids before any global access, and the next launch (the merge pass,
  /// or the next decode step) may set up while this one runs.
  ATTNC_DEVICE bool begin(const TmaAttnParams &params, void *sharedMem) {
    if constexpr (C::kMergeSplits)
      if (params.merge_pass) {
        hopper::followPreviousGrids();
        mergePass(params.attn);
        return false;
      }
    tp = &params;
    cursor.begin();
    ring = 0;
    itemTiles = 0;
    liveItems = 0;
    u32 raw = sharedAddress(sharedMem);
    u32 pad = hopper::atomPadding(raw);
    base = raw + pad;
    u8 *aligned = static_cast<u8 *>(sharedMem) + pad;
    alphas = reinterpret_cast<float *>(aligned + S::kAlphaOffset);
    norms = reinterpret_cast<float *>(aligned + S::kNormOffset);
    bars = reinterpret_cast<hopper::Mbarrier *>(aligned + S::kBarrierOffset);
    if (threadIdx.x == 0) {
      qFull().init(1);
      qEmpty().init(4); // the scorer's warps
      for (int stage = 0; stage < S::kStages; ++stage) {
        kvFull(stage).init(S::kKVFillers);
        // Every consumer warp of the cluster, once its P.V is done.
        kvEmpty(stage).init(8 * S::kClusterCtas);
      }
      hopper::fenceBarrierInit();
    }
    hopper::followPreviousGrids();
    if constexpr (S::kClusterCtas > 1)
      hopper::clusterSync(); // the peer's barriers, before any arrival
    else
      __syncthreads();
    return true;
  }

  /// 16-byte loads a lane of the merge pass holds in flight: 64 of the
  /// 168 registers a thread has before any setmaxnreg.
  static constexpr int kMergeLoads = 16;
  /// The widest unit of the merge pass: a whole row, in passes of 128
  /// columns (split_merge.h).
  static constexpr int kMergeRow = S::kDV % 512 == 0   ? 512
                                   : S::kDV % 256 == 0 ? 256
                                                       : 128;

  /// The merge pass: the warps of the grid merge the output's rows from
  /// every split's partial state (split_merge.h), each warp a unit of a row
  /// at a time, the loads of all its splits in flight: a whole row where
  /// they fit (up to 4 splits of 512 columns), else 128 columns. Few splits
  /// then take one L2 round trip a row, and many still spread over many
  /// warps.
  ATTNC_DEVICE void mergePass(const AttnParams &params) {
    if (params.num_splits * (kMergeRow / 128) <= kMergeLoads)
      mergeUnits<kMergeRow>(params);
    else
      mergeUnits<128>(params);
  }
  template <int Columns>
  ATTNC_DEVICE void mergeUnits(const AttnParams &params) {
    constexpr int kWarps = S::kThreads / 32;
    constexpr int kUnitsPerRow = S::kDV / Columns;
    i64 units = params.partial_split_stride * kUnitsPerRow;
    for (i64 unit = i64(blockIdx.x) * kWarps + threadIdx.x / 32; unit < units;
         unit += i64(gridDim.x) * kWarps)
      mergeRowColumns<Out, S::kDV, Columns, C::kHasLse,
                      kMergeLoads * 128 / Columns>(
          params, unit / kUnitsPerRow, int(unit % kUnitsPerRow) * Columns,
          params.num_splits, threadIdx.x % 32);
  }

  /// A CTA of a cluster stays until its peer is done with its shared
  /// memory and barriers (cluster.h): every thread, at the kernel's end.
  ATTNC_DEVICE ~LatentCta() {
    if constexpr (S::kClusterCtas > 1)
      hopper::clusterSync();
  }

  /// The work order as a cluster walks it: each item a pair of row blocks
  /// (the order's row blocks pair up, being a token's heads), the cluster's
  /// CTAs taking one each.
  ATTNC_DEVICE WorkOrder clusterOrder() const {
    WorkOrder order = tp->order;
    order.items /= S::kClusterCtas;
    order.row_blocks /= S::kClusterCtas;
    return order;
  }

  /// This CTA's rank in its cluster: a cluster's CTAs are consecutive
  /// (__cluster_dims__ of a 1D grid).
  ATTNC_DEVICE int clusterRank() const {
    return int(blockIdx.x) % S::kClusterCtas;
  }

  ATTNC_DEVICE int workItems() const {
    return workSlots(clusterOrder(), int(gridDim.x) / S::kClusterCtas);
  }

  /// Locates the item in the CTA's next slot, `k`: a block of one request's
  /// (token, head) rows and a share of its keys.
  ATTNC_DEVICE bool beginItem(int k) {
    ring += itemTiles;
    itemTiles = 0;
    WorkItem w;
    if (!cursor.next(clusterOrder(), int(blockIdx.x) / S::kClusterCtas,
                     int(gridDim.x) / S::kClusterCtas, 1, tp->attn.num_splits,
                     w))
      return false;
    w.row_block = w.row_block * S::kClusterCtas + clusterRank();
    if (!this->locate(tp->attn, w.batch, 0, w.split, w.row_block * S::kBlockM))
      return false;
    itemTiles = tileEnd - tileBegin;
    qRound = liveItems++;
    return true;
  }

  ATTNC_DEVICE int warpgroup() const {
    return __shfl_sync(0xffffffffu, int(threadIdx.x) / 128, 0);
  }
  ATTNC_DEVICE bool isProducer() const { return warpgroup() == 0; }

  // --- Producer -------------------------------------------------------------
  ATTNC_DEVICE bool beginProducer() {
    hopper::lowerRegisterLimit<S::kProducerRegisters>();
    if (threadIdx.x == 0) {
      hopper::prefetchTensorMap(tp->q);
      hopper::prefetchTensorMap(tp->k);
    }
    return int(threadIdx.x) < S::kCopyThreads;
  }

  /// The item's query rows (the queries' (token, head) rows are
  /// consecutive: the map has one head), then its KV tiles.
  ATTNC_DEVICE void produce() {
    if (threadIdx.x == 0) {
      qEmpty().wait(u32(qRound & 1) ^ 1u);
      qFull().arriveExpectTx(QTile::kBytes);
      hopper::loadHeadTile<QTile>(qTile(), tp->q, qFull(),
                                  qToken0 * C::kNumQHeads + rowBegin, 0);
    }
    if constexpr (S::kWidenKV)
      widenTiles();
    else if constexpr (S::kGatherKV)
      gatherTiles();
    else
      copyTiles();
  }

  ATTNC_DEVICE void copyTiles() {
    hopper::BlockShare share = loadShare();
    for (int t = tileBegin; t < tileEnd; ++t) {
      int stage = stageOf(t);
      kvEmpty(stage).wait(phaseOf(t) ^ 1u);
      // The whole tile: this CTA's share and its peers'.
      if (threadIdx.x == 0)
        kvFull(stage).arriveExpectTx(KVTile::kBytes);
      if constexpr (S::kCopyThreads > 1)
        __syncwarp();
      hopper::copyTile<C, KVTile>(kvTile(stage), tp->k, kvFull(stage), *this,
                                  tileAt(t) * S::kBlockN, 0, share);
    }
  }

  /// The column blocks of each KV tile this CTA loads: all, or in a
  /// cluster its share of them, multicast into every CTA of the cluster.
  ATTNC_DEVICE hopper::BlockShare loadShare() const {
    hopper::BlockShare share;
    if constexpr (S::kClusterCtas > 1) {
      constexpr int kShare =
          (KVTile::kBlocks + S::kClusterCtas - 1) / S::kClusterCtas;
      share.first = kShare * clusterRank();
      share.end = share.first + kShare;
      share.multicast = u16((1u << S::kClusterCtas) - 1);
    }
    return share;
  }

  /// Latent tiles gathered by every producer thread (kv_copies.h); the
  /// copies complete each thread's arrival on the stage's full barrier.
  /// The page ids of the next tile are loaded before this tile's copies,
  /// so that their latency is not paid between a stage's release and its
  /// refill.
  ATTNC_DEVICE void gatherTiles() {
    if (tileBegin >= tileEnd)
      return; // no keys: no page to look up
    auto pages =
        hopper::lookUpTilePages<C>(*this, tileAt(tileBegin) * S::kBlockN);
    for (int t = tileBegin; t < tileEnd; ++t) {
      int stage = stageOf(t);
      int key0 = tileAt(t) * S::kBlockN;
      auto next =
          t + 1 < tileEnd
              ? hopper::lookUpTilePages<C>(*this, tileAt(t + 1) * S::kBlockN)
              : pages;
      kvEmpty(stage).wait(phaseOf(t) ^ 1u);
      hopper::gatherTileRows<C, KVTile, S::kD>(
          kvTile(stage), p->k, p->k_page_stride, *this, key0, 0, pages);
      hopper::arriveWhenCopied(kvFull(stage));
      pages = next;
    }
  }

  /// fp8 latent tiles staged by every producer thread with cp.async into
  /// the back of the stage they widen into, then widened in place
  /// (row_widen.h), each thread arriving on the stage's full barrier after
  /// its stores. Page ids are looked up two tiles ahead and a tile's rows
  /// prefetched into L2 one tile ahead, so that neither the page table's
  /// latency nor DRAM's lies between a stage's release and its refill.
  static constexpr int kWidenPhase = 5; // the producer's named barrier
  ATTNC_DEVICE void widenTiles() {
    static_assert(kSame<Product, f16>, "an fp8 cache widens to f16");
    using Widening = hopper::StagedWidening<KVTile, typename C::KVElem,
                                            hopper::kWarpgroupThreads>;
    constexpr u32 kSets = Widening::kRowSets;
    constexpr u32 kRowBytes = S::kD * sizeof(typename C::KVElem);
    if (tileBegin >= tileEnd)
      return; // no keys: no page to look up
    Widening widening(int(threadIdx.x));
    auto pagesOf = [&](int t, int (&pages)[kSets]) {
      for (u32 set = 0; set < kSets; ++set)
        pages[set] =
            S::kPaged ? hopper::pageOfKey<C>(*this, tileAt(t) * S::kBlockN +
                                                        int(widening.row(set)))
                      : 0;
    };
    auto sourcesOf = [&](int t, const int (&pages)[kSets],
                         const u8 *(&rows)[kSets]) {
      for (u32 set = 0; set < kSets; ++set)
        rows[set] = hopper::keyRowSource<C, S::kD>(
            p->k, p->k_page_stride, *this,
            tileAt(t) * S::kBlockN + int(widening.row(set)), 0, pages[set]);
    };
    int pages[kSets], nextPages[kSets], laterPages[kSets];
    pagesOf(tileBegin, pages);
    pagesOf(tileBegin + 1 < tileEnd ? tileBegin + 1 : tileBegin, nextPages);
    for (int t = tileBegin; t < tileEnd; ++t) {
      const u8 *rows[kSets], *nextRows[kSets];
      sourcesOf(t, pages, rows);
      if (t + 1 < tileEnd && threadIdx.x % 4 == 0) {
        sourcesOf(t + 1, nextPages, nextRows);
        for (u32 set = 0; set < kSets; ++set)
          hopper::prefetchL2(nextRows[set], kRowBytes);
      }
      pagesOf(t + 2 < tileEnd ? t + 2 : t, laterPages);
      int stage = stageOf(t);
      kvEmpty(stage).wait(phaseOf(t) ^ 1u);
      widening.stage(kvTile(stage), rows);
      widening.widen(kvTile(stage), kWidenPhase);
      kvFull(stage).arrive();
      for (u32 set = 0; set < kSets; ++set) {
        pages[set] = nextPages[set];
        nextPages[set] = laterPages[set];
      }
    }
  }

  // --- Consumers ------------------------------------------------------------
  // Named barriers between the consumers (256 threads): the scorer waits
  // until P is free (the value consumer's P.V of the previous tile is
  // done) and arrives once the next P is written; the value consumer does
  // the converse. The scorer's own warps meet on a third once they have
  // written P (which their own wgmma then reads) or the normalizers, and on
  // the fourth the normalizers are handed over.
  static constexpr int kPFree = 1, kPReady = 2, kPWritten = 3, kNormsReady = 4;
  static constexpr int kPairThreads = 256;

  ATTNC_DEVICE bool isScorer() const { return consumer == 0; }

  ATTNC_DEVICE void beginConsumer() {
    hopper::raiseRegisterLimit<S::kConsumerRegisters>();
    consumer = warpgroup() - 1;
    thread = threadIdx.x % hopper::kWarpgroupThreads;
  }

  ATTNC_DEVICE int localRow(int half) const {
    return hopper::AccumulatorLayout::row(thread, 2 * half);
  }

  ATTNC_DEVICE void beginRows() {
    for (int half = 0; half < 2; ++half) {
      rowMax[half] = negInf();
      rowSum[half] = 0.0f;
    }
    hopper::zero(o);
    scoredTile = -1;
    valuesTile = -1;
    // P starts free: the value consumer opens the scorer's first wait.
    if (!isScorer() && tileBegin < tileEnd)
      hopper::namedBarrierArrive(kPFree, kPairThreads);
    if (isScorer()) {
      qFull().wait(u32(qRound & 1));
      if constexpr (!kSame<Product, Elem>)
        queriesToF16();
    }
  }

  /// bf16 queries over an fp8 cache: each scorer warp brings the 16 query
  /// rows of its products into f16 in place, times the power of two that
  /// puts their largest magnitude in f16's range (exact for every element
  /// within 2^28 of it), and folds its inverse into the key scale, as the
  /// decode does per warp (widen.h). Lane l converts half of row l / 2.
  ATTNC_DEVICE void queriesToF16() {
    u32 row = 16 * (thread / 32) + thread % 32 / 2, half = thread % 2;
    constexpr u32 kLaneChunks = S::kD / 16; // 16-byte chunks of half a row
    auto chunk = [&](u32 j) {
      return qTile() + QTile::offset(row, 8 * (2 * j + half));
    };
    float largest = 0.0f;
#pragma unroll 4
    for (u32 j = 0; j < kLaneChunks; ++j) {
      uint4 v = loadShared16(chunk(j));
      largest =
          fmaxf(fmaxf(largest, fmaxf(bf16x2AbsMax(v.x), bf16x2AbsMax(v.y))),
                fmaxf(bf16x2AbsMax(v.z), bf16x2AbsMax(v.w)));
    }
    int e = warpF16RangeExponent(largest);
    float scale = powerOfTwo(-e);
#pragma unroll 4
    for (u32 j = 0; j < kLaneChunks; ++j) {
      uint4 v = loadShared16(chunk(j));
      storeShared16(chunk(j), make_uint4(bf16x2ToF16x2(v.x, scale),
                                         bf16x2ToF16x2(v.y, scale),
                                         bf16x2ToF16x2(v.z, scale),
                                         bf16x2ToF16x2(v.w, scale)));
    }
    this->kScale *= powerOfTwo(e);
    // Every warp's rows, before the scorer's wgmma reads them (async proxy).
    hopper::fenceProxyAsync();
    hopper::namedBarrierSync(kPWritten, hopper::kWarpgroupThreads);
  }

  ATTNC_DEVICE void releaseQuery() {
    if (isScorer())
      release(qEmpty());
  }

  ATTNC_DEVICE void release(hopper::Mbarrier &empty) {
    __syncwarp();
    if (thread % 32 == 0)
      empty.arrive();
  }

  /// A KV stage this warp is done with, in every CTA of the cluster: each
  /// one's copy engine writes its share of the next tile into all.
  ATTNC_DEVICE void releaseStage(int stage) {
    if constexpr (S::kClusterCtas == 1) {
      release(kvEmpty(stage));
    } else {
      __syncwarp();
      if (thread % 32 == 0)
        for (u32 rank = 0; rank < u32(S::kClusterCtas); ++rank)
          hopper::arriveInCta(kvEmpty(stage), rank);
    }
  }

  // Each function below is one role's: the roles are separate programs
  // (is_scorer), so that neither writes an accumulator on a path where the
  // other's wgmma is in flight.

  /// The scorer issues S = Q.K^T for tile `t`.
  ATTNC_DEVICE void issueScores(int t) {
    kvFull(stageOf(t)).wait(phaseOf(t));
    if constexpr (S::kGatherKV)
      hopper::fenceProxyAsync(); // the gathered rows, before wgmma reads
    zeroValuesPastEnd(t);
    // Opaque to the compiler: the query tile's descriptors (two registers
    // for each of D / 16 steps) are then made per tile, not held for all.
    u32 q = qTile();
    asm volatile("" : "+r"(q));
    hopper::issueQK<Product, QTile, KVTile>(s, q, kvTile(stageOf(t)));
    scoredTile = t;
  }

  /// The value consumer waits for tile `t`'s P and rescales its columns.
  ATTNC_DEVICE void awaitProbabilities(int) {
    hopper::namedBarrierSync(kPReady, kPairThreads);
    if constexpr (S::kGatherKV)
      hopper::fenceProxyAsync(); // the gathered rows the scorer waited for
    float alpha[2] = {alphas[localRow(0)], alphas[localRow(1)]};
    hopper::rescaleRows(o, alpha);
  }

  /// The values of tile `t`'s rows past the request's last key, zeroed
  /// where they may be anything (kZeroRowsPastEnd: a paged or ragged tile
  /// that holds the request's end, one per item at most), by the scorer
  /// alone, once the stage has landed and before its scores read it (the
  /// rows' scores are masked, whatever their keys). The value consumer
  /// reads the tile only once P is ready, which the scorer hands over
  /// after these stores. They precede the stage's release, and their fence
  /// waits for them, so that in a cluster no write of the peer's copy
  /// engine can overtake them (as for the reads, arriveInCta). Placed in
  /// the scorer's softmax, or split between the consumers (each its own
  /// half), the code changed ptxas's registers for every tile: the scorer
  /// recomputed its P addresses each tile (in the softmax: mla_decode 1 %
  /// slower with no tile to zero). The scorer meets its warps on kPWritten.
  ATTNC_DEVICE void zeroValuesPastEnd(int t) {
    if constexpr (S::kZeroRowsPastEnd) {
      int keys = this->kvLen - tileAt(t) * S::kBlockN; // 1..kBlockN
      // A vote: ptxas sees the branch is warp-uniform (prefill.h).
      if (__all_sync(0xffffffffu, keys < S::kBlockN)) {
        constexpr int kBlocks = S::kDV / KVTile::kBlockCols;
        hopper::zeroRowsFrom<KVTile, hopper::kWarpgroupThreads, 0, kBlocks>(
            kvTile(stageOf(t)), keys, thread);
        hopper::fenceProxyAsync();
        hopper::namedBarrierSync(kPWritten, hopper::kWarpgroupThreads);
      }
    }
  }

  /// Either consumer: O_half += P.V_half for tile `t`, whose P the scorer
  /// has written.
  ATTNC_DEVICE void issueValues(int t) {
    u32 values =
        kvTile(stageOf(t)) + consumer * (S::kHalfDV / 64) * KVTile::kBlockBytes;
    hopper::fenceOperand(o);
    hopper::wgmmaFence();
#pragma unroll
    for (int step = 0; step < S::kBlockN / hopper::kWgmmaK; ++step)
      hopper::wgmmaSS<Product, 1>(o, PTile::kMajor(pTile(), step),
                                  KVTile::mnMajor(values, step), 1);
    hopper::wgmmaCommit();
    valuesTile = t;
  }

  /// The scorer waits for its scores (its P.V issued after them may run
  /// on).
  template <int Pending> ATTNC_DEVICE void waitScores() {
    hopper::wgmmaWait<Pending>(s);
  }

  /// Waits for this consumer's P.V in flight, if any, and releases its
  /// stage; the value consumer then hands P back, unless it was the item's
  /// last (the scorer writes no P after it).
  ATTNC_DEVICE void waitValues() {
    hopper::wgmmaWait<0>(o);
    if (valuesTile < 0)
      return;
    releaseStage(stageOf(valuesTile));
    if (!isScorer() && valuesTile + 1 < tileEnd)
      hopper::namedBarrierArrive(kPFree, kPairThreads);
    valuesTile = -1;
  }

  /// Scores are held as raw products where nothing but the scale modifies
  /// them (the prefill's choice, prefill.h): the scale goes into exp2's
  /// argument (one FFMA a score instead of a multiply and a subtraction),
  /// and a tile no mask cuts is not touched. A positive scale keeps the
  /// row maxima of the raw products those of the logits: an fp8 cache's
  /// key scale, read at run time, joins it where it is positive, and
  /// otherwise the scores go through logit() (a uniform branch).
  static constexpr bool kMayHoldRaw = !Rows::kMods;
  ATTNC_DEVICE bool holdRaw() const {
    return kMayHoldRaw && (!Rows::kKeyScale || this->keyScale() > 0.0f);
  }
  /// The factor that turns held scores into base-2 logits.
  ATTNC_DEVICE float logitScale() const {
    return holdRaw() ? this->scaleLog2() * this->keyScale() : 1.0f;
  }

  template <bool Partial> ATTNC_DEVICE void modifyScores(int t) {
    bool raw = holdRaw();
    if (raw && !Partial)
      return;
    int key0 = tileAt(t) * S::kBlockN;
#pragma unroll
    for (int i = 0; i < hopper::Accumulator<S::kBlockN>::kRegs; ++i) {
      int row = rowBegin + localRow((i / 2) % 2);
      int key = key0 + hopper::AccumulatorLayout::col(thread, i);
      s.d[i] =
          raw ? this->template masked<Partial, false>(s.d[i], row, key)
              : this->template logit<Partial, false>(s.d[i], row, key, 0.0f);
    }
  }

  /// Chains of maxima per row (hopper::rowMaxOf): one chain would sit on
  /// the scorer's critical path.
  static constexpr int kChains = 4;

  /// The scorer's online softmax on base-2 logits: new maxima and sums,
  /// then, once P is free, P and the rescale factors written for both
  /// consumers, and its own output columns rescaled.
  ATTNC_DEVICE void onlineSoftmax() {
    constexpr int kRegs = hopper::Accumulator<S::kBlockN>::kRegs;
    float alpha[2];
    hopper::exponentiateRows<kChains>(s, rowMax, rowSum, logitScale(), alpha);
    waitValues();
    hopper::namedBarrierSync(kPFree, kPairThreads);
    u8 *pBytes = sharedBase() + S::kPOffset;
#pragma unroll
    for (int i = 0; i < kRegs; i += 2) {
      int row = hopper::AccumulatorLayout::row(thread, i);
      int col = hopper::AccumulatorLayout::col(thread, i);
      *reinterpret_cast<u32 *>(pBytes + PTile::offset(row, col)) =
          Mma<Product>::pack(s.d[i], s.d[i + 1]);
    }
    if (thread % 4 == 0) {
      alphas[localRow(0)] = alpha[0];
      alphas[localRow(1)] = alpha[1];
    }
    hopper::fenceProxyAsync();
    hopper::namedBarrierSync(kPWritten, hopper::kWarpgroupThreads);
    hopper::namedBarrierArrive(kPReady, kPairThreads);
    hopper::rescaleRows(o, alpha);
  }

  /// The generic address of the aligned tiles.
  ATTNC_DEVICE u8 *sharedBase() const {
    return reinterpret_cast<u8 *>(alphas) - S::kAlphaOffset;
  }

  /// Normalizes and stores each consumer's columns, and the scorer the LSE
  /// (or, under split-KV, this split's partial state). The scorer hands the
  /// normalizers over; an item without tiles has none to hand (zero rows).
  ATTNC_DEVICE void finish() {
    waitValues();
    bool any = tileBegin < tileEnd;
    float factor[2] = {0.0f, 0.0f};
    if (isScorer()) {
      for (int half = 0; half < 2; ++half) {
        float sum = rowSum[half];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        rowSum[half] = sum;
        // An fp8 cache's value scale: the values are its latent columns.
        factor[half] = sum > 0.0f ? this->valueScale() / sum : 0.0f;
        if (any && thread % 4 == 0)
          norms[localRow(half)] = factor[half];
      }
      if (any) {
        // As for P: the writers meet before they hand over. The arrival
        // alone orders the normalizers, but compute-sanitizer's racecheck
        // only sees a handoff that a barrier the writers wait on precedes.
        hopper::namedBarrierSync(kPWritten, hopper::kWarpgroupThreads);
        hopper::namedBarrierArrive(kNormsReady, kPairThreads);
      }
    } else if (any) {
      hopper::namedBarrierSync(kNormsReady, kPairThreads);
      factor[0] = norms[localRow(0)];
      factor[1] = norms[localRow(1)];
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      int row = localRow(half);
      if (row >= rows)
        continue;
      i64 outRow = i64(qToken0) * C::kNumQHeads + rowBegin + row;
      // The scorer holds the rows' sums and maxima: it writes the LSE.
      bool writesLse = isScorer() && thread % 4 == 0;
      float sum = rowSum[half];
      float lse = writesLse && sum > 0.0f
                      ? (rowMax[half] * logitScale() + fastLog2(sum)) * kLn2
                      : negInf();
      // This consumer's half of the row's columns.
      hopper::storeOutputRow<Out, S::kDV, C::kHasLse, (C::kKVSplits > 1)>(
          *p, split, outRow, consumer * S::kHalfDV, o, half, factor[half],
          thread, writesLse, lse);
    }
  }
};

#endif // ATTNC_IS_DEVICE

} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_LATENT_H
