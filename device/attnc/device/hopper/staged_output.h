//===- hopper/staged_output.h - output rows through shared memory ---------===//
//
// The epilogue of a consumer warpgroup that has a second query tile
// (prefill.h, `q_buffers = 2`): once an item's last scores are done its
// query tile is dead, so each warp writes its 16 output rows there with
// stmatrix and stores them from there as whole rows, 16 bytes a lane and
// consecutive lanes on consecutive chunks. Straight from the wgmma
// accumulator a lane holds 4 bytes of each of 8 rows per store: 32 stores
// a row half, each writing eight half-filled sectors, and the next item's
// first instructions waited for those stores to read their address
// registers (ncu: a fifth of the stall samples of 16 x 512 prefill).
//
// The rows keep the tile's layout (smem_layout.h): chunk c of row r at
// chunk c ^ (r % 8) of its 64-column block, so the stmatrix rows and the
// lanes' chunk reads both spread over the banks. Only the warp itself
// touches its rows, so a warp barrier orders the writes before the reads.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_STAGED_OUTPUT_H
#define ATTNC_DEVICE_HOPPER_STAGED_OUTPUT_H

#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/mma.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

#if ATTNC_IS_DEVICE

/// Stores four 8 x 8 matrices of 16-bit elements: lanes 8m..8m+7 give the
/// addresses of matrix m's rows, and each lane's register m holds its
/// fragment of matrix m (mma.h's layout, which is the accumulator's).
ATTNC_DEVICE void stmatrixX4(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile(
      "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
          addr),
      "r"(r0), "r"(r1), "r"(r2), "r"(r3)
      : "memory");
}

/// Stores 16 bytes at a 16-byte aligned global address in one instruction:
/// through a plain pointer NVVM split the first of a row of such stores
/// in four.
ATTNC_DEVICE void storeGlobal16(void *address, const uint4 &v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(address),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

/// A consumer warp's 16 rows of a 64 x DV output, staged in a `Tile` (the
/// consumer's query tile) and stored from there.
template <class Tile, int DV> struct StagedOutputRows {
  static_assert(DV <= Tile::kCols && DV % kWgmmaK == 0,
                "the output's rows fit the query tile's, in k16 steps");
  /// 16-byte chunks of an output row, a lane's chunks of the warp's rows,
  /// and how many of those it holds in registers at once.
  static constexpr int kChunks = DV / 8;
  static constexpr int kSteps = 16 * kChunks / 32;
  static constexpr int kBatch = 8;

  /// Writes this warp's rows of `o`, row half h times `factor[h]`, as
  /// `Out` into rows [16 w, 16 w + 16) of the tile at `tile`. Each
  /// stmatrix takes two 8-column groups of both row halves.
  template <class Out>
  static ATTNC_DEVICE void stage(u32 tile, const Accumulator<DV> &o,
                                 const float (&factor)[2], int thread) {
    u32 lane = u32(thread) % 32u, matrix = lane / 8u;
    u32 row = 16u * (u32(thread) / 32u) + 8u * (matrix % 2u) + lane % 8u;
    u32 rowAddress = tile + row * kSwizzleBytes;
    // Matrices 2 and 3 are the second group: one chunk on, which the
    // row's swizzle moves like any other.
    u32 flip = (matrix / 2u) ^ (row % kAtomRows);
#pragma unroll
    for (int group = 0; group < kChunks; group += 2) {
      u32 address = rowAddress + (group / 8) * Tile::kBlockBytes +
                    ((u32(group % 8) ^ flip) << 4);
      const float *d = &o.d[4 * group];
      stmatrixX4(address, Mma<Out>::pack(d[0] * factor[0], d[1] * factor[0]),
                 Mma<Out>::pack(d[2] * factor[1], d[3] * factor[1]),
                 Mma<Out>::pack(d[4] * factor[0], d[5] * factor[0]),
                 Mma<Out>::pack(d[6] * factor[1], d[7] * factor[1]));
    }
  }

  /// Stores the warp's staged rows to global memory, row r to `first + r
  /// * rowStride`, those below `rows` only. Where `first` is 16-byte
  /// aligned (rowStride is a whole number of chunks), whole chunks at once.
  /// Chunks are read in batches of up to kBatch before they are stored:
  /// read and stored one by one, each read waited for the store before
  /// it, and the batch bounds the registers the reads hold (a lane has up
  /// to 16 chunks at head dim 256). After the last read a proxy fence
  /// hands the tile back to the copy engine, which writes the next
  /// queries into it: ahead of the last stores, it need not wait for
  /// them.
  template <class Out>
  static ATTNC_DEVICE void store(u32 tile, Out *first, i64 rowStride, int rows,
                                 int thread) {
    if ((reinterpret_cast<u64>(first) & 15u) != 0) {
      storeElementwise(tile, first, rowStride, rows, thread);
      return;
    }
    int lane = thread % 32;
    u32 warpRow = 16u * (u32(thread) / 32u);
    // Each lane's chunks lie at constant distances from its first one,
    // which the stores take as immediate offsets.
    uint4 *lanesFirst = reinterpret_cast<uint4 *>(
        first + rowOf(0, lane) * rowStride + chunkOf(0, lane) * 8);
#pragma unroll
    for (int batch = 0; batch < kSteps; batch += kBatch) {
      uint4 chunks[kBatch];
#pragma unroll
      for (int step = batch; step < batch + kBatch && step < kSteps; ++step) {
        u32 r = warpRow + u32(rowOf(step, lane));
        int chunk = chunkOf(step, lane);
        chunks[step - batch] = loadShared16(chunkAddress(tile, r, chunk));
      }
      if (batch + kBatch >= kSteps)
        fenceProxyAsync();
#pragma unroll
      for (int step = batch; step < batch + kBatch && step < kSteps; ++step) {
        int row = rowOf(step, lane);
        if (row < rows)
          storeGlobal16(lanesFirst +
                            ((row - rowOf(0, lane)) * rowStride +
                             (chunkOf(step, lane) - chunkOf(0, lane)) * 8) /
                                8,
                        chunks[step - batch]);
      }
    }
  }

  /// The same stores for an output that starts inside a 16-byte chunk (a
  /// view past its allocation's start): each chunk as 16-bit elements, in
  /// a rolled loop. Such outputs are rare, and unrolled stores of every
  /// width would be compile time for every kernel.
  template <class Out>
  static ATTNC_DEVICE void storeElementwise(u32 tile, Out *first, i64 rowStride,
                                            int rows, int thread) {
    static_assert(sizeof(Out) == 2, "the staged output is 16-bit");
    int lane = thread % 32;
    u32 warpRow = 16u * (u32(thread) / 32u);
#pragma unroll 1
    for (int step = 0; step < kSteps; ++step) {
      int row = rowOf(step, lane), chunk = chunkOf(step, lane);
      u32 r = warpRow + u32(row);
      uint4 v = loadShared16(chunkAddress(tile, r, chunk));
      if (row >= rows)
        continue;
      u16 *element =
          reinterpret_cast<u16 *>(first + row * rowStride + chunk * 8);
      u32 words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        element[2 * w] = u16(words[w]);
        element[2 * w + 1] = u16(words[w] >> 16);
      }
    }
    fenceProxyAsync();
  }

private:
  /// The shared address of 16-byte chunk `chunk` of staged row `r`.
  static ATTNC_DEVICE u32 chunkAddress(u32 tile, u32 r, int chunk) {
    return tile + u32(chunk / 8) * Tile::kBlockBytes + r * kSwizzleBytes +
           ((u32(chunk % 8) ^ (r % kAtomRows)) << 4);
  }

  // Lane `lane`'s chunk at step `step`: 32 consecutive chunks a step, row
  // by row. Where rows divide a warp's 32 chunks (head dims 64, 128, 256)
  // both are shifts and masks.
  static ATTNC_DEVICE int rowOf(int step, int lane) {
    if constexpr (32 % kChunks == 0)
      return step * (32 / kChunks) + lane / kChunks;
    return (32 * step + lane) / kChunks;
  }
  static ATTNC_DEVICE int chunkOf(int step, int lane) {
    if constexpr (32 % kChunks == 0)
      return lane % kChunks;
    return (32 * step + lane) % kChunks;
  }
};

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_STAGED_OUTPUT_H
