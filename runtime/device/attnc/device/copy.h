//===- copy.h - cp.async pipelines and swizzled shared memory -------------===//
//
// Tiles are rows of 16-byte chunks. Chunk c of row r is stored at chunk
// c ^ (r % 8), so the eight rows an ldmatrix reads at one logical column hit
// eight different bank groups and neither the cp.async writes nor the
// ldmatrix reads conflict. Rows must hold at least 8 chunks (64 halves).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_COPY_H
#define ATTNC_DEVICE_COPY_H

#include "attnc/device/prelude.h"

namespace attnc {

/// Element offset of (row, col) in a swizzled tile of `RowElems` 16-bit
/// elements per row; `col` is a multiple of 8 or lies within one chunk.
template <int RowElems> ATTNC_DEVICE int swizzle(int row, int col) {
  static_assert(RowElems % 64 == 0, "swizzled rows need 8+ chunks");
  return row * RowElems + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

/// Copies 16 bytes, or writes 16 zero bytes when `valid` is false (the
/// source is then not read).
ATTNC_DEVICE void cpAsync16(u32 dst, const void *src, bool valid) {
  int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst),
               "l"(src), "r"(bytes));
}
ATTNC_DEVICE void cpAsyncCommit() { asm volatile("cp.async.commit_group;"); }
template <int Pending> ATTNC_DEVICE void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending));
}

} // namespace attnc

#endif // ATTNC_DEVICE_COPY_H
