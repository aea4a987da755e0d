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
  // the queries, outputs and other kernels' lines; then sections of equal
  // size, as few as that allows, so that no short section trails.
  int64_t perKVHead = std::max<int64_t>(1, unitsPerKVHead);
  int64_t kvHeads = std::max<int64_t>(1, units / perKVHead);
  int64_t fit =
      std::max<int64_t>(1, l2Bytes / 2 / std::max<int64_t>(1, kvHeadBytes));
  int64_t sections = (kvHeads + fit - 1) / fit;
  int64_t kvHeadsPerSection = (kvHeads + sections - 1) / sections;
  order.section_units = i32(std::clamp<int64_t>(
      kvHeadsPerSection * perKVHead, 1, std::max<int64_t>(1, units)));
  return order;
}

} // namespace attnc
