//===- hopper/work_order.h - the order persistent CTAs take work in -------===//
//
// A warp-specialized launch has at most as many CTAs as fit on the GPU at
// once; each walks work items (a row block of one query head of one
// request, and one KV split), and one item's epilogue overlaps the next
// item's loads. Two ways to share the items out:
// - the prefill CTAs (hopper/prefill.h) claim them one by one in the order
//   below with an atomic counter (WorkOrder::claims), so that a CTA whose
//   items ran fast (a ragged batch's short requests) takes more. The last
//   CTA done claiming zeroes the counters, so CUDA graphs replay a launch
//   as it is;
// - the latent CTAs (hopper/latent.h), and prefill CTAs whose plan says
//   `static_order`, take a static share, walked by WorkCursor.
//
// The order makes both fair and cache-friendly:
// - items are cut into sections of `section_units` (request, head, split)
//   units whose keys and values fit in L2 together, so that CTAs working at
//   the same time share their K/V tiles through L2; units of one KV head's
//   query heads are adjacent;
// - within a section the row blocks go last first: under a causal mask
//   later rows see more keys, so the longest items are taken first;
// - the G CTAs take a section's items in rounds of G, and every other
//   round in reverse (CTA 0 takes the longest of one round and the
//   shortest of the next), so every CTA's share of a section is within
//   about one item of the others'. Each section's rounds start where the
//   last section's left off.
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
  /// Where CTAs that claim items dynamically (hopper/prefill.h) count
  /// them: the next item's index, then the CTAs done claiming. Zero before
  /// a launch; the last CTA done claiming zeroes them again.
  i32 *claims = nullptr;
};

/// How many items one of `ctas` CTAs that claim them dynamically may take:
/// a quarter more than an even share, so a CTA whose items ran fast takes
/// others' and every CTA's bound still covers all items (`ctas` x the bound
/// >= items, so no item is left unclaimed).
ATTNC_DEVICE int claimBound(int items, int ctas) {
  int share = (items + ctas - 1) / ctas;
  return share + (share + 3) / 4 + 1;
}

/// One work item: which rows and which share of their keys.
struct WorkItem {
  i32 batch, head, split, row_block;
};

/// Slots of the shared-memory ring through which a CTA's claiming thread
/// hands each claimed item, decoded, to its other roles (hopper/prefill.h).
constexpr int kItemSlots = 2;
constexpr int kItemSlotBytes = 4 * sizeof(i32);
static_assert(sizeof(WorkItem) == kItemSlotBytes, "a slot holds one item");

ATTNC_DEVICE int ceilDiv(int a, int b) { return (a + b - 1) / b; }

/// Slots each of `ctas` CTAs walks: a round of each section is one slot,
/// holding one item or none.
ATTNC_DEVICE int workSlots(const WorkOrder &order, int ctas) {
  int sectionItems = order.section_units * order.row_blocks;
  int fullSections = order.units / order.section_units;
  int lastItems = order.items - fullSections * sectionItems;
  return fullSections * ceilDiv(sectionItems, ctas) + ceilDiv(lastItems, ctas);
}

/// The (request, head, split) units of section `section`: section_units
/// but in a last, shorter section.
ATTNC_DEVICE int unitsOfSection(const WorkOrder &order, int section) {
  int rest = order.units - section * order.section_units;
  return rest < order.section_units ? rest : order.section_units;
}

/// Where round `round` of a section whose items start at item `start`
/// puts CTA `cta` of `ctas`: every other round in reverse.
ATTNC_DEVICE int placeInSection(int start, int round, int cta, int ctas) {
  int lane = (cta - start) % ctas; // in (-ctas, ctas): start >= 0
  if (lane < 0)
    lane += ctas;
  return round * ctas + (round % 2 ? ctas - 1 - lane : lane);
}

/// Item `at` of section `section`, which has `units` units, for `heads`
/// query heads and `splits` KV splits: units vary fastest, row blocks go
/// last first.
ATTNC_DEVICE WorkItem itemInSection(const WorkOrder &order, int section,
                                    int units, int at, int heads, int splits) {
  int block = at / units;
  int unit = section * order.section_units + (at - block * units);
  WorkItem w;
  w.row_block = order.row_blocks - 1 - block;
  int requestHead = unit;
  w.split = 0;
  if (splits > 1) {
    requestHead = unit / splits;
    w.split = unit - requestHead * splits;
  }
  w.head = requestHead % heads;
  w.batch = requestHead / heads;
  return w;
}

/// The item in slot `slot` of CTA `cta` of `ctas`, or -1 for none.
ATTNC_DEVICE int itemOfSlot(const WorkOrder &order, int cta, int ctas,
                            int slot) {
  int sectionItems = order.section_units * order.row_blocks;
  int fullSections = order.units / order.section_units;
  int fullRounds = ceilDiv(sectionItems, ctas);
  int section = slot / fullRounds;
  if (section > fullSections)
    section = fullSections;
  int round = slot - section * fullRounds;
  int start = section * sectionItems;
  int at = placeInSection(start, round, cta, ctas);
  return at < unitsOfSection(order, section) * order.row_blocks ? start + at
                                                                : -1;
}

/// Item `item` of `order`, for `heads` query heads and `splits` KV splits.
ATTNC_DEVICE WorkItem workItem(const WorkOrder &order, int item, int heads,
                               int splits) {
  int section = item / (order.section_units * order.row_blocks);
  int at = item - section * order.section_units * order.row_blocks;
  return itemInSection(order, section, unitsOfSection(order, section), at,
                       heads, splits);
}

/// A CTA's walk over its slots, one slot a step, taking the items
/// itemOfSlot and workItem give (the tests hold it to them). The closed
/// forms divide by run-time values about ten times per item; the walk
/// keeps its place (section and round) and divides twice per item: this
/// CTA's place in the section's rounds, and the item's row block (once
/// more with KV splits). Two registers of state: with three, the consumers
/// and the gathering producer of a d224 paged variant spilled.
struct WorkCursor {
  int section; // the current section
  int round;   // the next of its rounds

  ATTNC_DEVICE void begin() {
    section = 0;
    round = 0;
  }

  /// The item in CTA `cta`'s next slot, into `w`; false for an empty slot.
  /// `heads` is the query heads, `splits` the KV splits of a request.
  ATTNC_DEVICE bool next(const WorkOrder &order, int cta, int ctas, int heads,
                         int splits, WorkItem &w) {
    int units = unitsOfSection(order, section);
    if (round * ctas >= units * order.row_blocks) { // the section is done
      ++section;
      round = 0;
      units = unitsOfSection(order, section);
    }
    int start = section * order.section_units * order.row_blocks;
    int at = placeInSection(start, round, cta, ctas);
    ++round;
    if (at >= units * order.row_blocks)
      return false;
    w = itemInSection(order, section, units, at, heads, splits);
    return true;
  }
};

} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_WORK_ORDER_H
