//===- RegisterReliefGpuTest.cpp - re-planned kernels, on the GPU ---------===//
//
// Variants whose first plan spills on sm_90a (property::kReliefVariants)
// are planned again with attn-plan's register-relief (compileVariant) and
// run on narrower tiles or fewer query tiles than the planner would give
// them. The compile property test checks, without a GPU, that each was
// planned again and spills nothing; here each runs on random inputs with
// poisoned outputs against the double-precision reference, on a small
// problem.
//
//===----------------------------------------------------------------------===//

#include "ReferenceCheck.h"
#include "VariantGenerator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

namespace attnc {
namespace {

class ReliefPlannedVariantOnGpu : public ::testing::TestWithParam<int> {};

TEST_P(ReliefPlannedVariantOnGpu, MatchesReference) {
  property::VariantId id = property::kReliefVariants[GetParam()];
  property::Variant v = property::generateVariant(id.seed, id.index);
  ASSERT_TRUE(v.expectedRefusals.empty()) << v.summary;
  std::string where = "seed " + std::to_string(id.seed) + " index " +
                      std::to_string(id.index) + ": " + v.summary + "\n" +
                      v.mlir;
  RunShape shape;
  shape.batch = std::min(v.batch, 2);
  shape.qLen = std::min(v.qLen, 300);
  shape.kvLen = std::min(v.kvLen, 700);
  shape.seed = unsigned(id.seed + id.index);
  testing::expectMatchesReference(v.mlir, v.name + ".mlir", shape, v.summary,
                                  where);
}

INSTANTIATE_TEST_SUITE_P(
    FirstPlansSpilled, ReliefPlannedVariantOnGpu,
    ::testing::Range(0, int(std::size(property::kReliefVariants))));

} // namespace
} // namespace attnc
