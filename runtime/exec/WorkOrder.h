//===- WorkOrder.h - the work items of a persistent launch --*- C++ -*-===//
//
// The host's half of hopper/work_order.h: how many items a warp-specialized
// launch has and how many (request, head, split) units share an L2 section.
// The device decides nothing here; it walks the order it is given.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_EXEC_WORKORDER_H
#define ATTNC_RUNTIME_EXEC_WORKORDER_H

#include "attnc/device/hopper/work_order.h"

#include <cstdint>

namespace attnc {

/// The order of `rowBlocks` x `units` items, where each KV head serves
/// `unitsPerKVHead` adjacent units and holds `kvHeadBytes` of keys and
/// values: sections of equal size (whole KV heads), as few as keep each
/// within half of an L2 of `l2Bytes` (a section holds at least one KV
/// head). The caller bounds the items by 2^31 - 1.
WorkOrder makeWorkOrder(int64_t rowBlocks, int64_t units,
                        int64_t unitsPerKVHead, int64_t kvHeadBytes,
                        int64_t l2Bytes);

} // namespace attnc

#endif // ATTNC_RUNTIME_EXEC_WORKORDER_H
