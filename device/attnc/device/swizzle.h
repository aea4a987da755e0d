//===- swizzle.h - conflict-free tiles of any even number of chunks -------===//
//
// Tiles are rows of 16-byte chunks, unpadded. An ldmatrix phase reads one
// logical chunk of eight consecutive rows (8-aligned); the swizzle permutes
// the chunks within each row so that those eight reads hit eight different
// 16-byte bank groups, and neither they nor the cp.async writes conflict.
// With G = gcd(chunks per row, 8), the rows' starts already fall into 8 / G
// bank groups (row * chunks mod 8 steps by G), and chunk c of row r is
// stored at c ^ ((r >> log2(8 / G)) % G): that stays within the row's
// aligned group of G chunks and tells apart the 8 / G rows sharing a start.
// Rows of 64 halves or a multiple XOR with r % 8 (G = 8); rows of 32, 96,
// 160 or 224 halves with (r / 2) % 4; rows of 16, 48, 80, 112, ... halves
// with (r / 4) % 2.
//
// Host code includes this header too, so tests can check the layout.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_SWIZZLE_H
#define ATTNC_DEVICE_SWIZZLE_H

#include "attnc/device/prelude.h"

namespace attnc {

/// Element offset of (row, col) in a swizzled tile of `RowElems` 16-bit
/// elements per row; `col` is a multiple of 8 or lies within one chunk.
template <int RowElems> ATTNC_DEVICE int swizzle(int row, int col) {
  static_assert(RowElems % 16 == 0, "rows are an even number of chunks");
  constexpr int chunks = RowElems / 8;
  constexpr int group = chunks % 8 == 0 ? 8 : chunks % 4 == 0 ? 4 : 2;
  constexpr int shift = group == 8 ? 0 : group == 4 ? 1 : 2;
  return row * RowElems + (((col >> 3) ^ ((row >> shift) & (group - 1))) << 3) +
         (col & 7);
}

} // namespace attnc

#endif // ATTNC_DEVICE_SWIZZLE_H
