//===- hopper/row_widen.h - fp8 rows widened into 16-bit tiles ------------===//
//
// wgmma takes 16-bit operands from shared memory, and an fp8 cache is read
// at one byte per element: the producer warpgroup loads a tile's fp8 rows
// into registers, widens each 16-byte chunk (16 values) into two 16-bit
// chunks, exactly (every e4m3 and e5m2 value is a bf16 and an f16), and
// stores them at the offsets the copy engine would have written
// (smem_layout.h), so the consumers read the tile unchanged. The copy engine
// cannot widen, so every row goes through registers.
//
// A warp widens GatherWarps' rows (row_gather.h). Each lane first finds one
// row's source (lane r: row r), then the warp walks the rows' chunks in
// order, lane l taking chunks l, l + 32, ..., and reading its row's source
// from the lane that found it. The loads of a batch are all in flight
// before the first is widened. The rows of the next tile are prefetched
// into L2 one tile ahead, so that a batch's loads wait for L2, not DRAM.
//
// The stores go through the generic proxy and wgmma reads through the
// async proxy: each widening thread arrives on the stage's full barrier
// after its stores, and each consumer fences the proxies after its wait,
// as for gathered rows (row_gather.h).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_ROW_WIDEN_H
#define ATTNC_DEVICE_HOPPER_ROW_WIDEN_H

#include "attnc/device/hopper/row_gather.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/prelude.h"
#include "attnc/device/widen.h"

namespace attnc {
namespace hopper {

#if ATTNC_IS_DEVICE

/// Loads 16 bytes of a cache the kernel does not write.
ATTNC_DEVICE uint4 loadCache16(const void *src) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(src));
  return v;
}

/// Starts bringing `bytes` bytes at `src` (16-byte aligned, a multiple of
/// 16) into L2, without waiting.
ATTNC_DEVICE void prefetchL2(const void *src, u32 bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src),
               "r"(bytes)
               : "memory");
}

/// An f16 pair as a bf16 pair, exactly when both are bf16 values (as every
/// widened fp8 value is).
ATTNC_DEVICE u32 f16x2ToBf16x2(u32 pair) {
  u32 out;
  asm("{ .reg .f16 lo, hi; .reg .f32 flo, fhi;\n"
      "  mov.b32 {lo, hi}, %1;\n"
      "  cvt.f32.f16 flo, lo; cvt.f32.f16 fhi, hi;\n"
      "  cvt.rn.bf16x2.f32 %0, fhi, flo; }"
      : "=r"(out)
      : "r"(pair));
  return out;
}

/// Sixteen fp8 values to sixteen `Wide` (bf16 or f16) values, in order.
template <typename Narrow, typename Wide>
ATTNC_DEVICE void widenChunkTo(const uint4 &in, uint4 (&out)[2]) {
  widenChunk<Narrow>(in, out);
  if constexpr (!kSame<Wide, f16>) {
    static_assert(kSame<Wide, bf16>, "fp8 widens to bf16 or f16");
    for (uint4 &half : out) {
      half.x = f16x2ToBf16x2(half.x);
      half.y = f16x2ToBf16x2(half.y);
      half.z = f16x2ToBf16x2(half.z);
      half.w = f16x2ToBf16x2(half.w);
    }
  }
}

/// Rows of `Tile::kCols` fp8 values widened by `Warps`: how many 16-byte
/// chunks a row has and a lane takes, and how many of a lane's loads are
/// in flight at once.
template <typename Tile, class Warps> struct WidenedRows {
  static constexpr u32 kChunks = Tile::kCols / 16;
  static constexpr u32 kCopies = Warps::kWarpRows * kChunks;
  static constexpr u32 kLaneCopies = (kCopies + 31) / 32;
  /// 16 registers of loads: what the producer's 72 (KVCopies) leave beside
  /// the item's state and the widened halves without spilling; 6 need 80,
  /// which spills the consumers.
  static constexpr u32 kBatch = 4;
  static_assert(Tile::kCols % 16 == 0, "rows of whole 16-byte fp8 chunks");
  static_assert(Warps::kWarpRows <= 32, "a lane finds each row's source");
};

/// Prefetches into L2 the `RowBytes`-byte row this lane found (lanes past
/// the warp's rows prefetch nothing).
template <class Warps, u32 RowBytes>
ATTNC_DEVICE void prefetchLaneRow(int lane, const void *laneRow) {
  static_assert(RowBytes % 16 == 0, "bulk prefetches move 16-byte units");
  if (lane < Warps::kWarpRows)
    prefetchL2(laneRow, RowBytes);
}

/// Widens warp `warp`'s rows of an fp8 tile into the `Wide` tile at `dst`:
/// lane r holds `laneRow`, the source of the warp's row r. The caller has
/// the stage's full barrier arrive once this returns.
template <typename Tile, class Warps, typename Narrow, typename Wide>
ATTNC_DEVICE void widenWarpRows(u32 dst, int warp, int lane,
                                const u8 *laneRow) {
  using W = WidenedRows<Tile, Warps>;
  u32 firstRow = u32(warp) * Warps::kWarpRows;
  u64 rowBits = reinterpret_cast<u64>(laneRow);
#pragma unroll 1
  for (u32 b0 = 0; b0 < W::kLaneCopies; b0 += W::kBatch) {
    // A lane past the last chunk rereads it (and stores nothing): every
    // lane takes part in the shuffles. Recomputed where used, the row and
    // chunk take no registers while the loads are in flight.
    auto copyOf = [&](u32 j) {
      u32 e = u32(lane) + 32 * (b0 + j);
      return e < W::kCopies ? e : W::kCopies - 1;
    };
    uint4 raw[W::kBatch];
#pragma unroll
    for (u32 j = 0; j < W::kBatch && b0 + j < W::kLaneCopies; ++j) {
      u32 copy = copyOf(j);
      u64 row = __shfl_sync(0xffffffffu, rowBits, int(copy / W::kChunks));
      raw[j] = loadCache16(reinterpret_cast<const u8 *>(row) +
                           16 * (copy % W::kChunks));
    }
#pragma unroll
    for (u32 j = 0; j < W::kBatch && b0 + j < W::kLaneCopies; ++j) {
      if (W::kCopies % 32 != 0 && u32(lane) + 32 * (b0 + j) >= W::kCopies)
        continue;
      u32 copy = copyOf(j), chunk = copy % W::kChunks;
      // fp8 chunk c is 16-bit chunks 2c and 2c + 1. Lanes c and c + 4 would
      // store to the same banks (chunks 8 apart: the next 64-column block);
      // every other group of four widens and stores its second half first.
      bool swap = (chunk >> 2) & 1;
      uint4 in = raw[j];
      if (swap)
        in = make_uint4(in.z, in.w, in.x, in.y);
      uint4 wide[2];
      widenChunkTo<Narrow, Wide>(in, wide);
      u32 row = firstRow + copy / W::kChunks, col = 16 * chunk;
      u32 first = dst + Tile::offset(row, col);
      u32 second = dst + Tile::offset(row, col + 8);
      storeShared16(swap ? second : first, wide[0]);
      storeShared16(swap ? first : second, wide[1]);
    }
  }
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_ROW_WIDEN_H
