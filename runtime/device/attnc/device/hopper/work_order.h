//===- hopper/work_order.h - the order persistent CTAs take work in -------===//
//
// A warp-specialized launch has at most as many CTAs as fit on the GPU at
// once; each walks work items (a row block of one query head of one
// request, and one KV split) until none is left. CTA c takes items c,
// c + G, c + 2G, ... of G CTAs: a static order needs no counter that would
// have to be reset between launches (CUDA graphs replay them as they are),
// and it overlaps one item's epilogue with the next item's loads.
//
// The order makes the static split fair and cache-friendly:
// - items are cut into sections of `section_units` (request, head, split)
//   units whose keys and values fit in L2 together, so that CTAs working at
//   the same time share their K/V tiles through L2;
// - within a section the row blocks go last first: under a causal mask
//   later rows see more keys, so the longest items are taken first and the
//   shortest fill in at the end; every CTA gets about one item of each
//   length;
// - units of one KV head's query heads are adjacent.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_WORK_ORDER_H
#define ATTNC_DEVICE_HOPPER_WORK_ORDER_H

#include "attnc/device/prelude.h"

namespace attnc {

/// The work of one launch, filled by the host.
struct WorkOrder {
  i32 items;         // row_blocks x units
  i32 row_blocks;    // of the longest request
  i32 units;         // requests x query heads x splits
  i32 section_units; // units per L2 section, at least 1
};

/// One work item: which rows and which share of their keys.
struct WorkItem {
  i32 batch, head, split, row_block;
};

/// Item `item` of `order`, for `heads` query heads and `splits` KV splits.
ATTNC_DEVICE WorkItem workItem(const WorkOrder &order, int item, int heads,
                               int splits) {
  int sectionItems = order.section_units * order.row_blocks;
  int section = item / sectionItems;
  int within = item - section * sectionItems;
  int first = section * order.section_units;
  int count = order.units - first < order.section_units ? order.units - first
                                                        : order.section_units;
  int unit = first + within % count;
  WorkItem w;
  w.row_block = order.row_blocks - 1 - within / count;
  w.split = unit % splits;
  int requestHead = unit / splits;
  w.head = requestHead % heads;
  w.batch = requestHead / heads;
  return w;
}

} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_WORK_ORDER_H
