//===- WorkOrderTest.cpp - the items persistent CTAs walk -----------------===//
//
// A persistent warp-specialized launch covers every (request, head, split,
// row block) item exactly once, takes the longest items first within each
// L2 section, and splits causal work evenly over its CTAs when each takes
// every G-th item; CTAs that claim items dynamically claim each once.
//
//===----------------------------------------------------------------------===//

#include "exec/WorkOrder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

namespace attnc {
namespace {

struct Shape {
  int batch, heads, kvHeads, splits, rowBlocks;
  int64_t kvHeadBytes, l2Bytes;
};

WorkOrder orderOf(const Shape &s) {
  return makeWorkOrder(s.rowBlocks, int64_t(s.batch) * s.heads * s.splits,
                       int64_t(s.heads / s.kvHeads) * s.splits, s.kvHeadBytes,
                       s.l2Bytes);
}

const Shape kShapes[] = {
    // P1: 2 x 8192 tokens, 32/8 heads, d128; 4 MiB of K/V per KV head.
    {2, 32, 8, 1, 64, 4 << 20, 60 << 20},
    // P8: 16 x 512 tokens.
    {16, 32, 8, 1, 4, 256 << 10, 60 << 20},
    // Splits, MQA, a section of one KV head, an uneven last section.
    {3, 12, 1, 2, 5, 64 << 20, 50 << 20},
    {5, 28, 4, 1, 7, 6 << 20, 50 << 20},
    {1, 1, 1, 1, 1, 1, 1},
};

// Every item is one (request, head, split, row block), each exactly once.
TEST(WorkOrder, CoversEveryItemOnce) {
  for (const Shape &s : kShapes) {
    WorkOrder order = orderOf(s);
    ASSERT_EQ(order.items, s.batch * s.heads * s.splits * s.rowBlocks);
    ASSERT_GE(order.section_units, 1);
    std::set<std::tuple<int, int, int, int>> seen;
    for (int i = 0; i < order.items; ++i) {
      WorkItem w = workItem(order, i, s.heads, s.splits);
      ASSERT_GE(w.batch, 0);
      ASSERT_LT(w.batch, s.batch);
      ASSERT_GE(w.head, 0);
      ASSERT_LT(w.head, s.heads);
      ASSERT_GE(w.split, 0);
      ASSERT_LT(w.split, s.splits);
      ASSERT_GE(w.row_block, 0);
      ASSERT_LT(w.row_block, s.rowBlocks);
      EXPECT_TRUE(seen.insert({w.batch, w.head, w.split, w.row_block}).second)
          << "item " << i << " repeats";
    }
    EXPECT_EQ(int(seen.size()), order.items);
  }
}

// Within a section, row blocks never increase: the longest causal items go
// first. A section holds whole KV heads (their query heads are adjacent).
TEST(WorkOrder, LongestFirstWithinSections) {
  for (const Shape &s : kShapes) {
    WorkOrder order = orderOf(s);
    int unitsPerKVHead = s.heads / s.kvHeads * s.splits;
    EXPECT_TRUE(order.section_units % unitsPerKVHead == 0 ||
                order.section_units == order.units);
    int sectionItems = order.section_units * s.rowBlocks;
    for (int i = 1; i < order.items; ++i) {
      if (i % sectionItems == 0)
        continue;
      EXPECT_LE(workItem(order, i, s.heads, s.splits).row_block,
                workItem(order, i - 1, s.heads, s.splits).row_block)
          << "item " << i;
    }
  }
}

// A section's K and V fit in half the L2, unless one KV head alone does not.
TEST(WorkOrder, SectionsFitHalfTheL2) {
  for (const Shape &s : kShapes) {
    WorkOrder order = orderOf(s);
    int unitsPerKVHead = s.heads / s.kvHeads * s.splits;
    int64_t kvHeads =
        (order.section_units + unitsPerKVHead - 1) / unitsPerKVHead;
    if (kvHeads > 1)
      EXPECT_LE(kvHeads * s.kvHeadBytes, s.l2Bytes / 2);
  }
}

// The CTAs' slots hold every item exactly once.
TEST(WorkOrder, CtasTakeEveryItemOnce) {
  for (const Shape &s : kShapes) {
    WorkOrder order = orderOf(s);
    for (int ctas : {132, 114, 7, 1}) {
      std::vector<int> taken(order.items, 0);
      for (int cta = 0; cta < ctas; ++cta)
        for (int slot = 0; slot < workSlots(order, ctas); ++slot) {
          int item = itemOfSlot(order, cta, ctas, slot);
          ASSERT_GE(item, -1);
          ASSERT_LT(item, order.items);
          if (item >= 0)
            ++taken[item];
        }
      for (int i = 0; i < order.items; ++i)
        ASSERT_EQ(taken[i], 1) << "item " << i << " of " << order.items
                               << " with " << ctas << " CTAs";
    }
  }
}

// A CTA's cursor, stepped once per slot, takes the items the closed forms
// place in its slots, empty slots included.
TEST(WorkOrder, CursorWalksTheSlotsInOrder) {
  for (const Shape &s : kShapes) {
    WorkOrder order = orderOf(s);
    for (int ctas : {132, 114, 7, 1}) {
      for (int cta = 0; cta < ctas; ++cta) {
        WorkCursor cursor;
        cursor.begin();
        for (int slot = 0; slot < workSlots(order, ctas); ++slot) {
          int item = itemOfSlot(order, cta, ctas, slot);
          WorkItem w{-1, -1, -1, -1};
          bool taken = cursor.next(order, cta, ctas, s.heads, s.splits, w);
          ASSERT_EQ(taken, item >= 0) << "CTA " << cta << " slot " << slot;
          if (!taken)
            continue;
          WorkItem expected = workItem(order, item, s.heads, s.splits);
          EXPECT_EQ(std::tie(w.batch, w.head, w.split, w.row_block),
                    std::tie(expected.batch, expected.head, expected.split,
                             expected.row_block))
              << "CTA " << cta << " of " << ctas << ", slot " << slot;
        }
      }
    }
  }
}

// Under a causal mask, row block r costs r + 1 tiles. The busiest CTA does
// at most one longest item more than the average (per section), even where
// G divides the row blocks (P8: 132 CTAs, 4 row blocks, which a
// row-block-fastest round-robin would give the same length every time).
TEST(WorkOrder, CausalWorkIsBalancedOverCtas) {
  for (const Shape &s : kShapes) {
    WorkOrder order = orderOf(s);
    for (int ctas : {132, 114, 7}) {
      if (ctas >= order.items)
        continue;
      std::vector<int64_t> work(ctas, 0);
      int64_t total = 0;
      for (int cta = 0; cta < ctas; ++cta)
        for (int slot = 0; slot < workSlots(order, ctas); ++slot) {
          int item = itemOfSlot(order, cta, ctas, slot);
          if (item < 0)
            continue;
          int64_t cost = workItem(order, item, s.heads, s.splits).row_block + 1;
          work[cta] += cost;
          total += cost;
        }
      int64_t busiest = *std::max_element(work.begin(), work.end());
      int64_t sections =
          (order.units + order.section_units - 1) / order.section_units;
      EXPECT_LE(busiest, total / ctas + sections * s.rowBlocks)
          << "rows " << s.rowBlocks << ", " << ctas << " CTAs";
    }
  }
}

// P1 on 132 CTAs: within 1 % of a perfect split (a round-robin over the
// same order was 3 % off).
TEST(WorkOrder, LongCausalBatchesSplitAlmostPerfectly) {
  Shape p1 = kShapes[0];
  WorkOrder order = orderOf(p1);
  const int ctas = 132;
  std::vector<int64_t> work(ctas, 0);
  int64_t total = 0;
  for (int cta = 0; cta < ctas; ++cta)
    for (int slot = 0; slot < workSlots(order, ctas); ++slot)
      if (int item = itemOfSlot(order, cta, ctas, slot); item >= 0) {
        int64_t cost = workItem(order, item, p1.heads, 1).row_block + 1;
        work[cta] += cost;
        total += cost;
      }
  double busiest = double(*std::max_element(work.begin(), work.end()));
  EXPECT_LE(busiest / (double(total) / ctas), 1.01);
}

// CTAs that claim items dynamically (hopper/prefill.h) stop after
// claimBound slots, however the claims interleave: every item is still
// claimed exactly once, as long as the CTAs keep claiming until their bound
// or the first claim past the last item. A model of the protocol: CTAs take
// turns in a pseudo-random order, each slot a claim of the counter's next
// value; the fast CTA takes every turn it can.
TEST(WorkOrder, DynamicClaimsCoverEveryItemOnce) {
  for (int items : {1, 7, 131, 132, 133, 2048, 4999})
    for (int ctas : {1, 3, 7, 132}) {
      int bound = claimBound(items, ctas);
      ASSERT_GE(int64_t(bound) * ctas, items);
      std::vector<int> slotsUsed(ctas, 0);
      std::vector<bool> done(ctas, false);
      std::vector<int> claimed(items, 0);
      int counter = 0, finished = 0;
      unsigned state = 12345u + unsigned(items * 31 + ctas);
      while (finished < ctas) {
        state = state * 1664525u + 1013904223u;
        // CTA 0 is fast: half the turns are its own.
        int cta = (state >> 8) % 2 ? 0 : int((state >> 9) % unsigned(ctas));
        if (done[cta])
          continue;
        int item = counter++;
        if (item < items)
          ++claimed[item];
        ++slotsUsed[cta];
        if (item >= items || slotsUsed[cta] == bound) {
          done[cta] = true;
          ++finished;
        }
      }
      for (int item = 0; item < items; ++item)
        EXPECT_EQ(claimed[item], 1)
            << "item " << item << " of " << items << ", " << ctas << " CTAs";
    }
}

} // namespace
} // namespace attnc
