//===- hopper/row_widen.h - fp8 rows widened into 16-bit tiles ------------===//
//
// wgmma takes 16-bit operands from shared memory, and an fp8 cache is read
// at one byte per element: the producer warpgroup copies a tile's fp8 rows
// with cp.async (any page size: 16 bytes a copy, no tensor map) into the
// back half of the 16-bit stage they widen into, then widens each 16-byte
// chunk (16 values) into two f16 chunks, exactly (every e4m3 and e5m2
// value is an f16; the products over an fp8 cache are f16, widen.h), at
// the offsets the copy engine would have
// written (smem_layout.h), so the consumers read the tile unchanged. The
// stage has no room beside its 16-bit tile (the latent kernel's shared
// memory is full), hence the widening in place, in an order that
// overwrites no fp8 value before every thread has read it.
//
// The stores go through the generic proxy and wgmma reads through the
// async proxy: each widening thread arrives on the stage's full barrier
// after its stores, and each consumer fences the proxies after its wait,
// as for gathered rows (row_gather.h).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_ROW_WIDEN_H
#define ATTNC_DEVICE_HOPPER_ROW_WIDEN_H

#include "attnc/device/abi.h"
#include "attnc/device/copy.h"
#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/prelude.h"
#include "attnc/device/widen.h"

namespace attnc {
namespace hopper {

#if ATTNC_IS_DEVICE

/// Starts bringing `bytes` bytes at `src` (16-byte aligned, a multiple of
/// 16) into L2, without waiting.
ATTNC_DEVICE void prefetchL2(const void *src, u32 bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src),
               "r"(bytes)
               : "memory");
}

/// An fp8 tile staged in the back of the f16 tile it widens into, then
/// widened in place by the producer warpgroup (kThreads threads).
///
/// Column block k of the f16 tile (its columns [64 k, 64 k + 64), 8 KB at
/// 64 rows) comes from 4 KB of fp8 values, staged as h_k: rows of 64
/// bytes, h_k at kStagingOffset + 4 KB k, the n = kBlocks of them filling
/// the tile's last n x 4 KB. Thread i stages and widens, in every block,
/// fp8 chunk i % 4 of rows i / 4 and i / 4 + 32: it finds two row sources
/// a tile, and widens only chunks it copied itself, after its own
/// cp.async.wait_all.
///
/// Writing block k clobbers h_{2k - n} and h_{2k - n + 1}: nothing for
/// k < (n - 1) / 2, which are widened directly; each later block is read
/// into registers (8 of them; more spill the producer's 72 in some
/// variants), and its threads meet on a named barrier (so that every
/// thread has read what the block overwrites) before they store it.
template <typename Tile, typename Narrow, int kThreads> struct StagedWidening {
  static constexpr u32 kRows = Tile::kRows;
  static constexpr u32 kBlocks = Tile::kBlocks;
  static constexpr u32 kStagedBlockBytes = kRows * 64;
  static constexpr u32 kStagingOffset =
      Tile::kBytes - kBlocks * kStagedBlockBytes;
  static constexpr u32 kChunks = Tile::kCols / 16; // fp8 chunks of a row
  static constexpr u32 kRowsPerPass = kThreads / 4;
  static_assert(kRowsPerPass == limits::kWidenedRowsPerPass,
                "the tiles' rows the verifier asks for (abi.h)");
  static constexpr u32 kRowSets = kRows / kRowsPerPass;
  static_assert(Tile::kCols % 16 == 0 && kRows % kRowsPerPass == 0 &&
                    Tile::kBlockCols == 64,
                "rows of whole 16-byte fp8 chunks, 64-column blocks");
  /// Blocks widened without a barrier: those that clobber no staged block.
  static constexpr u32 kDirectBlocks = (kBlocks - 1) / 2;

  u32 thread;

  ATTNC_DEVICE explicit StagedWidening(int producerThread)
      : thread(u32(producerThread)) {}

  /// The tile row of this thread's row set `set`.
  ATTNC_DEVICE u32 row(u32 set) const {
    return thread / 4 + set * kRowsPerPass;
  }
  ATTNC_DEVICE u32 chunkOf(u32 block) const { return 4 * block + thread % 4; }
  ATTNC_DEVICE static constexpr bool inRow(u32 chunk) {
    return chunk < kChunks;
  }
  ATTNC_DEVICE u32 stagedOffset(u32 block, u32 set) const {
    return kStagingOffset + block * kStagedBlockBytes + row(set) * 64 +
           (thread % 4) * 16;
  }

  /// Copies this thread's fp8 chunks of the tile at `tile` into its
  /// staging area; `rowSource[set]` is the first byte of row(set).
  ATTNC_DEVICE void stage(u32 tile, const u8 *const (&rowSource)[kRowSets]) {
#pragma unroll
    for (u32 block = 0; block < kBlocks; ++block)
#pragma unroll
      for (u32 set = 0; set < kRowSets; ++set)
        if (inRow(chunkOf(block)))
          cpAsync16(tile + stagedOffset(block, set),
                    rowSource[set] + 16 * chunkOf(block));
  }

  ATTNC_DEVICE void widenStore(u32 tile, u32 block, u32 set, uint4 in) const {
    u32 r = row(set), c = thread % 4;
    // Lanes 4-7 hold the next row, whose swizzle moves its even chunks to
    // odd places: each store of 8 lanes covers 32 banks once.
    uint4 wide[2];
    widenChunk<Narrow>(in, wide);
    u32 col = 64 * block + 16 * c;
    storeShared16(tile + Tile::offset(r, col), wide[0]);
    storeShared16(tile + Tile::offset(r, col + 8), wide[1]);
  }

  /// Once this thread's copies landed, widens the staged tile in place.
  /// Every producer thread takes part (the blocks' named barrier `bar`).
  ATTNC_DEVICE void widen(u32 tile, int bar) const {
    asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
    for (u32 block = 0; block < kDirectBlocks; ++block)
#pragma unroll
      for (u32 set = 0; set < kRowSets; ++set)
        if (inRow(chunkOf(block)))
          widenStore(tile, block, set,
                     loadShared16(tile + stagedOffset(block, set)));
#pragma unroll
    for (u32 block = kDirectBlocks; block < kBlocks; ++block) {
      uint4 in[kRowSets];
#pragma unroll
      for (u32 set = 0; set < kRowSets; ++set)
        if (inRow(chunkOf(block)))
          in[set] = loadShared16(tile + stagedOffset(block, set));
      namedBarrierSync(bar, kThreads);
#pragma unroll
      for (u32 set = 0; set < kRowSets; ++set)
        if (inRow(chunkOf(block)))
          widenStore(tile, block, set, in[set]);
    }
  }
};

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_ROW_WIDEN_H
