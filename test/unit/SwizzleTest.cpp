//===- SwizzleTest.cpp - the shared-memory layout of every head dim -------===//
//
// The device's tiles use swizzle<RowElems>: for every row width the kernels
// take (multiples of 16 halves up to 256), each row's chunks must land in
// that row's own slots, once each, and the eight rows an ldmatrix phase
// reads at one logical chunk must hit eight different 16-byte bank groups.
//
//===----------------------------------------------------------------------===//

#include "attnc/device/swizzle.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace attnc {
namespace {

template <int RowElems> void checkLayout() {
  SCOPED_TRACE(RowElems);
  constexpr int chunks = RowElems / 8, rows = 64;
  std::set<int> slots;
  for (int row = 0; row < rows; ++row)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      int at = swizzle<RowElems>(row, chunk * 8);
      ASSERT_EQ(at % 8, 0) << "chunks stay 16-byte aligned";
      ASSERT_EQ(at / RowElems, row) << "chunk " << chunk << " left its row";
      ASSERT_TRUE(slots.insert(at).second) << "two chunks share a slot";
      // Elements within a chunk keep their order.
      for (int e = 0; e < 8; ++e)
        ASSERT_EQ(swizzle<RowElems>(row, chunk * 8 + e), at + e);
    }
  // One ldmatrix phase: eight consecutive 8-aligned rows, one logical chunk.
  for (int row0 = 0; row0 < rows; row0 += 8)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      std::set<int> bankGroups;
      for (int r = row0; r < row0 + 8; ++r)
        bankGroups.insert((swizzle<RowElems>(r, chunk * 8) / 8) % 8);
      EXPECT_EQ(bankGroups.size(), 8u) << "rows " << row0 << ".." << row0 + 7
                                       << " at chunk " << chunk << " conflict";
    }
}

template <int... Dims> void checkAll(std::integer_sequence<int, Dims...>) {
  (checkLayout<16 * (Dims + 1)>(), ...);
}

TEST(Swizzle, EveryHeadDimIsAPermutationWithoutBankConflicts) {
  checkAll(std::make_integer_sequence<int, 16>()); // 16, 32, ..., 256
}

} // namespace
} // namespace attnc
