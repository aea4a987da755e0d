//===- KVSplitsTest.cpp - how many parts split-KV launches cut keys into --===//
//
// Splits fill one wave of the GPU and never start a second, partly empty
// one; they stop at one per key tile and at the plan's limit.
//
//===----------------------------------------------------------------------===//

#include "exec/KVSplits.h"

#include <gtest/gtest.h>

namespace attnc {
namespace {

// An H200 holding two decode CTAs per multiprocessor.
constexpr int64_t kResident = 2 * 132;

// Batches that fill the GPU on their own are not split.
TEST(KVSplitsTest, FullBatchesStayWhole) {
  EXPECT_EQ(chooseKVSplits(64 * 8, kResident, 64, 32).splits, 1); // 64 x 4k
  EXPECT_EQ(chooseKVSplits(64 * 4, kResident, 64, 32).splits, 1); // group 7
  EXPECT_EQ(chooseKVSplits(kResident, kResident, 64, 32).splits, 1);
}

// Small batches take as many splits as fit one wave, never one more.
TEST(KVSplitsTest, SplitsFillOneWave) {
  for (int64_t ctas : {1, 3, 8, 17, 64, 100, 128, 200}) {
    int64_t splits = chooseKVSplits(ctas, kResident, 1 << 20, 1 << 20).splits;
    EXPECT_LE(splits * ctas, kResident) << ctas;
    EXPECT_GT((splits + 1) * ctas, kResident) << ctas;
  }
  EXPECT_EQ(chooseKVSplits(8 * 8, kResident, 512, 32).splits, 4); // 8 x 32k
}

// No split is left without a key tile, and the plan's limit holds.
TEST(KVSplitsTest, BoundedByTilesAndPlan) {
  EXPECT_EQ(chooseKVSplits(8, kResident, 3, 32).splits, 3);
  EXPECT_EQ(chooseKVSplits(8, kResident, 1 << 20, 32).splits, 32);
  EXPECT_EQ(chooseKVSplits(8, kResident, 0, 32).splits, 1);
  EXPECT_EQ(chooseKVSplits(8, kResident, 100, 1).splits, 1);
  EXPECT_EQ(chooseKVSplits(0, kResident, 100, 16).splits, 16);
}

// A ragged batch whose longest request would outlast the rest is split
// until its shares match the even load (32 requests, one of 512 tiles and
// the rest 1740 tiles in all, 8 KV heads); an even batch is not.
TEST(KVSplitsTest, RaggedBatchesSplitTheirLongestRequest) {
  EXPECT_EQ(chooseKVSplits(32 * 8, kResident, 512, 32).splits, 1);
  int64_t splits = chooseKVSplits(32 * 8, kResident, 512, 32, 32, 1740).splits;
  EXPECT_EQ(splits, 10); // 1740 x 8 / 264 = 53 tiles a CTA; 512 / 53
  EXPECT_EQ(chooseKVSplits(32 * 8, kResident, 512, 32, 32, 32 * 512).splits, 1);
  EXPECT_EQ(chooseKVSplits(8 * 8, kResident, 512, 32, 8, 8 * 512).splits, 4);
  EXPECT_EQ(chooseKVSplits(32 * 8, kResident, 512, 4, 32, 1740).splits, 4);
}

// A kernel that merges its own splits lets each request of a ragged batch
// take only the splits its tiles need: shares of half the even load, the
// longest request within the plan's limit; even batches keep even shares.
TEST(KVSplitsTest, MergingKernelsCutRaggedRequestsIntoShares) {
  KVSplits ragged =
      chooseKVSplits(32 * 8, kResident, 512, 32, 32, 1740, /*perRequest=*/true);
  EXPECT_EQ(ragged.splits, 19); // shares of 27 tiles: half of 53
  EXPECT_EQ(ragged.tilesPerSplit, 27);
  EXPECT_GE(ragged.splits * ragged.tilesPerSplit, 512);
  KVSplits capped =
      chooseKVSplits(32 * 8, kResident, 512, 16, 32, 1740, /*perRequest=*/true);
  EXPECT_EQ(capped.splits, 16);
  EXPECT_EQ(capped.tilesPerSplit, 32); // the longest request in 16 shares
  KVSplits even = chooseKVSplits(8 * 8, kResident, 512, 32, 8, 8 * 512,
                                 /*perRequest=*/true);
  EXPECT_EQ(even.splits, 4);
  EXPECT_EQ(even.tilesPerSplit, 0);
  KVSplits single = chooseKVSplits(8, kResident, 512, 16, 1, 512, true);
  EXPECT_EQ(single.splits, 16);
  EXPECT_EQ(single.tilesPerSplit, 0);
}

} // namespace
} // namespace attnc
