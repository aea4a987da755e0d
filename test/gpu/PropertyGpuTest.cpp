//===- PropertyGpuTest.cpp - random variants against the reference --------===//
//
// The generator of the compile-only property test (test/property), limited
// to what the GPU pipeline compiles and to small problems, runs each variant
// on random inputs with poisoned outputs and compares every output with the
// double-precision reference. ATTNC_PROPERTY_SEED draws another stream.
// Without a GPU each case is skipped with the reason.
//
//===----------------------------------------------------------------------===//

#include "ReferenceCheck.h"
#include "VariantGenerator.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace attnc {
namespace {

uint64_t streamSeed() {
  const char *text = std::getenv("ATTNC_PROPERTY_SEED");
  return text && *text ? std::strtoull(text, nullptr, 0)
                       : property::kGpuStreamSeed;
}

class RandomVariantOnGpu : public ::testing::TestWithParam<int> {};

TEST_P(RandomVariantOnGpu, MatchesReference) {
  uint64_t seed = streamSeed();
  property::Variant v =
      property::generateVariant(seed, GetParam(), property::gpuStreamOptions());
  std::string where = "seed " + std::to_string(seed) + " index " +
                      std::to_string(GetParam()) + ": " + v.summary + "\n" +
                      v.mlir;
  RunShape shape;
  shape.batch = v.batch;
  shape.qLen = v.qLen;
  shape.kvLen = v.kvLen;
  shape.seed = unsigned(seed + GetParam());
  testing::expectMatchesReference(v.mlir, v.name + ".mlir", shape, v.summary,
                                  where);
}

INSTANTIATE_TEST_SUITE_P(Generated, RandomVariantOnGpu,
                         ::testing::Range(0, property::kGpuStreamVariants));

} // namespace
} // namespace attnc
