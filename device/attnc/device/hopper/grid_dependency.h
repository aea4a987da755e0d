//===- hopper/grid_dependency.h - launches that overlap the one before ----===//
//
// Programmatic dependent launch: a kernel launched with programmatic stream
// serialization may start while the kernel before it in the stream drains,
// once that kernel lets its dependents launch. The later kernel must then
// wait for the earlier grids' completion, and for their memory, before it
// reads or writes global memory; what it does before the wait (barrier
// setup) overlaps the earlier kernel's tail. Launched without the
// attribute, both instructions do nothing.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_GRID_DEPENDENCY_H
#define ATTNC_DEVICE_HOPPER_GRID_DEPENDENCY_H

#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

#if ATTNC_IS_DEVICE

/// Waits until the grids this one depends on have completed and their
/// memory is visible to it, then lets the grid after this one launch: that
/// grid starts once every CTA of this one has said so (or exited), its CTAs
/// taking multiprocessors as this grid's leave, and waits here in turn.
/// Every thread, before its first global access.
ATTNC_DEVICE void followPreviousGrids() {
  asm volatile("griddepcontrol.wait;\n"
               "griddepcontrol.launch_dependents;" ::
                   : "memory");
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_GRID_DEPENDENCY_H
