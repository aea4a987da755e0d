//===- hopper/row_gather.h - tiles gathered row by row with cp.async ------===//
//
// The copy engine writes whole 8-row swizzle atoms, so a paged cache whose
// pages hold a number of slots that is not a multiple of 8 cannot fill a
// tile with bulk copies. The producer warpgroup gathers such a tile row by
// row instead: 16 bytes per thread and copy, at the offsets TMA would have
// written (smem_layout.h), so wgmma reads it unchanged.
//
// cp.async writes through the generic proxy and wgmma reads through the
// async proxy. Each gathering thread has the stage's full barrier arrive
// once its copies land (arriveWhenCopied), and each consumer fences the
// proxies after its wait and before its wgmma reads the tile: the writes
// precede the fence through the barrier, the fence precedes the reads.
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

/// How the gathering warps share a tile: warp w copies rows [w kWarpRows,
/// (w + 1) kWarpRows), its lanes taking consecutive 16-byte chunks in row
/// order, so that one copy instruction reads whole rows (two of 256 bytes
/// at head dim 128) instead of a sector of each of 16 rows.
template <int TileRows, int Threads> struct GatherWarps {
  static constexpr int kWarps = Threads / 32;
  static_assert(Threads % 32 == 0 && TileRows % kWarps == 0,
                "whole warps share the rows evenly");
  static constexpr int kWarpRows = TileRows / kWarps;
  /// Registers of page ids per lane: lane j holds rows j and j + 32.
  static constexpr int kIdRegs = (kWarpRows + 31) / 32;
  static_assert(kIdRegs <= 2, "a warp gathers at most 64 rows");
};

/// The page ids of a warp's rows, one load per lane (GatherWarps).
template <int IdRegs> struct WarpPageIds {
  int id[IdRegs];
  /// Row r's id, from whichever lane looked it up; every lane must call.
  ATTNC_DEVICE int of(int r) const {
    int low = __shfl_sync(0xffffffffu, id[0], r % 32);
    if constexpr (IdRegs == 1)
      return low;
    int high = __shfl_sync(0xffffffffu, id[IdRegs - 1], r % 32);
    return r < 32 ? low : high;
  }
};

/// Looks up the page ids of warp `warp`'s rows: pageOf(row) for a row of
/// the tile. Lanes past the warp's rows hold 0, which no row reads.
template <class Warps, typename PageOfFn>
ATTNC_DEVICE WarpPageIds<Warps::kIdRegs> lookUpWarpRows(int warp, int lane,
                                                        PageOfFn pageOf) {
  WarpPageIds<Warps::kIdRegs> ids;
#pragma unroll
  for (int j = 0; j < Warps::kIdRegs; ++j) {
    int r = lane + 32 * j;
    ids.id[j] = r < Warps::kWarpRows ? pageOf(warp * Warps::kWarpRows + r) : 0;
  }
  return ids;
}

/// Issues warp `warp`'s copies of a Tile at `dst`: rowSource(r) gives the
/// first element of the warp's row r (it may shuffle: every lane calls
/// it). The caller has a barrier arrive once they land (arriveWhenCopied).
template <typename Tile, class Warps, typename RowSourceFn>
ATTNC_DEVICE void gatherWarpRows(u32 dst, int warp, int lane,
                                 RowSourceFn rowSource) {
  static_assert(Tile::kRows == Warps::kWarps * Warps::kWarpRows,
                "the warps share this tile's rows");
  constexpr u32 kChunks = Tile::kCols / 8;
  constexpr u32 kWarpRows = Warps::kWarpRows;
  u32 firstRow = u32(warp) * kWarpRows;
  if constexpr (32 % kChunks == 0 && kWarpRows % (32 / kChunks) == 0) {
    // Rows of 2 to 32 chunks: a lane keeps one chunk column, and each copy
    // instruction takes 32 / kChunks whole rows.
    constexpr u32 kRowsPerCopy = 32 / kChunks;
    u32 chunk = u32(lane) % kChunks;
#pragma unroll 2
    for (u32 r = u32(lane) / kChunks; r < kWarpRows; r += kRowsPerCopy) {
      const u16 *src = rowSource(int(r));
      cpAsync16(dst + Tile::offset(firstRow + r, chunk * 8), src + chunk * 8);
    }
  } else if constexpr (kChunks > 32) {
    // Rows longer than a warp's copy (latent rows of 40 or 72 chunks): a
    // lane keeps the chunk columns lane, lane + 32, ..., and the warp walks
    // its rows. A lane's chunks of one row are 256 columns apart, whole
    // swizzle blocks, so each row's source and destination are computed
    // once and its copies differ by constant offsets; only the last chunk
    // column is partial.
    static_assert(256 % Tile::kBlockCols == 0, "256 columns: whole blocks");
    constexpr u32 kLaneChunks = (kChunks + 31) / 32;
    constexpr u32 kStrideBytes = 256 / Tile::kBlockCols * Tile::kBlockBytes;
    bool lastInRow = u32(lane) + 32 * (kLaneChunks - 1) < kChunks;
#pragma unroll 2
    for (u32 r = 0; r < kWarpRows; ++r) {
      const u16 *src = rowSource(int(r)) + lane * 8;
      u32 rowDst = dst + Tile::offset(firstRow + r, u32(lane) * 8);
#pragma unroll
      for (u32 j = 0; j + 1 < kLaneChunks; ++j)
        cpAsync16(rowDst + j * kStrideBytes, src + j * 256);
      if (lastInRow)
        cpAsync16(rowDst + (kLaneChunks - 1) * kStrideBytes,
                  src + (kLaneChunks - 1) * 256);
    }
  } else {
    // Rows of 10, 12, 14, ... chunks: the lanes walk the chunks in order.
    constexpr u32 kCopies = kWarpRows * kChunks;
#pragma unroll 1
    for (u32 e = u32(lane); e < (kCopies + 31) / 32 * 32; e += 32) {
      u32 r = e / kChunks < kWarpRows ? e / kChunks : kWarpRows - 1;
      const u16 *src = rowSource(int(r));
      u32 chunk = e % kChunks;
      if (e < kCopies)
        cpAsync16(dst + Tile::offset(firstRow + r, chunk * 8), src + chunk * 8);
    }
  }
}

/// Arrives on a gathered stage's full barrier (initialized for every
/// gathering thread) once all of this thread's copies so far have landed,
/// without waiting for them: the copies complete the arrival.
ATTNC_DEVICE void arriveWhenCopied(Mbarrier &full) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(
                   full.address())
               : "memory");
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_ROW_GATHER_H
