//===- RegisterReliefGpuTest.cpp - re-planned kernels against the reference
//===//
//
// Variants whose first plan spills on sm_90a are planned again with
// attn-plan's register-relief (compileVariant) and run on narrower tiles
// or fewer query tiles than the planner would give them. These are the
// variants of the property stream seeded 7 whose first plans spilled when
// the driver learned to plan again (RegisterReliefTest and the compile
// property test's ReplannedStream check, without a GPU, that what is kept
// spills nothing);
// here each runs on random inputs with poisoned outputs against the
// double-precision reference, on a small problem.
//
//===----------------------------------------------------------------------===//

#include "ReferenceCheck.h"
#include "VariantGenerator.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace attnc {
namespace {

constexpr uint64_t kReliefSeed = 7;

class ReliefPlannedVariantOnGpu : public ::testing::TestWithParam<int> {};

TEST_P(ReliefPlannedVariantOnGpu, MatchesReference) {
  property::Variant v = property::generateVariant(kReliefSeed, GetParam());
  ASSERT_TRUE(v.expectedRefusals.empty()) << v.summary;
  std::string where = "seed " + std::to_string(kReliefSeed) + " index " +
                      std::to_string(GetParam()) + ": " + v.summary + "\n" +
                      v.mlir;
  RunShape shape;
  shape.batch = std::min(v.batch, 2);
  shape.qLen = std::min(v.qLen, 300);
  shape.kvLen = std::min(v.kvLen, 700);
  shape.seed = unsigned(kReliefSeed + GetParam());
  testing::expectMatchesReference(v.mlir, v.name + ".mlir", shape, v.summary,
                                  where);
}

INSTANTIATE_TEST_SUITE_P(SeedSeven, ReliefPlannedVariantOnGpu,
                         ::testing::Values(0, 12, 42, 51, 68, 121, 122, 125));

} // namespace
} // namespace attnc
