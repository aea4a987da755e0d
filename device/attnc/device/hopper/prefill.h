//===- hopper/prefill.h - warp-specialized wgmma attention ----------------===//
//
// The sm_90a prefill schedule, after FlashAttention-3. A CTA is
// persistent: it claims work items (work_order.h), each 64 x kConsumers
// query rows of one query head, one by one until none is left, and is
// split by role:
//
// - warpgroup 0, the producer, gives up most of its registers; one of its
//   threads loads each consumer's 64 query rows and then every K and V
//   tile the rows see through the copy engine (TMA) into a ring of
//   kStages shared-memory stages, each guarded by a full and an empty
//   mbarrier for K and for V. A paged tile's boxes are issued by a warp,
//   a lane per page; pages that are not whole swizzle atoms are gathered
//   by the whole warpgroup with cp.async (row_gather.h). The ring runs on
//   from one item to the next, so the next item's tiles load while the
//   consumers finish this one;
// - each other warpgroup, a consumer, takes the registers and owns 64
//   rows: S = Q.K^T with wgmma from shared memory, the masks and modifiers
//   on the accumulator fragment, the online softmax, and O += P.V with P
//   from registers. The next tile's S is issued before this tile's P.V is
//   waited for, so the softmax of one tile overlaps the matrix work of the
//   other. The consumers also take turns issuing their products (a named
//   barrier per consumer), so one's softmax runs while another's products
//   keep the tensor cores busy.
//
// K and V have empty barriers of their own: a K stage is released as soon
// as the scores that read it are done, a tile before its V stage is. Each
// consumer's query tile has a full and an empty barrier too: it is
// released once the item's last scores are done. With two query tiles a
// consumer (`q_buffers = 2`), items alternate between them: the next
// item's queries load while this item runs, and this item's epilogue
// stages its output through its own tile (staged_output.h) before
// releasing it.
//
// Generated kernels drive the CTA through the free functions at the bottom,
// one per attn_gpu op, like the mma.sync schedules (attention.h).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_PREFILL_H
#define ATTNC_DEVICE_HOPPER_PREFILL_H

#include "attnc/device/hopper/grid_dependency.h"
#include "attnc/device/hopper/kv_copies.h"
#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/online_softmax.h"
#include "attnc/device/hopper/params.h"
#include "attnc/device/hopper/row_gather.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/staged_output.h"
#include "attnc/device/hopper/tma.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/hopper/work_order.h"
#include "attnc/device/masked_rows.h"
#include "attnc/device/math.h"
#include "attnc/device/mma.h"
#include "attnc/device/prelude.h"
#include "attnc/device/shared_storage.h"

namespace attnc {

/// What the warp-specialized kernel derives from the generated
/// configuration `C`: kWarpsM warps are a producer warpgroup and
/// kWarpsM / 4 - 1 consumer warpgroups (the plan's `warps`).
/// How the producer fills a K or V tile (copy engine or gathered rows) is
/// kv_copies.h's, shared with the latent schedule.
template <class C> struct WarpSpecializedShape : hopper::KVCopies<C> {
  static_assert(C::kWarpsN == 1 && C::kWarpsM % 4 == 0 && C::kWarpsM >= 8,
                "a producer warpgroup and at least one consumer warpgroup");
  static_assert(sizeof(typename C::KVElem) == sizeof(typename C::Elem) &&
                    !C::kKVScales,
                "wgmma reads K/V tiles as loaded: fp8 caches take mma.sync");
  static constexpr int kD = C::kHeadDimQK;
  static constexpr int kDV = C::kHeadDimV;
  using hopper::KVCopies<C>::kConsumers;
  static constexpr int kBlockM = C::kBlockM;
  static_assert(kBlockM == hopper::kWgmmaM * kConsumers,
                "a consumer warpgroup's 64 rows each (PlanAttr::verify)");
  static constexpr int kBlockN = C::kBlockN;
  static constexpr int kStages = C::kStages;
  static constexpr int kThreads = 32 * C::kWarpsM;
  using QTile = hopper::Sw128Tile<hopper::kWgmmaM, kD>;
  using KTile = hopper::Sw128Tile<kBlockN, kD>;
  using VTile = hopper::Sw128Tile<kBlockN, kDV>;
  static constexpr int kQueryBuffers = C::kQueryBuffers;
  static_assert(kQueryBuffers == 1 || kQueryBuffers == 2,
                "one or two query tiles a consumer (PlanAttr::verify)");
  static constexpr int kQueryTiles = kConsumers * kQueryBuffers;
  /// Whether the epilogue stages the output through the item's query tile:
  /// with a second tile the next item's queries are elsewhere, and the
  /// tile holds a 16-bit output row wherever the output's head dim is at
  /// most the queries'.
  static constexpr bool kStagedOutput = kQueryBuffers > 1 && kDV <= kD &&
                                        sizeof(typename C::Out) == 2;
  /// Items the producer's first thread has claimed and the other roles
  /// have yet to read (work_order.h).
  static constexpr int kItemSlots = attnc::kItemSlots;
  /// Shared memory from a 1024-byte aligned base: the consumers' Q tiles
  /// (consumer c's buffer b is tile c * kQueryBuffers + b), the K stages,
  /// the V stages, the barriers, the item slots (shared_storage.h).
  static constexpr WarpSpecializedStorage storage() {
    return warpSpecializedStorage(kBlockM, kBlockN, kD, kDV, kStages,
                                  kConsumers, kQueryBuffers);
  }
  static constexpr int kQOffset = int(storage().q);
  static constexpr int kKOffset = int(storage().k);
  static constexpr int kVOffset = int(storage().v);
  static constexpr int kBarrierOffset = int(storage().barriers);
  static constexpr int kBarriers = int(storage().barrierCount);
  static constexpr int kItemSlotOffset = int(storage().itemSlots);
  static constexpr int kSmemBytes = int(storage().bytes);
  static_assert(kSmemBytes == C::kSmemBytes,
                "the config's size is the planner's, from the same layout");
  /// setmaxnreg budgets. The CTA's pool is what its threads hold at launch:
  /// __launch_bounds__(kThreads, 1) gives each the most registers one CTA
  /// per SM allows, a multiple of 8 (168 for 384 threads). The producer
  /// keeps kv_copies.h's budget; the consumers share the rest. An increase
  /// the pool cannot cover never returns.
  static constexpr int kLaunchRegisters = 65536 / kThreads / 8 * 8;
  using hopper::KVCopies<C>::kProducerRegisters;
  static constexpr int kConsumerShare =
      (kThreads * kLaunchRegisters - 128 * kProducerRegisters) /
      (128 * kConsumers) / 8 * 8;
  static constexpr int kConsumerRegisters =
      kConsumerShare > 240 ? 240 : kConsumerShare;
  static_assert(128 * (kProducerRegisters + kConsumers * kConsumerRegisters) <=
                    kThreads * kLaunchRegisters,
                "the warpgroups' budgets fit the pool");
  static_assert(kD % limits::kKernelHeadDimStep == 0 &&
                    kDV % limits::kKernelHeadDimStep == 0 &&
                    kD <= limits::kMaxKernelHeadDim &&
                    kDV <= limits::kMaxKernelHeadDim,
                "head dims the products step over (attn-plan refuses others)");
};

#if ATTNC_IS_DEVICE

template <class C>
struct WarpSpecializedCta
    : MaskedRows<C, WarpSpecializedShape<C>::kBlockM,
                 WarpSpecializedShape<C>::kBlockN, /*RowsPerToken=*/1> {
  using S = WarpSpecializedShape<C>;
  using Rows = MaskedRows<C, S::kBlockM, S::kBlockN, 1>;
  using Elem = typename C::Elem;
  using Out = typename C::Out;
  using QTile = typename S::QTile;
  using KTile = typename S::KTile;
  using VTile = typename S::VTile;
  using Rows::batch, Rows::rowBegin, Rows::rows, Rows::qToken0, Rows::kvToken0,
      Rows::tileBegin, Rows::tileEnd, Rows::p, Rows::split, Rows::tileAt;

  const TmaAttnParams *tp;
  u32 base; // shared address of the aligned tiles
  hopper::Mbarrier *bars;
  int qHead, kvHead;
  // Progress over the CTA's work items, the same in every role.
  /// Whether the thread is the producer's, whose first thread claims the
  /// items: a constant in each role's code, so a consumer's keeps only the
  /// reading path.
  bool producerThread;
  bool claimsDone;   // no item is left to claim (or to read)
  int pendingClaim;  // the claimer's claim for its next slot
  WorkCursor cursor; // the next slot of a static share (!C::kClaimItems)
  int ring;          // tiles of earlier items that went through the ring
  int itemTiles;     // tiles of the current item
  int liveItems;     // items begun that had rows
  int qRound;        // this item's place among those: its Q tile and phase
  // Consumers only.
  int consumer, thread; // consumer warpgroup, thread within it
  hopper::Accumulator<S::kDV> o;
  hopper::Accumulator<S::kBlockN> s;
  hopper::AFragment pf[S::kBlockN / hopper::kWgmmaK];
  float rowMax[2], rowSum[2];
  float slope[2];    // the rows' ALiBi slope (over the scale: kHoldAlibi)
  float alibiRow[2]; // ALiBi's bias at key 0, in held units (kHoldAlibi)
  int rowSegment[2]; // document ids of the thread's rows (segments only)
  int scoredTile;    // the tile whose scores are in flight or in `s`
  int valuesTile;    // the tile whose P.V is in flight, or -1
  bool turnsOpen;    // the CTA's first turn was opened (openTurns)

  // --- Shared memory
  // ----------------------------------------------------------
  /// The current item's query tile of each consumer, and the phase of its
  /// barriers: items take the tiles in turn.
  ATTNC_DEVICE int queryBuffer() const { return qRound % S::kQueryBuffers; }
  ATTNC_DEVICE u32 queryPhase() const {
    return u32(qRound / S::kQueryBuffers) & 1u;
  }
  ATTNC_DEVICE int queryTileIndex(int c) const {
    return c * S::kQueryBuffers + queryBuffer();
  }
  /// Query tile `tile`'s barriers (consumer c's current one is
  /// queryTileIndex(c)).
  ATTNC_DEVICE hopper::Mbarrier &queryFull(int tile) { return bars[tile]; }
  ATTNC_DEVICE hopper::Mbarrier &queryEmpty(int tile) {
    return bars[S::kQueryTiles + tile];
  }
  ATTNC_DEVICE hopper::Mbarrier &qFull(int c) {
    return queryFull(queryTileIndex(c));
  }
  ATTNC_DEVICE hopper::Mbarrier &qEmpty(int c) {
    return queryEmpty(queryTileIndex(c));
  }
  ATTNC_DEVICE hopper::Mbarrier &kFull(int stage) {
    return bars[2 * S::kQueryTiles + stage];
  }
  ATTNC_DEVICE hopper::Mbarrier &vFull(int stage) {
    return bars[2 * S::kQueryTiles + S::kStages + stage];
  }
  ATTNC_DEVICE hopper::Mbarrier &kEmpty(int stage) {
    return bars[2 * S::kQueryTiles + 2 * S::kStages + stage];
  }
  ATTNC_DEVICE hopper::Mbarrier &vEmpty(int stage) {
    return bars[2 * S::kQueryTiles + 3 * S::kStages + stage];
  }
  ATTNC_DEVICE hopper::Mbarrier &itemFull(int slot) {
    return bars[2 * S::kQueryTiles + 4 * S::kStages + slot];
  }
  /// Item slot `slot`, right after the barriers. Its reads and writes are
  /// ordered by the slot's barriers (release on arrive, acquire on wait).
  ATTNC_DEVICE WorkItem &itemSlot(int slot) {
    static_assert(S::kItemSlotOffset == S::kBarrierOffset + 8 * S::kBarriers,
                  "the item slots follow the barriers");
    return reinterpret_cast<WorkItem *>(bars + S::kBarriers)[slot];
  }
  ATTNC_DEVICE hopper::Mbarrier &itemEmpty(int slot) {
    return bars[2 * S::kQueryTiles + 4 * S::kStages + S::kItemSlots + slot];
  }
  ATTNC_DEVICE u32 qTile(int c) const {
    return base + S::kQOffset + queryTileIndex(c) * QTile::kBytes;
  }
  ATTNC_DEVICE u32 kTile(int stage) const {
    return base + S::kKOffset + stage * KTile::kBytes;
  }
  ATTNC_DEVICE u32 vTile(int stage) const {
    return base + S::kVOffset + stage * VTile::kBytes;
  }
  /// The ring position of visiting-order tile `t` of the current item.
  ATTNC_DEVICE int ringIndex(int t) const { return ring + (t - tileBegin); }
  ATTNC_DEVICE int stageOf(int t) const { return ringIndex(t) % S::kStages; }
  ATTNC_DEVICE u32 phaseOf(int t) const {
    return u32(ringIndex(t) / S::kStages) & 1u;
  }

  // --- Setup ----------------------------------------------------------------
  /// Sets up the shared memory; every CTA the host launches has work.
  ATTNC_DEVICE bool begin(const TmaAttnParams &params, void *sharedMem) {
    tp = &params;
    claimsDone = false;
    cursor.begin();
    ring = 0;
    itemTiles = 0;
    liveItems = 0;
    u32 raw = sharedAddress(sharedMem);
    u32 pad = hopper::atomPadding(raw);
    base = raw + pad;
    bars = reinterpret_cast<hopper::Mbarrier *>(static_cast<u8 *>(sharedMem) +
                                                pad + S::kBarrierOffset);
    if (threadIdx.x == 0) {
      for (int tile = 0; tile < S::kQueryTiles; ++tile) {
        queryFull(tile).init(1);
        queryEmpty(tile).init(4); // one arrival per consumer warp
      }
      for (int stage = 0; stage < S::kStages; ++stage) {
        kFull(stage).init(S::kKVFillers);
        vFull(stage).init(S::kKVFillers);
        // One arrival per consumer warp, once its wgmma has read the stage.
        kEmpty(stage).init(4 * S::kConsumers);
        vEmpty(stage).init(4 * S::kConsumers);
      }
      if constexpr (C::kClaimItems)
        for (int slot = 0; slot < S::kItemSlots; ++slot) {
          itemFull(slot).init(1);
          itemEmpty(slot).init(kItemReaderThreads);
        }
      hopper::fenceBarrierInit();
    }
    // The launch may overlap the one before it (grid_dependency.h): no
    // global access before the earlier grids are done.
    hopper::followPreviousGrids();
    __syncthreads();
    return true;
  }

  // --- Work items ----------------------------------------------------------
  // CTAs claim the work order's items dynamically, in its order (longest
  // first within each L2 section): a CTA whose items ran fast takes the
  // next one, where a static share would leave it idle at the launch's
  // tail. The producer's first thread claims each item with an atomic add
  // and hands it, decoded, to every other role through a ring of
  // shared-memory slots; a batch of -1 says the items ran out.
  /// Threads that read each claimed item from its slot: the consumers',
  /// and the producer's other gathering warps' (its first warp's lanes
  /// take it from the claiming lane).
  static constexpr int kItemReaderThreads =
      hopper::kWarpgroupThreads * S::kConsumers +
      (S::kCopyThreads > 32 ? S::kCopyThreads - 32 : 0);

  /// The launch's KV splits: one wherever the plan allows no more, so that
  /// the items' decoding divides by no run-time split count.
  ATTNC_DEVICE int kvSplits() const {
    return C::kKVSplits == 1 ? 1 : tp->attn.num_splits;
  }

  /// Slots every role walks: the most items this CTA may claim, or its
  /// static share's slots (the plan's static_order).
  ATTNC_DEVICE int workItems() const {
    if constexpr (C::kClaimItems)
      return claimBound(tp->order.items, int(gridDim.x));
    else
      return workSlots(tp->order, int(gridDim.x));
  }

  /// The item claimed for slot `k` (every role steps through its slots in
  /// order), into `w`; false once the items ran out. The claimer decodes
  /// the item once and publishes it whole, so that no other role divides.
  /// Every reading thread reads the slot and then releases it itself (the
  /// slot's empty barrier counts threads), so that each read is ordered
  /// before the next write by its own thread's arrival. Read by one lane
  /// and shuffled to the others, the item's values left the uniform
  /// registers (ptxas does not see a shuffle's result as warp-uniform): the
  /// tile loop grew by 5 % and prefill ran 5-13 % slower.
  ATTNC_DEVICE bool claimedItem(int k, WorkItem &w) {
    if (claimsDone)
      return false;
    int slot = k % S::kItemSlots;
    u32 phase = u32(k / S::kItemSlots) & 1u;
    if (producerThread && threadIdx.x < 32) {
      if (threadIdx.x == 0) {
        itemEmpty(slot).wait(phase ^ 1u); // a slot's first item finds it free
        int item = claimNext(k);
        if (item >= 0)
          w = workItem(tp->order, item, C::kNumQHeads, kvSplits());
        itemSlot(slot) = w;
        itemFull(slot).arrive();
      }
      if constexpr (S::kCopyThreads > 1) {
        w.batch = __shfl_sync(0xffffffffu, w.batch, 0);
        w.head = __shfl_sync(0xffffffffu, w.head, 0);
        w.split = __shfl_sync(0xffffffffu, w.split, 0);
        w.row_block = __shfl_sync(0xffffffffu, w.row_block, 0);
      }
    } else {
      itemFull(slot).wait(phase);
      w = itemSlot(slot);
      itemEmpty(slot).arrive();
    }
    if (w.batch < 0)
      claimsDone = true;
    return !claimsDone;
  }

  /// The item for slot `k`, or -1 past the last. Each claim is issued a
  /// slot ahead, so that its atomic's latency hides behind the current
  /// item's copies. The CTA's last claim counts it done claiming; the last
  /// CTA done zeroes both counters for the next launch (no CTA claims any
  /// more by then).
  ATTNC_DEVICE int claimNext(int k) {
    i32 *claims = tp->order.claims;
    if (k == 0)
      pendingClaim = atomicAdd(&claims[0], 1);
    int item = pendingClaim < tp->order.items ? pendingClaim : -1;
    if (item >= 0 && k + 1 < workItems())
      pendingClaim = atomicAdd(&claims[0], 1);
    else if (atomicAdd(&claims[1], 1) == int(gridDim.x) - 1) {
      atomicExch(&claims[0], 0);
      atomicExch(&claims[1], 0);
    }
    return item;
  }

  /// Locates the item claimed for slot `k` (or in the static share's slot
  /// `k`); false when the items ran out (the slot is empty) or the item's
  /// rows are past the end of their request.
  ATTNC_DEVICE bool beginItem(int k) {
    ring += itemTiles;
    itemTiles = 0;
    // Initialized: left undefined on the paths that do not set it, the
    // item's values left the uniform registers (as in claimedItem).
    WorkItem w = {-1, 0, 0, 0};
    if constexpr (C::kClaimItems) {
      if (!claimedItem(k, w))
        return false;
    } else if (!cursor.next(tp->order, int(blockIdx.x), int(gridDim.x),
                            C::kNumQHeads, kvSplits(), w)) {
      return false;
    }
    qHead = w.head;
    kvHead = qHead / C::kGroup;
    if (!this->locate(tp->attn, w.batch, qHead, w.split,
                      w.row_block * S::kBlockM))
      return false;
    itemTiles = tileEnd - tileBegin;
    qRound = liveItems++;
    return true;
  }

  /// The role, from a warpgroup index the compiler sees is the same in
  /// every lane (a shuffle's result): ptxas serializes wgmma on paths whose
  /// condition it cannot prove warp-uniform.
  ATTNC_DEVICE bool isProducer() const {
    int warpgroup = __shfl_sync(
        0xffffffffu, int(threadIdx.x) / hopper::kWarpgroupThreads, 0);
    return warpgroup == 0;
  }

  // --- Producer -------------------------------------------------------------
  /// Gives the registers away; true for the threads that issue copies.
  ATTNC_DEVICE bool beginProducer() {
    hopper::lowerRegisterLimit<S::kProducerRegisters>();
    producerThread = true;
    if (threadIdx.x == 0) {
      hopper::prefetchTensorMap(tp->q);
      if constexpr (!S::kGatherKV) {
        hopper::prefetchTensorMap(tp->k);
        hopper::prefetchTensorMap(tp->v);
      }
    }
    return int(threadIdx.x) < S::kCopyThreads;
  }

  /// Loads the current item's query tiles, once the consumers are done
  /// with the previous item's, and its K/V tiles into the ring.
  ATTNC_DEVICE void produce() {
    if (threadIdx.x == 0)
      for (int c = 0; c < S::kConsumers; ++c) {
        qEmpty(c).wait(queryPhase() ^ 1u); // a tile's first item finds it free
        qFull(c).arriveExpectTx(QTile::kBytes);
        hopper::loadHeadTile<QTile>(qTile(c), tp->q, qFull(c),
                                    qToken0 + rowBegin + c * hopper::kWgmmaM,
                                    qHead);
      }
    if constexpr (S::kGatherKV)
      gatherTiles();
    else
      copyTiles();
  }

  /// K/V tiles through the copy engine. The first thread arms each
  /// barrier with the tile's bytes before any copy can complete on it.
  ATTNC_DEVICE void copyTiles() {
    for (int t = tileBegin; t < tileEnd; ++t) {
      int stage = stageOf(t);
      u32 parity = phaseOf(t) ^ 1u; // the first pass finds the stages free
      int key = tileAt(t) * S::kBlockN;
      kEmpty(stage).wait(parity);
      armForCopies(kFull(stage), KTile::kBytes);
      hopper::copyTile<C, KTile>(kTile(stage), tp->k, kFull(stage), *this, key,
                                 kvHead);
      vEmpty(stage).wait(parity);
      armForCopies(vFull(stage), VTile::kBytes);
      hopper::copyTile<C, VTile>(vTile(stage), tp->v, vFull(stage), *this, key,
                                 kvHead);
    }
  }
  ATTNC_DEVICE void armForCopies(hopper::Mbarrier &full, u32 bytes) {
    if (threadIdx.x == 0)
      full.arriveExpectTx(bytes);
    if constexpr (S::kCopyThreads > 1)
      __syncwarp();
  }

  /// K/V tiles gathered by every producer thread (kv_copies.h); the
  /// copies complete each thread's arrival on the stage's full barrier. A
  /// tile's page ids are looked up once for its K and its V.
  ATTNC_DEVICE void gatherTiles() {
    for (int t = tileBegin; t < tileEnd; ++t) {
      int stage = stageOf(t);
      u32 parity = phaseOf(t) ^ 1u; // the first pass finds the stages free
      int key0 = tileAt(t) * S::kBlockN;
      auto pages = hopper::lookUpTilePages<C>(*this, key0);
      kEmpty(stage).wait(parity);
      hopper::gatherTileRows<C, KTile, S::kD>(
          kTile(stage), p->k, p->k_page_stride, *this, key0, kvHead, pages);
      hopper::arriveWhenCopied(kFull(stage));
      vEmpty(stage).wait(parity);
      hopper::gatherTileRows<C, VTile, S::kDV>(
          vTile(stage), p->v, p->v_page_stride, *this, key0, kvHead, pages);
      hopper::arriveWhenCopied(vFull(stage));
    }
  }

  // --- Consumers ------------------------------------------------------------
  /// Row (0 or 1) of this thread's accumulators -> row within the CTA.
  ATTNC_DEVICE int localRow(int half) const {
    return hopper::kWgmmaM * consumer +
           hopper::AccumulatorLayout::row(thread, 2 * half);
  }

  // --- Turns ----------------------------------------------------------------
  // Consumer c waits on named barrier kFirstTurnBarrier + c before it issues
  // products and then arrives on the next consumer's: the turns go round,
  // on from one item to the next, so that the first consumer begins an item
  // while the last still stores the previous one. The last consumer opens
  // the CTA's first turn; the first consumer takes the last one left open
  // (endTurns), so that every turn opened is taken.
  static constexpr bool kTakeTurns = S::kConsumers > 1;
  static constexpr int kFirstTurnBarrier = 1;
  static constexpr int kTurnThreads = 2 * hopper::kWarpgroupThreads;
  static_assert(kFirstTurnBarrier + S::kConsumers <= 16,
                "a CTA has 16 named barriers");

  ATTNC_DEVICE void awaitTurn() {
    if constexpr (kTakeTurns)
      hopper::namedBarrierSync(kFirstTurnBarrier + consumer, kTurnThreads);
  }
  ATTNC_DEVICE void passTurn() {
    if constexpr (kTakeTurns)
      hopper::namedBarrierArrive(
          kFirstTurnBarrier + (consumer + 1) % S::kConsumers, kTurnThreads);
  }
  /// Opens the CTA's first turn at its first item with tiles.
  ATTNC_DEVICE void openTurns() {
    if (turnsOpen || tileBegin >= tileEnd)
      return;
    turnsOpen = true;
    if (kTakeTurns && consumer == S::kConsumers - 1)
      hopper::namedBarrierArrive(kFirstTurnBarrier, kTurnThreads);
  }
  /// After the consumer's last item: takes the turn the last consumer's last
  /// pass opened.
  ATTNC_DEVICE void endTurns() {
    if (kTakeTurns && turnsOpen && consumer == 0)
      awaitTurn();
  }

  ATTNC_DEVICE void beginConsumer() {
    hopper::raiseRegisterLimit<S::kConsumerRegisters>();
    producerThread = false;
    turnsOpen = false;
    // Warp-uniform as far as the compiler can see (see isProducer).
    consumer = __shfl_sync(0xffffffffu,
                           int(threadIdx.x) / hopper::kWarpgroupThreads, 0) -
               1;
    thread = threadIdx.x % hopper::kWarpgroupThreads;
  }

  /// Clears the rows' state for the current item, opens the CTA's first
  /// turn at its first item with tiles, and waits for the item's queries.
  ATTNC_DEVICE void beginRows() {
    for (int half = 0; half < 2; ++half) {
      rowMax[half] = negInf();
      rowSum[half] = 0.0f;
      slope[half] = this->slopeOf(rowBegin + localRow(half));
      if constexpr (kHoldAlibi) {
        // The bias slope x (key - position) in units of the raw products.
        slope[half] *= fastRcp(this->scale());
        int position =
            this->queryOf(rowBegin + localRow(half)) + this->kvLen - this->qLen;
        alibiRow[half] = -slope[half] * float(position);
      }
      if constexpr (C::kSegments) {
        int row = localRow(half);
        rowSegment[half] =
            row < rows ? p->q_segments[qToken0 + this->queryOf(rowBegin + row)]
                       : 0;
      }
    }
    hopper::zero(o);
    scoredTile = -1;
    valuesTile = -1;
    openTurns();
    qFull(consumer).wait(queryPhase());
  }

  /// Hands the query tile back to the producer once the item's scores are
  /// done, or with two tiles once the output staged through it is stored
  /// (StagedOutputRows::store fences the staging for the copy engine).
  ATTNC_DEVICE void releaseQuery() { release(qEmpty(consumer)); }

  /// Each warp of the consumer arrives once all its lanes are done with
  /// the stage.
  ATTNC_DEVICE void release(hopper::Mbarrier &empty) {
    __syncwarp();
    empty.arriveIf(thread % 32 == 0);
  }

  /// Waits for a K or V stage to land. Gathered tiles were written through
  /// the generic proxy: a fence orders them before wgmma's reads.
  ATTNC_DEVICE void awaitTile(hopper::Mbarrier &full, u32 parity) {
    full.wait(parity);
    if constexpr (S::kGatherKV)
      hopper::fenceProxyAsync();
  }

  /// Issues S = Q.K^T for tile `t` once its K stage has landed.
  ATTNC_DEVICE void issueScores(int t) {
    awaitTile(kFull(stageOf(t)), phaseOf(t));
    hopper::issueQK<Elem, QTile, KTile>(s, qTile(consumer), kTile(stageOf(t)));
    scoredTile = t;
  }

  /// Issues O += P.V for tile `t` once its V stage has landed; P holds
  /// that tile's probabilities.
  ATTNC_DEVICE void issueValues(int t) {
    awaitTile(vFull(stageOf(t)), phaseOf(t));
    zeroValuesPastEnd(t);
    hopper::issuePV<Elem, VTile>(o, pf, vTile(stageOf(t)));
    valuesTile = t;
  }

  /// The values of tile `t`'s rows past the request's last key, zeroed
  /// where they may be anything (kZeroRowsPastEnd: a paged or ragged tile
  /// that holds the request's end, one per item at most). The first
  /// consumer zeroes them alone, in its turn and before its P.V: every
  /// consumer issues tile t's P.V in the same turn of the round, and the
  /// first consumer's turn comes first (openTurns), so the turn it passes
  /// on orders the stores before the others' reads, as its own named
  /// barrier does before its own.
  static constexpr int kZeroedBarrier = kFirstTurnBarrier + S::kConsumers;
  static_assert(kZeroedBarrier < 16, "a CTA has 16 named barriers");
  ATTNC_DEVICE void zeroValuesPastEnd(int t) {
    if constexpr (S::kZeroRowsPastEnd) {
      int keys = this->kvLen - tileAt(t) * S::kBlockN; // 1..kBlockN
      // A vote: ptxas sees the branch is warp-uniform (waitValues).
      if (__all_sync(0xffffffffu, consumer == 0 && keys < S::kBlockN)) {
        hopper::zeroRowsFrom<VTile, hopper::kWarpgroupThreads>(
            vTile(stageOf(t)), keys, thread);
        hopper::fenceProxyAsync();
        hopper::namedBarrierSync(kZeroedBarrier, hopper::kWarpgroupThreads);
      }
    }
  }

  /// Waits for the scores, leaving `Pending` later groups (a P.V issued
  /// after them) in flight, and releases their K stage.
  template <int Pending> ATTNC_DEVICE void waitScores() {
    hopper::wgmmaWait<Pending>(s);
    release(kEmpty(stageOf(scoredTile)));
  }

  /// Waits for the P.V in flight, if any, and releases its V stage. With
  /// none in flight the wait returns at once.
  ///
  /// The wait sits in both arms of a branch on purpose. In one block with
  /// the softmax's exponentials, ptxas scheduled it ahead of them, for
  /// every tile, and the softmax stalled instead of overlapping the P.V.
  /// The condition is the same in every warp of the warpgroup, as the wait
  /// is a warpgroup-wide instruction: a condition of each warp's own (its
  /// rows' rescale) made compute-sanitizer's synccheck report warps
  /// reaching it at different places. The vote shows ptxas that the
  /// condition is warp-uniform; a branch it cannot prove so serializes
  /// every wgmma.
  ATTNC_DEVICE void waitValues() {
    if (__all_sync(0xffffffffu, valuesTile >= 0)) {
      hopper::wgmmaWait<0>(o);
      release(vEmpty(stageOf(valuesTile)));
      valuesTile = -1;
    } else {
      hopper::wgmmaWait<0>(o);
    }
  }

  /// Scores are held in units the softmax scales inside exp2's argument
  /// (one FFMA per score instead of a multiply and a subtraction), with
  /// logitScale() converting them to base-2 logits. Without modifiers they
  /// stay raw products; with a soft-cap alone they are tanh(raw x scale /
  /// cap), the cap and log2(e) going into logitScale(); with ALiBi alone
  /// they are raw products plus the bias over the scale (kHoldAlibi). A
  /// positive scale (the verifiers') keeps the row maxima of the held
  /// scores the maxima of the logits.
  static constexpr bool kHoldRaw = !Rows::kMods;
  static constexpr bool kHoldTanh =
      C::kHasSoftcap && !C::kAlibi && !C::kScoreMod;
  /// ALiBi alone costs an add and a multiply-add a score this way, where
  /// the logit took a conversion, two multiplies and a multiply-add (P5
  /// 12 % faster).
  static constexpr bool kHoldAlibi =
      C::kAlibi && !C::kHasSoftcap && !C::kScoreMod;
  ATTNC_DEVICE float logitScale() const {
    return kHoldRaw || kHoldAlibi ? this->scaleLog2()
           : kHoldTanh            ? this->softcapLog2()
                                  : 1.0f;
  }

  /// Document segments: the rows' ids stay in registers (rowSegment) and
  /// each tile loads the ids of the thread's kBlockN / 4 columns once,
  /// instead of two loads per score, which spill the consumers.
  static constexpr int kColumnIds = C::kSegments ? S::kBlockN / 4 : 1;
  ATTNC_DEVICE void loadColumnSegments(int key0, int (&ids)[kColumnIds]) {
#pragma unroll
    for (int c = 0; c < kColumnIds; ++c) {
      int key = key0 + 8 * (c / 2) + 2 * (thread % 4) + c % 2;
      ids[c] = key < this->kvLen ? p->kv_segments[kvToken0 + key] : 0;
    }
  }

  /// The keys the thread's two rows see, from its first column of the
  /// tile at `key0` (the other columns are constant steps on from it).
  using SeenKeys = typename Rows::SeenKeys;
  ATTNC_DEVICE void seenKeysOfTile(int key0, SeenKeys (&seen)[2]) const {
    int first = key0 + hopper::AccumulatorLayout::col(thread, 0);
#pragma unroll
    for (int half = 0; half < 2; ++half)
      seen[half] = this->seenKeys(rowBegin + localRow(half), first);
  }

  /// Score `i` of the tile at `key0`, or -inf where its row does not see
  /// its key (`seen`: seenKeysOfTile; `columnIds`: the tile's document ids,
  /// with segments).
  ATTNC_DEVICE float maskedScore(float x, int i, int key0,
                                 const SeenKeys (&seen)[2],
                                 const int (&columnIds)[kColumnIds]) const {
    int half = (i / 2) % 2;
    bool shown;
    if constexpr (C::kMaskMod)
      // Tested as visible() tests it, the mask_mod last: behind the seen
      // keys' compares, NVVM wrote each hidden score inside the branch
      // around the region's loads, and document_mask ran 4 % slower.
      shown = this->template visible<false>(
          rowBegin + localRow(half),
          key0 + hopper::AccumulatorLayout::col(thread, i));
    else
      shown = seen[half].has(hopper::AccumulatorLayout::col(0, i));
    if constexpr (C::kSegments)
      shown &= rowSegment[half] == columnIds[2 * (i / 4) + i % 2];
    return shown ? x : negInf();
  }

  /// The modifiers on tile `t`'s scores, in the held units above, and with
  /// `Masked` the masks in the same pass (the plan's lean_tile_loop; other
  /// plans mask partial tiles apart, maskScores).
  template <bool Masked> ATTNC_DEVICE void modifyScores(int t) {
    if (kHoldRaw && !Masked)
      return;
    int key0 = tileAt(t) * S::kBlockN;
    int columnIds[kColumnIds];
    if constexpr (C::kSegments && Masked)
      loadColumnSegments(key0, columnIds);
    SeenKeys seen[2];
    if constexpr (Masked)
      seenKeysOfTile(key0, seen);
    // ALiBi's bias at the thread's first column of the tile; the others
    // are whole steps on (AccumulatorLayout::col).
    float alibiFirst[2];
    if constexpr (kHoldAlibi)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        alibiFirst[half] =
            fmaf(slope[half],
                 float(key0 + hopper::AccumulatorLayout::col(thread, 0)),
                 alibiRow[half]);
#pragma unroll
    for (int i = 0; i < hopper::Accumulator<S::kBlockN>::kRegs; ++i) {
      int half = (i / 2) % 2;
      float x = s.d[i];
      if constexpr (kHoldAlibi)
        x += fmaf(slope[half], float(hopper::AccumulatorLayout::col(0, i)),
                  alibiFirst[half]);
      else if constexpr (kHoldTanh)
        x = fastTanh(x * this->tanhScale());
      else if constexpr (!kHoldRaw)
        x = this->template logit<false, false>(
            x, rowBegin + localRow(half),
            key0 + hopper::AccumulatorLayout::col(thread, i), slope[half]);
      if constexpr (Masked)
        x = maskedScore(x, i, key0, seen, columnIds);
      s.d[i] = x;
    }
  }

  /// Hides the keys of partial tile `t` that its rows do not see, after its
  /// modifiers: apart from them, so that a tile loop builds the modifiers
  /// (a score_mod region among them) once, not once per arm of its partial
  /// branch.
  ATTNC_DEVICE void maskScores(int t) {
    int key0 = tileAt(t) * S::kBlockN;
    int columnIds[kColumnIds];
    if constexpr (C::kSegments)
      loadColumnSegments(key0, columnIds);
    SeenKeys seen[2];
    seenKeysOfTile(key0, seen);
#pragma unroll
    for (int i = 0; i < hopper::Accumulator<S::kBlockN>::kRegs; ++i)
      s.d[i] = maskedScore(s.d[i], i, key0, seen, columnIds);
  }

  /// Chains of maxima per row (hopper::rowMaxOf): one chain would sit on
  /// the softmax's critical path, between a consumer's turns.
  static constexpr int kChains = 4;

  /// New row maxima, exponentiated scores and their sums; then, once the
  /// previous tile's P.V has landed (waitValues says why the wait stays
  /// behind the exponentials), the output rescaled unless the warp's rows
  /// all kept their references, and P rounded.
  ATTNC_DEVICE void onlineSoftmax() {
    float alpha[2];
    hopper::exponentiateRows<kChains>(s, rowMax, rowSum, logitScale(), alpha);
    waitValues();
    hopper::rescaleRows(o, alpha);
    hopper::toAFragments<Elem>(s, pf);
  }

  // --- Epilogue -------------------------------------------------------------
  /// Normalizes and stores the rows' outputs and LSE (or, under split-KV,
  /// this split's partial state): staged through the query tile where the
  /// plan gave the consumer a second one and the launch has one split,
  /// else straight from the accumulator. A plan of one split (every
  /// warp-specialized plan attn-plan makes) with a second query tile
  /// compiles only the staged stores.
  ATTNC_DEVICE void finish() {
    waitValues();
    float factor[2], lse[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float sum = rowSum[half];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      factor[half] = sum > 0.0f ? fastRcp(sum) : 0.0f;
      lse[half] = sum > 0.0f
                      ? (rowMax[half] * logitScale() + fastLog2(sum)) * kLn2
                      : negInf();
    }
    if constexpr (S::kStagedOutput)
      if (C::kKVSplits == 1 || p->num_splits == 1) {
        storeStaged(factor, lse);
        return;
      }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      int row = localRow(half);
      if (row >= rows)
        continue;
      i64 outRow = i64(qToken0 + rowBegin + row) * C::kNumQHeads + qHead;
      // The split-KV branch stays under one split too. The rows past the
      // item's end diverge the warp here; without the branch ptxas put a
      // WARPSYNC before every wgmma of the head-dim-256 kernels, and with
      // a __syncwarp() after this loop instead it spilled a score_mod
      // region's consumers there (86 bytes).
      hopper::storeOutputRow<Out, S::kDV, C::kHasLse, /*MaySplit=*/true>(
          *p, split, outRow, 0, o, half, factor[half], thread, thread % 4 == 0,
          lse[half]);
    }
  }

  /// The epilogue through the item's query tile (staged_output.h); the
  /// LSE goes straight from the quad's first thread.
  ATTNC_DEVICE void storeStaged(const float (&factor)[2],
                                const float (&lse)[2]) {
    using Staged = hopper::StagedOutputRows<QTile, S::kDV>;
    Staged::template stage<Out>(qTile(consumer), o, factor, thread);
    int warpRow = hopper::kWgmmaM * consumer + 16 * (thread / 32);
    i64 firstRow = i64(qToken0 + rowBegin + warpRow) * C::kNumQHeads + qHead;
    if constexpr (C::kHasLse)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        if (thread % 4 == 0 && localRow(half) < rows)
          p->lse[firstRow + i64(localRow(half) - warpRow) * C::kNumQHeads] =
              lse[half];
    __syncwarp();
    Staged::template store<Out>(
        qTile(consumer), static_cast<Out *>(p->out) + firstRow * S::kDV,
        i64(C::kNumQHeads) * S::kDV, rows - warpRow, thread);
  }
};

#endif // ATTNC_IS_DEVICE

} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_PREFILL_H
