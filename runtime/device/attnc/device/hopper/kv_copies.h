//===- hopper/kv_copies.h - how a producer fills a KV tile ----------------===//
//
// The warp-specialized schedules (prefill.h, latent.h) fill a KV tile of
// C::kBlockN keys the same way: with the copy engine in boxes of
// C::kKVBoxRows keys (the whole tile, or the slots of a tile inside one
// page: the compiler's choice, which the host's tensor maps share), or,
// from pages that are not whole 8-row swizzle atoms, gathered row by row by
// the producer warpgroup with cp.async (row_gather.h). Both shapes inherit
// these facts from here, so that the two kernels cannot disagree on them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_KV_COPIES_H
#define ATTNC_DEVICE_HOPPER_KV_COPIES_H

#include "attnc/device/abi.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

template <class C> struct KVCopies {
  static constexpr bool kPaged = C::kKVLayout == TokenLayout::Paged;
  static constexpr int kKVBoxRows = C::kKVBoxRows;
  static constexpr bool kGatherKV = !boxesFillAtoms(kKVBoxRows);
  static_assert(C::kBlockN % kKVBoxRows == 0 &&
                    (!kPaged || C::kPageSize % kKVBoxRows == 0) &&
                    (kPaged || !kGatherKV),
                "boxes tile the KV tile and stay inside a page; only pages "
                "are gathered");
  static constexpr int kKVBoxes = C::kBlockN / kKVBoxRows;
  /// Producer threads that copy K/V: one issues a contiguous tile's bulk
  /// copies; a warp issues a paged tile's boxes, a lane per page, so that
  /// their page-table reads overlap; the warpgroup gathers rows.
  static constexpr int kCopyThreads = kGatherKV ? kWarpgroupThreads
                                      : kPaged && kKVBoxes > 1 ? 32
                                                               : 1;
  /// Threads that arrive on a stage's full barrier: the one that arms it
  /// for the copy engine, or every gathering thread.
  static constexpr int kKVFillers = kGatherKV ? kCopyThreads : 1;
  /// The producer warpgroup's setmaxnreg budget: 40 registers to issue
  /// copies, 56 to gather rows (the copy loop, unrolled, needs them: 22 ->
  /// 12 instructions per copy at head dim 128).
  static constexpr int kProducerRegisters = kGatherKV ? 56 : 40;
};

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_KV_COPIES_H
