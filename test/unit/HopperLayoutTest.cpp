//===- HopperLayoutTest.cpp - TMA tiles, wgmma descriptors, fragments -----===//
//
// The Hopper blocks put a tile where TMA writes it and read it back through
// wgmma descriptors; neither engine runs here, so each is modelled from
// its documentation, independently of hopper/smem_layout.h:
//  - TMA with SWIZZLE_128B writes box element (r, c) at byte r * 128 + 2 c
//    of the box, then XORs address bits [4, 7) with bits [7, 10);
//  - wgmma reads the canonical layouts of the PTX ISA ("Shared memory
//    matrix layout"; the same forms CuTe's make_gmma_desc documents), from
//    the descriptor's start address, leading and stride byte offsets, and
//    applies the same XOR for the 128-byte swizzle.
// Every element of every tile shape the kernels use must land, under both
// models, at the address Sw128Tile::offset gives. The fragment layouts of
// the accumulator and of A in registers must be bijections, and rounding
// an S accumulator into P fragments must keep every element's (row, col).
//
//===----------------------------------------------------------------------===//

#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/shared_storage.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace attnc::hopper {
namespace {

/// Where a 128-byte swizzle moves a shared-memory byte address.
uint32_t swizzle128(uint32_t address) {
  return address ^ (((address >> 7) & 7) << 4);
}

/// TMA: box element (r, c) of a [rows, 64] 16-bit box written at `dst`.
uint32_t tmaAddress(uint32_t dst, int r, int c) {
  return swizzle128(dst + uint32_t(r) * 128 + uint32_t(c) * 2);
}

struct Fields {
  uint32_t start, leading, stride, layout, baseOffset;
};
Fields decode(uint64_t d) {
  return {uint32_t(d & 0x3FFF) << 4, uint32_t((d >> 16) & 0x3FFF) << 4,
          uint32_t((d >> 32) & 0x3FFF) << 4, uint32_t(d >> 62),
          uint32_t((d >> 49) & 7)};
}

/// wgmma: element (mn, k) of a K-major 16-bit operand (k < 16) in the
/// 128-byte-swizzled canonical layout ((8, m), (8, 2)) : ((64, SBO), (1, 8))
/// in elements, SBO in bytes: rows 128 bytes apart within an 8-row group,
/// groups SBO apart, 16-byte chunks of k consecutive.
uint32_t wgmmaKMajor(uint64_t descriptor, int mn, int k) {
  Fields f = decode(descriptor);
  EXPECT_EQ(f.layout, 1u) << "128-byte swizzle";
  uint32_t linear = f.start + (mn % 8) * 128 + (mn / 8) * f.stride + k * 2;
  return swizzle128(linear);
}

/// wgmma: element (mn, k) of an MN-major 16-bit operand in the canonical
/// layout ((8, 8, n), (8, 2)) : ((1, 8, LBO), (64, SBO)) in elements: 64
/// consecutive mn in a 128-byte row, the next 64 LBO further; k rows 128
/// bytes apart within an 8-row group, groups SBO apart.
uint32_t wgmmaMNMajor(uint64_t descriptor, int mn, int k) {
  Fields f = decode(descriptor);
  EXPECT_EQ(f.layout, 1u) << "128-byte swizzle";
  uint32_t linear = f.start + (mn % 64) * 2 + (mn / 64) * f.leading +
                    (k % 8) * 128 + (k / 8) * f.stride;
  return swizzle128(linear);
}

// An aligned, non-zero tile address, so the start field is exercised.
constexpr uint32_t kBase = 0x6000;

template <int Rows, int Cols> void checkTile() {
  using Tile = Sw128Tile<Rows, Cols>;
  SCOPED_TRACE(::testing::Message() << Rows << " x " << Cols);
  // The tile is a permutation of its bytes' 16-byte chunks.
  std::set<uint32_t> chunks;
  for (int row = 0; row < Rows; ++row)
    for (int col = 0; col < Tile::kBlocks * Tile::kBlockCols; col += 8) {
      uint32_t at = Tile::offset(row, col);
      ASSERT_LT(at, uint32_t(Tile::kBytes));
      ASSERT_TRUE(chunks.insert(at).second) << "two chunks share a slot";
    }
  // TMA: one box per column block, at the block's start.
  for (int b = 0; b < Tile::kBlocks; ++b)
    for (int r = 0; r < Rows; ++r)
      for (int c = 0; c < Tile::kBlockCols; ++c)
        ASSERT_EQ(tmaAddress(kBase + b * Tile::kBlockBytes, r, c),
                  kBase + Tile::offset(r, b * Tile::kBlockCols + c))
            << "TMA box " << b << " element (" << r << ", " << c << ")";
  // wgmma, K-major (Q and K): step s covers columns 16 s .. 16 s + 15.
  for (int s = 0; s < Cols / kWgmmaK; ++s) {
    uint64_t d = Tile::kMajor(kBase, s);
    EXPECT_EQ(decode(d).baseOffset, 0u);
    for (int row = 0; row < Rows; ++row)
      for (int k = 0; k < kWgmmaK; ++k)
        ASSERT_EQ(wgmmaKMajor(d, row, k),
                  kBase + Tile::offset(row, s * kWgmmaK + k))
            << "K-major step " << s << " (" << row << ", " << k << ")";
  }
  // wgmma, MN-major (V): step s covers rows 16 s .. 16 s + 15, N = Cols.
  for (int s = 0; s < Rows / kWgmmaK; ++s) {
    uint64_t d = Tile::mnMajor(kBase, s);
    for (int col = 0; col < Cols; ++col)
      for (int k = 0; k < kWgmmaK; ++k)
        ASSERT_EQ(wgmmaMNMajor(d, col, k),
                  kBase + Tile::offset(s * kWgmmaK + k, col))
            << "MN-major step " << s << " (" << col << ", " << k << ")";
  }
}

TEST(HopperTiles, TmaAndWgmmaAgreeOnEveryElement) {
  checkTile<64, 64>();   // Q, d64
  checkTile<64, 128>();  // Q, d128: two blocks
  checkTile<64, 192>();  // Q, d192: three
  checkTile<64, 256>();  // Q, d256
  checkTile<128, 128>(); // K or V, 128 tokens
  checkTile<80, 256>();  // K or V, 80 tokens (FA3's d256 tile)
  checkTile<64, 96>();   // a part-filled last block
  checkTile<128, 16>();
}

TEST(HopperTiles, DescriptorFields) {
  // Start 0x400, LBO 16 (unused, K-major), SBO 1024, 128-byte swizzle:
  // the descriptor every K-major SW128 operand at 0x400 has.
  EXPECT_EQ(matrixDescriptor(0x400, 16, 1024, Swizzle::B128),
            0x4000004000010040ull);
  EXPECT_EQ(descriptorLayoutType(Swizzle::None), 0u);
  EXPECT_EQ(descriptorLayoutType(Swizzle::B128), 1u);
  EXPECT_EQ(descriptorLayoutType(Swizzle::B64), 2u);
  EXPECT_EQ(descriptorLayoutType(Swizzle::B32), 3u);
  // A K-major step inside a block moves the start by 32 bytes, the next
  // block by the block's bytes.
  using Tile = Sw128Tile<64, 128>;
  EXPECT_EQ(decode(Tile::kMajor(kBase, 1)).start, kBase + 32);
  EXPECT_EQ(decode(Tile::kMajor(kBase, 4)).start, kBase + 64 * 128);
  EXPECT_EQ(decode(Tile::kMajor(kBase, 1)).stride, 1024u);
  // MN-major: K steps are two atoms; N crosses blocks LBO apart.
  using V = Sw128Tile<128, 256>;
  EXPECT_EQ(decode(V::mnMajor(kBase, 3)).start, kBase + 3 * 2048);
  EXPECT_EQ(decode(V::mnMajor(kBase, 0)).leading, 128u * 128);
  EXPECT_EQ(decode(V::mnMajor(kBase, 0)).stride, 1024u);
  // The TMA swizzle mode is CUtensorMapSwizzle's 128B.
  EXPECT_EQ(uint32_t(kTileSwizzle), 3u);
}

template <int N> void checkAccumulator() {
  SCOPED_TRACE(N);
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < kWarpgroupThreads; ++t)
    for (int i = 0; i < Accumulator<N>::kRegs; ++i) {
      int row = AccumulatorLayout::row(t, i),
          col = AccumulatorLayout::col(t, i);
      ASSERT_TRUE(row >= 0 && row < kWgmmaM && col >= 0 && col < N);
      ASSERT_TRUE(seen.insert({row, col}).second)
          << "thread " << t << " register " << i;
      // Registers come in pairs of adjacent columns (float2 stores).
      if (i % 2 == 1)
        ASSERT_EQ(col, AccumulatorLayout::col(t, i - 1) + 1);
    }
  EXPECT_EQ(seen.size(), size_t(kWgmmaM * N));
  // S becomes P in the same thread: A step k, register r, element h holds
  // S's (row, 16 k + col).
  for (int t = 0; t < kWarpgroupThreads; ++t)
    for (int k = 0; k < N / kWgmmaK; ++k)
      for (int r = 0; r < 4; ++r)
        for (int h = 0; h < 2; ++h) {
          int i = accumulatorIndexOfA(k, r, h);
          ASSERT_LT(i, Accumulator<N>::kRegs);
          EXPECT_EQ(AccumulatorLayout::row(t, i), AFragmentLayout::row(t, r));
          EXPECT_EQ(AccumulatorLayout::col(t, i),
                    k * kWgmmaK + AFragmentLayout::col(t, r, h));
        }
}

TEST(HopperFragments, AccumulatorCoversTheTileOnceAndFeedsA) {
  checkAccumulator<16>();
  checkAccumulator<64>();
  checkAccumulator<80>();
  checkAccumulator<128>();
  checkAccumulator<256>();
}

TEST(HopperFragments, AFragmentCoversOneK16StepOnce) {
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < kWarpgroupThreads; ++t)
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h)
        ASSERT_TRUE(seen.insert({AFragmentLayout::row(t, r),
                                 AFragmentLayout::col(t, r, h)})
                        .second);
  EXPECT_EQ(seen.size(), size_t(kWgmmaM * kWgmmaK));
  EXPECT_EQ(*seen.rbegin(), std::make_pair(kWgmmaM - 1, kWgmmaK - 1));
}

TEST(HopperRing, SlotsWrapAndFlipTheirPhase) {
  RingSlot<2> two;
  std::vector<std::pair<unsigned, unsigned>> seen;
  for (int i = 0; i < 5; ++i, two.advance())
    seen.push_back({two.index, two.phase});
  EXPECT_EQ(seen, (std::vector<std::pair<unsigned, unsigned>>{
                      {0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 0}}));
  RingSlot<1> one;
  one.advance();
  EXPECT_EQ(one.index, 0u);
  EXPECT_EQ(one.phase, 1u);
}

/// The warp-specialized CTAs' layouts (shared_storage.h): from the
/// atom-aligned base, every tile TMA writes and wgmma reads starts on a
/// swizzle atom (the descriptors' base offset is 0), the barriers start on
/// 8 bytes, and the regions with one atom of alignment slack are the size
/// the planner asks for.
TEST(HopperSharedStorage, TilesStartOnAtomsAndFillTheSize) {
  for (i64 qk : {16, 48, 64, 80, 128, 192, 256, 320, 576})
    for (i64 v : {16, 64, 112, 128, 256, 512})
      for (i64 n : {16, 48, 64, 128, 176, 256})
        for (i64 stages : {2, 3, 4}) {
          LatentStorage l = latentStorage(kWgmmaM, n, qk, stages);
          for (i64 at : {l.q, l.kv, l.p})
            EXPECT_EQ(at % kAtomBytes, 0) << qk << " " << n;
          EXPECT_EQ(l.barriers % 8, 0);
          EXPECT_EQ(l.barriers + 8 * l.barrierCount + kAtomBytes, l.bytes);
          for (i64 consumers : {1, 2, 3})
            for (i64 buffers : {1, 2}) {
              WarpSpecializedStorage w = warpSpecializedStorage(
                  kWgmmaM * consumers, n, qk, v, stages, consumers, buffers);
              for (i64 at : {w.q, w.k, w.v})
                EXPECT_EQ(at % kAtomBytes, 0) << qk << " " << v << " " << n;
              EXPECT_EQ(w.barriers % 8, 0);
              EXPECT_EQ(w.itemSlots, w.barriers + 8 * w.barrierCount);
              EXPECT_EQ(w.itemSlots + kItemSlotBytes * kItemSlots + kAtomBytes,
                        w.bytes);
            }
        }
}

} // namespace
} // namespace attnc::hopper
