//===- WorkOrder.cpp - the work items of a persistent launch --------------===//

#include "exec/WorkOrder.h"

#include <algorithm>

namespace attnc {

WorkOrder makeWorkOrder(int64_t rowBlocks, int64_t units,
                        int64_t unitsPerKVHead, int64_t kvHeadBytes,
                        int64_t l2Bytes) {
  WorkOrder order;
  order.row_blocks = i32(rowBlocks);
  order.units = i32(units);
  order.items = i32(rowBlocks * units);
  // Half of the L2, so that the section's keys and values stay there beside
  // the queries, outputs and other kernels' lines.
  int64_t kvHeads =
      std::max<int64_t>(1, l2Bytes / 2 / std::max<int64_t>(1, kvHeadBytes));
  order.section_units =
      i32(std::clamp<int64_t>(kvHeads * std::max<int64_t>(1, unitsPerKVHead), 1,
                              std::max<int64_t>(1, units)));
  return order;
}

} // namespace attnc
