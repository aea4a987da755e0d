//===- hopper/kv_copies.h - how a producer fills a KV tile ----------------===//
//
// The warp-specialized schedules (prefill.h, latent.h) fill a KV tile of
// C::kBlockN keys the same way: with the copy engine in boxes of
// C::kKVBoxRows keys (the whole tile, or the slots of a tile inside one
// page: the compiler's choice, which the host's tensor maps share), or,
// from pages that are not whole 8-row swizzle atoms, gathered row by row by
// the producer warpgroup with cp.async (row_gather.h), or, from an fp8
// cache, staged with cp.async and widened in place (row_widen.h). Both
// shapes inherit these facts from here, so that the two kernels cannot
// disagree on them, and both producers copy their tiles with the functions
// below.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_KV_COPIES_H
#define ATTNC_DEVICE_HOPPER_KV_COPIES_H

#include "attnc/device/abi.h"
#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/row_gather.h"
#include "attnc/device/hopper/row_widen.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/tma.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/params.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

template <class C> struct KVCopies {
  /// The warpgroups besides the producer (the plan's `warps` / 4 - 1).
  static constexpr int kConsumers = C::kWarpsM / 4 - 1;
  static constexpr bool kPaged = C::kKVLayout == TokenLayout::Paged;
  static constexpr int kKVBoxRows = C::kKVBoxRows;
  static constexpr bool kGatherKV = !boxesFillAtoms(kKVBoxRows);
  /// An fp8 cache: the producer stages and widens its rows (KernelOp's
  /// getKVBoxRows gives them boxes of one row, for which the host encodes
  /// no tensor map).
  static constexpr bool kWidenKV = sizeof(typename C::KVElem) == 1;
  static_assert(C::kBlockN % kKVBoxRows == 0 &&
                    (!kPaged || C::kPageSize % kKVBoxRows == 0) &&
                    (kPaged || !kGatherKV || kWidenKV) &&
                    (!kWidenKV || kKVBoxRows == 1),
                "boxes tile the KV tile and stay inside a page; only pages "
                "are gathered, and fp8 rows are widened one by one");
  static constexpr int kKVBoxes = C::kBlockN / kKVBoxRows;
  /// Producer threads that copy K/V: one issues a contiguous tile's bulk
  /// copies; a warp issues a paged tile's boxes, a lane per page, so that
  /// their page-table reads overlap; the warpgroup gathers rows.
  static constexpr int kCopyThreads = kGatherKV ? kWarpgroupThreads
                                      : kPaged && kKVBoxes > 1 ? 32
                                                               : 1;
  /// Threads that arrive on a stage's full barrier: the one that arms it
  /// for the copy engine, or every gathering thread.
  static constexpr int kKVFillers = kGatherKV ? kCopyThreads : 1;
  /// The producer warpgroup's setmaxnreg budget: 40 registers to issue
  /// copies, 56 to gather rows (the copy loop, unrolled, needs them: 22 ->
  /// 12 instructions per copy at head dim 128), 72 to widen them (the
  /// rows' sources, page ids two tiles ahead and a block's chunks,
  /// row_widen.h; the consumers then keep 216 and spill nothing). Beside
  /// three consumers the issuer keeps 32: 40 would leave each consumer 152
  /// registers, where 128-key tiles at head dim 64 spill, and 32 leaves 160.
  static constexpr int kIssueRegisters = kConsumers > 2 ? 32 : 40;
  static constexpr int kProducerRegisters = kWidenKV    ? 72
                                            : kGatherKV ? 56
                                                        : kIssueRegisters;
  /// Whether a tile's rows past its request's last key may hold anything,
  /// NaN and Inf among it, so that the consumers zero their values there
  /// (zeroRowsFrom): the copy engine loads whole boxes, and the box of a
  /// request's last page holds the page's slots that were never written
  /// (a cache from torch.empty), a box past that page those slots again,
  /// and a ragged tile past the last request the buffer's unused tail.
  /// Their scores are masked by a select, but P.V multiplies their
  /// probabilities, 0, by the values, and 0 x NaN is NaN. Gathered and
  /// widened rows past the end copy the request's last key instead
  /// (keyRowSource), and a dense tile's rows past a request's end are the
  /// next request's keys or the copy engine's zeros past the tensor.
  static constexpr bool kZeroRowsPastEnd =
      !kGatherKV && C::kKVLayout != TokenLayout::Dense;
};

#if ATTNC_IS_DEVICE

/// The gathering warps of a KV tile: the producer warpgroup, a quarter of
/// the rows each.
template <class C>
using KVGatherWarps = GatherWarps<C::kBlockN, kWarpgroupThreads>;

/// The page of key `key` (a key past the request: of its last key).
template <class C, class Rows>
ATTNC_DEVICE int pageOfKey(const Rows &rows, int key) {
  return rows.p
      ->page_indices[rows.pageBegin + rows.lastKeyFrom(key) / C::kPageSize];
}

/// The page ids of this warp's rows of the tile whose first key is `key0`
/// (`rows` is the CTA's MaskedRows: its request's keys and pages).
template <class C, class Rows>
ATTNC_DEVICE WarpPageIds<KVGatherWarps<C>::kIdRegs>
lookUpTilePages(const Rows &rows, int key0) {
  int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  return lookUpWarpRows<KVGatherWarps<C>>(
      warp, lane, [&](int row) { return pageOfKey<C>(rows, key0 + row); });
}

/// The first byte of key `key`'s row of KV head `head` (`Dim` elements),
/// in page `page` where the cache is paged (pageOfKey). A key past the
/// request reads its last key, which is masked.
template <class C, int Dim, class Rows>
ATTNC_DEVICE const u8 *keyRowSource(const void *cache, i64 pageStride,
                                    const Rows &rows, int key, int head,
                                    int page) {
  using Elem = typename C::KVElem;
  const Elem *base = static_cast<const Elem *>(cache);
  key = rows.lastKeyFrom(key);
  const Elem *src;
  if constexpr (KVCopies<C>::kPaged)
    src = base + pageStride * u32(page) +
          pagedSlotOffset(C::kPageOrder, head, int(u32(key) % C::kPageSize),
                          C::kPageSize, C::kNumKVHeads, Dim);
  else
    src = base + (i64(rows.kvToken0 + key) * C::kNumKVHeads + head) * Dim;
  return reinterpret_cast<const u8 *>(src);
}

/// This warp's rows of the K or V tile whose first key is `key0` (Dim
/// columns of KV head `head`), from the pages lookUpTilePages found; the
/// caller has the stage's full barrier arrive once they land
/// (arriveWhenCopied).
template <class C, typename Tile, int Dim, class Rows>
ATTNC_DEVICE void
gatherTileRows(u32 dst, const void *cache, i64 pageStride, const Rows &rows,
               int key0, int head,
               const WarpPageIds<KVGatherWarps<C>::kIdRegs> &pages) {
  const u16 *base = static_cast<const u16 *>(cache);
  int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  int warpKey0 = key0 + warp * KVGatherWarps<C>::kWarpRows;
  gatherWarpRows<Tile, KVGatherWarps<C>>(dst, warp, lane, [&](int r) {
    u32 page = u32(pages.of(r));
    u32 slot = u32(rows.lastKeyFrom(warpKey0 + r)) % u32(C::kPageSize);
    return base + pageStride * page +
           pagedSlotOffset(C::kPageOrder, head, int(slot), C::kPageSize,
                           C::kNumKVHeads, Dim);
  });
}

/// Keys [key, key + kBlockN) of KV head `head` into a tile through the copy
/// engine, issued by this thread and the others of KVCopies::kCopyThreads.
/// A paged box past the request's last page reads that page again: the
/// keys are masked, but every byte the barrier expects must arrive. What
/// the rows past the request's last key hold may be anything (never
/// written slots): the consumers zero their values (kZeroRowsPastEnd).
template <class C, typename Tile, class Rows>
ATTNC_DEVICE void copyTile(u32 dst, const TensorMap &map, Mbarrier &bar,
                           const Rows &rows, int key, int head,
                           BlockShare share = {}) {
  using Copies = KVCopies<C>;
  if constexpr (!Copies::kPaged) {
    loadHeadTile<Tile>(dst, map, bar, rows.kvToken0 + key, head, share);
  } else {
    constexpr int page = C::kPageSize;
    int lastPage = rows.pageBegin + (rows.kvLen + page - 1) / page - 1;
#pragma unroll 1
    for (int box = threadIdx.x; box < Copies::kKVBoxes;
         box += Copies::kCopyThreads) {
      int row = box * Copies::kKVBoxRows;
      int slotKey = key + row;
      int entry = rows.pageBegin + slotKey / page;
      entry = entry < lastPage ? entry : lastPage;
      loadPageRows<Tile, Copies::kKVBoxRows, C::kPageOrder == PageOrder::HND>(
          dst, map, bar, row, rows.p->page_indices[entry], slotKey % page, head,
          share);
    }
  }
}

/// Zeroes rows [firstRow, Tile::kRows) of column blocks [FirstBlock,
/// EndBlock) of the tile at shared address `tile`, spread over `Threads`
/// threads (this one `thread`) in 16-byte stores: a tile's rows past its
/// request's last key (KVCopies::kZeroRowsPastEnd). A block's row is 128
/// contiguous bytes whose swizzle only permutes its chunks, so whole rows
/// need no swizzle. Called after the tile's full barrier was waited for
/// (the copy engine's bytes are then this thread's to overwrite); the
/// caller fences the stores for wgmma (fenceProxyAsync) and then meets the
/// threads whose wgmma reads them.
template <typename Tile, int Threads, int FirstBlock = 0,
          int EndBlock = Tile::kBlocks>
ATTNC_DEVICE void zeroRowsFrom(u32 tile, int firstRow, int thread) {
  static_assert(0 <= FirstBlock && FirstBlock < EndBlock &&
                    EndBlock <= Tile::kBlocks,
                "whole column blocks of the tile");
  constexpr u32 kChunkBytes = 16;
  u32 first = u32(firstRow) * kSwizzleBytes + u32(thread) * kChunkBytes;
#pragma unroll
  for (int b = FirstBlock; b < EndBlock; ++b)
#pragma unroll 1
    for (u32 at = first; at < u32(Tile::kBlockBytes);
         at += Threads * kChunkBytes)
      storeShared16(tile + b * Tile::kBlockBytes + at, make_uint4(0, 0, 0, 0));
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_KV_COPIES_H
