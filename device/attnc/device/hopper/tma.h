//===- hopper/tma.h - bulk tensor copies into swizzled tiles -------------===//
//
// The copy engine (TMA) moves a box of a tensor from global to shared
// memory on its own and completes the bytes on an mbarrier. What it copies
// is described by a tensor map the host encodes (cuTensorMapEncodeTiled,
// runtime/cuda/TensorMap.h) and passes in the kernel's parameters, which
// must be `const __grid_constant__` so that the map stays in parameter
// space and its address may be taken.
//
// Coordinates are element indices, innermost dimension first, and may lie
// outside the tensor: out-of-bounds elements are written as zeros and still
// count towards the bytes the barrier expects.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_TMA_H
#define ATTNC_DEVICE_HOPPER_TMA_H

#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

/// An encoded tensor map: CUtensorMap's 128 opaque bytes and alignment, so
/// that parameter structs holding one have the same layout on both sides.
struct alignas(128) TensorMap {
  u64 opaque[16];
};
static_assert(sizeof(TensorMap) == 128, "CUtensorMap is 128 bytes");

#if ATTNC_IS_DEVICE

/// Fetches the map into the descriptor cache ahead of the first copy.
ATTNC_DEVICE void prefetchTensorMap(const TensorMap &map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(&map) : "memory");
}

/// Copies the box at (c0, c1) of a 2D map to shared address `dst`.
ATTNC_DEVICE void tmaLoad2D(u32 dst, const TensorMap &map, Mbarrier &bar,
                            i32 c0, i32 c1) {
  const void *m = &map;
  u32 b = bar.address();
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
               ".mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
               :
               : "r"(dst), "l"(m), "r"(b), "r"(c0), "r"(c1)
               : "memory");
}

/// Copies the box at (c0, c1, c2) of a 3D map to shared address `dst`;
/// with a `multicast` mask of the cluster's CTAs, to the same address in
/// each of them, completing on the same barrier in each.
ATTNC_DEVICE void tmaLoad3D(u32 dst, const TensorMap &map, Mbarrier &bar,
                            i32 c0, i32 c1, i32 c2, u16 multicast = 0) {
  const void *m = &map;
  u32 b = bar.address();
  if (multicast)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4, %5}], [%2], %6;"
                 :
                 : "r"(dst), "l"(m), "r"(b), "r"(c0), "r"(c1), "r"(c2),
                   "h"(multicast)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
                 "[%2];"
                 :
                 : "r"(dst), "l"(m), "r"(b), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

/// Copies the box at (c0, c1, c2, c3) of a 4D map to shared address `dst`
/// (to each CTA of a `multicast` mask, as tmaLoad3D).
ATTNC_DEVICE void tmaLoad4D(u32 dst, const TensorMap &map, Mbarrier &bar,
                            i32 c0, i32 c1, i32 c2, i32 c3, u16 multicast = 0) {
  const void *m = &map;
  u32 b = bar.address();
  if (multicast)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4, %5, %6}], [%2], %7;"
                 :
                 : "r"(dst), "l"(m), "r"(b), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                   "h"(multicast)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile"
                 ".mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
                 "[%2];"
                 :
                 : "r"(dst), "l"(m), "r"(b), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}

/// Which column blocks of a tile a CTA loads: all of them into its own
/// shared memory, or, in a cluster that shares its loads (cluster.h),
/// blocks [first, end) into every CTA of `multicast`.
struct BlockShare {
  int first = 0, end = 1 << 30;
  u16 multicast = 0;
  ATTNC_DEVICE bool owns(int block) const {
    return block >= first && block < end;
  }
};

/// Loads tokens [token, token + Tile::kRows) of `head` of an attention
/// operand ([tokens, heads, dim], map from attentionOperandMap) into a tile
/// at `dst`: one box of [Tile::kRows, 1, 64] per column block. The caller
/// has armed `bar` with arriveExpectTx(Tile::kBytes).
template <typename Tile>
ATTNC_DEVICE void loadHeadTile(u32 dst, const TensorMap &map, Mbarrier &bar,
                               i32 token, i32 head, BlockShare share = {}) {
#pragma unroll
  for (int b = 0; b < Tile::kBlocks; ++b)
    if (share.owns(b))
      tmaLoad3D(dst + b * Tile::kBlockBytes, map, bar, b * Tile::kBlockCols,
                head, token, share.multicast);
}

/// Loads `BoxRows` consecutive slots from `slot` of one page of an
/// attention operand's paged cache (map from pagedOperandMap: NHD pages
/// [page, heads, dim] or HND pages [heads, page, dim]) into rows [row,
/// row + BoxRows) of a tile at `dst`, one box per column block. Rows start
/// on a swizzle atom (BoxRows and `row` multiples of 8), so the copy
/// engine's swizzle, a function of the shared address, is the whole
/// tile's.
template <typename Tile, int BoxRows, bool HeadMajorPages>
ATTNC_DEVICE void loadPageRows(u32 dst, const TensorMap &map, Mbarrier &bar,
                               int row, i32 page, i32 slot, i32 head,
                               BlockShare share = {}) {
  static_assert(BoxRows % kAtomRows == 0, "boxes start on swizzle atoms");
#pragma unroll
  for (int b = 0; b < Tile::kBlocks; ++b) {
    if (!share.owns(b))
      continue;
    u32 at = dst + b * Tile::kBlockBytes + u32(row) * kSwizzleBytes;
    if (HeadMajorPages)
      tmaLoad4D(at, map, bar, b * Tile::kBlockCols, slot, head, page,
                share.multicast);
    else
      tmaLoad4D(at, map, bar, b * Tile::kBlockCols, head, slot, page,
                share.multicast);
  }
}

/// Loads rows [row, row + Tile::kRows) and columns [col, col + Tile::kCols)
/// of a 2D map whose boxes are [Tile::kRows, 64] into a tile at `dst`.
template <typename Tile>
ATTNC_DEVICE void loadTile2D(u32 dst, const TensorMap &map, Mbarrier &bar,
                             i32 row, i32 col) {
#pragma unroll
  for (int b = 0; b < Tile::kBlocks; ++b)
    tmaLoad2D(dst + b * Tile::kBlockBytes, map, bar, col + b * Tile::kBlockCols,
              row);
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_TMA_H
