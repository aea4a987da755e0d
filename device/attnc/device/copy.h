//===- copy.h - cp.async pipelines ----------------------------------------===//
//
// Tiles land in shared memory at the swizzled offsets of swizzle.h.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_COPY_H
#define ATTNC_DEVICE_COPY_H

#include "attnc/device/prelude.h"
#include "attnc/device/swizzle.h"

namespace attnc {

/// Copies 16 bytes, or writes 16 zero bytes when `valid` is false (the
/// source is then not read).
ATTNC_DEVICE void cpAsync16(u32 dst, const void *src, bool valid) {
  int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst),
               "l"(src), "r"(bytes));
}
/// Copies 16 bytes.
ATTNC_DEVICE void cpAsync16(u32 dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst),
               "l"(src));
}
ATTNC_DEVICE void cpAsyncCommit() { asm volatile("cp.async.commit_group;"); }
template <int Pending> ATTNC_DEVICE void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending));
}

} // namespace attnc

#endif // ATTNC_DEVICE_COPY_H
