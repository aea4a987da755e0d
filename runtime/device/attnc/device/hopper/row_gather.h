//===- hopper/row_gather.h - tiles gathered row by row with cp.async ------===//
//
// The copy engine writes whole 8-row swizzle atoms, so a paged cache whose
// pages hold a number of slots that is not a multiple of 8 cannot fill a
// tile with bulk copies. The producer warpgroup gathers such a tile row by
// row instead: 16 bytes per thread and copy, at the offsets TMA would have
// written (smem_layout.h), so wgmma reads it unchanged.
//
// cp.async writes through the generic proxy and wgmma reads through the
// async proxy. The stage's full barrier therefore cannot be completed by
// the copies themselves: each thread waits for its own copies, fences them
// for the async proxy, and then arrives (GatheredStage::complete).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_ROW_GATHER_H
#define ATTNC_DEVICE_HOPPER_ROW_GATHER_H

#include "attnc/device/copy.h"
#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

#if ATTNC_IS_DEVICE

/// Where a row of a gathered tile comes from: its first element, and
/// whether it exists (rows past the end are zero-filled and not read).
struct RowSource {
  const u16 *first;
  bool valid;
};

/// Issues the copies of every row of a Tile at `dst` from `Threads`
/// threads, `thread` being this one; `rowSource(row)` locates a row. The
/// caller commits them as a group.
template <typename Tile, int Threads, typename RowSourceFn>
ATTNC_DEVICE void gatherTileRows(u32 dst, int thread, RowSourceFn rowSource) {
  constexpr int kChunks = Tile::kCols / 8; // 16-byte chunks per row
  // Each thread keeps one chunk column and steps over rows, one row lookup
  // per copy. Rows of 12 or 24 chunks leave the last 8 threads idle.
  constexpr int kRowStep = Threads / kChunks;
  static_assert(kRowStep > 0, "a row's chunks fit the threads");
  if (thread >= kRowStep * kChunks)
    return;
  int chunk = thread % kChunks;
#pragma unroll 1
  for (int row = thread / kChunks; row < Tile::kRows; row += kRowStep) {
    RowSource src = rowSource(row);
    cpAsync16(dst + Tile::offset(row, chunk * 8), src.first + chunk * 8,
              src.valid);
  }
}

/// Completes a gathered stage's full barrier (initialized for every
/// gathering thread) once all but the `Pending` most recent groups of this
/// thread's copies have landed.
template <int Pending> ATTNC_DEVICE void completeGathered(Mbarrier &full) {
  cpAsyncWait<Pending>();
  fenceProxyAsync();
  full.arrive();
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_ROW_GATHER_H
