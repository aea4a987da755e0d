//===- hopper/smem_layout.h - tiles TMA writes and wgmma reads -----------===//
//
// One shared-memory layout serves both of Hopper's engines: the bulk tensor
// copy (TMA) writes a tile in it and wgmma reads the tile through a matrix
// descriptor, so the layout, the tensor map's swizzle and the descriptor's
// fields are defined together here.
//
// A tile of Rows x Cols 16-bit elements is stored as column blocks of 64
// elements: 128 bytes, the span of the 128-byte swizzle. A block holds its
// rows 128 bytes apart, and every 8 rows form a 1024-byte swizzle atom in
// which 16-byte chunk c of row r sits at chunk c ^ (r % 8). That is what a
// TMA box of [Rows, 64] elements with SWIZZLE_128B writes, and what wgmma
// reads in its 128-byte swizzle mode: both XOR address bits [4, 7) with
// bits [7, 10) of the shared-memory address, so every block must start
// 1024-byte aligned for the two to agree (the descriptor's base offset,
// bits 49-51, stays 0).
//
// Host code includes this header too: the tensor maps and the tests read
// the same constants.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_SMEM_LAYOUT_H
#define ATTNC_DEVICE_HOPPER_SMEM_LAYOUT_H

#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

/// Shared-memory swizzle modes. The values are CUtensorMapSwizzle's, so the
/// host passes them to cuTensorMapEncodeTiled as they are;
/// descriptorLayoutType() gives wgmma's code for the same mode.
enum class Swizzle : u32 { None = 0, B32 = 1, B64 = 2, B128 = 3 };

/// wgmma's 2-bit layout type (descriptor bits 62-63) for a swizzle mode.
constexpr u64 descriptorLayoutType(Swizzle mode) {
  return mode == Swizzle::B128  ? 1
         : mode == Swizzle::B64 ? 2
         : mode == Swizzle::B32 ? 3
                                : 0;
}

/// The mode of every Hopper tile: 128-byte rows are the widest span, and
/// the only one whose 8-row atoms are conflict-free for both engines.
constexpr Swizzle kTileSwizzle = Swizzle::B128;
constexpr int kSwizzleBytes = 128;
constexpr int kAtomRows = 8;
constexpr int kAtomBytes = kAtomRows * kSwizzleBytes;
/// Bytes from `address` up to the next atom boundary: dynamic shared memory
/// is only 16-byte aligned, and tiles start on an atom.
constexpr u32 atomPadding(u32 address) {
  return (kAtomBytes - address % kAtomBytes) % kAtomBytes;
}
/// Whether boxes of `rows` key rows (a page's slots) can be bulk-copied:
/// the copy engine writes whole swizzle atoms. Tiles of other pages are
/// gathered row by row by the producer warps (row_gather.h).
constexpr bool boxesFillAtoms(int rows) {
  return rows > 0 && rows % kAtomRows == 0;
}
/// K of one wgmma for 16-bit inputs.
constexpr int kWgmmaK = 16;
/// Bytes of a Rows x Cols tile of 16-bit elements in this layout: whole
/// column blocks of 64 elements (a part-filled last block takes a whole
/// one), each Rows x 128 bytes. Sw128Tile's size, and shared_storage.h's.
constexpr i64 sw128TileBytes(i64 rows, i64 cols) {
  return (cols + kSwizzleBytes / 2 - 1) / (kSwizzleBytes / 2) * rows *
         kSwizzleBytes;
}

/// A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format"). Start
/// address, leading-dimension and stride-dimension byte offsets are in
/// 16-byte units: bits 0-13, 16-29 and 32-45; the base offset (bits 49-51)
/// is 0 because tiles start 1024-byte aligned; the layout type is bits
/// 62-63. The start address keeps 18 bits of the shared address, which
/// covers the 228 KiB of an sm_90 CTA.
constexpr u64 matrixDescriptor(u32 start, u32 leadingBytes, u32 strideBytes,
                               Swizzle mode) {
  return u64((start & 0x3FFFF) >> 4) | u64((leadingBytes >> 4) & 0x3FFF) << 16 |
         u64((strideBytes >> 4) & 0x3FFF) << 32 |
         descriptorLayoutType(mode) << 62;
}

/// A Rows x Cols tile of `ElemBytes`-byte elements in the layout above.
/// Cols that are not a multiple of a block's 64 columns leave the last
/// block part-filled (TMA fills the rest from out-of-bounds zeros).
template <int Rows, int Cols, int ElemBytes = 2> struct Sw128Tile {
  static_assert(ElemBytes == 2, "wgmma's k16 steps are for 16-bit inputs");
  static_assert(Rows % kAtomRows == 0, "rows come in whole swizzle atoms");
  static_assert(Cols % kWgmmaK == 0, "columns come in whole k16 steps");
  static constexpr int kRows = Rows;
  static constexpr int kCols = Cols;
  /// Columns of one block: the inner extent of each TMA box.
  static constexpr int kBlockCols = kSwizzleBytes / ElemBytes;
  static constexpr int kBlocks = (Cols + kBlockCols - 1) / kBlockCols;
  static constexpr int kBlockBytes = Rows * kSwizzleBytes;
  /// What the TMA boxes of the whole tile deliver: the bytes one full
  /// barrier expects.
  static constexpr int kBytes = int(sw128TileBytes(Rows, Cols));
  static_assert(kBlockBytes % kAtomBytes == 0, "blocks stay atom-aligned");

  /// Byte offset of element (row, col) from the tile's start.
  /// Unsigned arithmetic: the divisions by powers of two are shifts.
  static constexpr u32 offset(u32 row, u32 col) {
    u32 inRow = (col % kBlockCols) * ElemBytes;
    u32 chunk = (inRow >> 4) ^ (row % kAtomRows);
    return (col / kBlockCols) * kBlockBytes + row * kSwizzleBytes +
           (chunk << 4) + (inRow & 15);
  }

  /// Columns [16 k, 16 k + 16) as a K-major wgmma operand: A, or the B of
  /// S = Q.K^T whose rows are keys. The operand's rows are 8-row atoms
  /// 1024 bytes apart (the stride-dimension offset); its 16 columns are 32
  /// bytes of one swizzled row, so the leading-dimension offset is unused
  /// and holds 1 (16 bytes) as the canonical K-major layouts have it. A k
  /// step inside a block moves the start by 32 bytes; the hardware applies
  /// the swizzle to the summed address.
  static constexpr u64 kMajor(u32 tileAddress, int k) {
    int col = k * kWgmmaK;
    return matrixDescriptor(tileAddress + (col / kBlockCols) * kBlockBytes +
                                (col % kBlockCols) * ElemBytes,
                            16, kAtomBytes, kTileSwizzle);
  }

  /// Rows [16 k, 16 k + 16) as an MN-major (transposed) B operand: V of
  /// O = P.V, whose rows are keys (wgmma's K) and whose columns are wgmma's
  /// N. K runs down two 8-row atoms 1024 bytes apart (the stride-dimension
  /// offset); N runs along a block's 64 columns and then on to the next
  /// block, kBlockBytes further (the leading-dimension offset).
  static constexpr u64 mnMajor(u32 tileAddress, int k) {
    return matrixDescriptor(tileAddress + k * kWgmmaK * kSwizzleBytes,
                            kBlockBytes, kAtomBytes, kTileSwizzle);
  }
  static_assert(kBlockBytes >> 4 < (1 << 14),
                "the leading-dimension offset field holds 14 bits");
};

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_SMEM_LAYOUT_H
