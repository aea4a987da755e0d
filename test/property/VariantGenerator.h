//===- VariantGenerator.h - random variants as attn text --------*- C++ -*-===//
//
// Draws attention variants over the whole vocabulary of the attn dialect
// (masks, modifiers, regions, layouts, page sizes, head counts, head dims,
// element types, log-sum-exps, decode and prefill, segments) and prints each
// as the text of one function. A variant is a function of its own seed, so
// a failure is reproduced from the seed printed beside it.
//
// The generator also says which refusal it expects when it draws something
// the GPU pipeline does not compile (an fp8 cache, a latent cache, a head
// dim off the grid, segments with a paged cache), so the property tests can
// tell a named refusal they asked for from one they did not.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_PROPERTY_VARIANTGENERATOR_H
#define ATTNC_TEST_PROPERTY_VARIANTGENERATOR_H

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::property {

/// One drawn variant: its text and what the tests need to run it.
struct Variant {
  uint64_t seed = 0;
  std::string name;    // the function's symbol
  std::string summary; // one line: schedule, dims, layouts, features
  std::string mlir;
  /// When the variant uses features the GPU pipeline cannot compile by
  /// design, the texts that name them: a refusal must contain one of them.
  /// Empty when it should compile.
  std::vector<std::string> expectedRefusals;
  bool decode = false;
  // A small problem to run it on: requests, queries per request (where the
  // type says `?`) and keys per request.
  int batch = 1, qLen = 1, kvLen = 1;
};

struct GeneratorOptions {
  /// Allow features the GPU pipeline refuses by name (head dims off the
  /// grid, segments with pages).
  bool unsupported = true;
  /// Cap query heads and sequence lengths so that the double-precision
  /// reference stays quick (GPU runs).
  bool smallProblems = false;
};

/// Variant number `index` of the stream seeded with `seed`: the same pair
/// always gives the same variant.
Variant generateVariant(uint64_t seed, uint64_t index,
                        const GeneratorOptions &options = {});

/// The pieces of text that score_mod / mask_mod snippets of the generator's
/// menu add to a variant: the function arguments of their captured buffers,
/// the op's `captures(...)` clause and the regions after its types.
struct RegionText {
  std::string functionArgs;   // ", %bias_arg: memref<8x64xf32>, ..." or ""
  std::string capturesClause; // " captures(%bias_arg, ... : ...)" or ""
  std::string regions;        // "  score_mod {...}\n  mask_mod {...}\n"
};

/// The text of the menu's score_mod `scoreMod` and mask_mod `maskMod`
/// ("" for none; e.g. "relative_bias", "document") for `heads` query heads.
RegionText menuRegions(const std::string &scoreMod, const std::string &maskMod,
                       int heads);

/// The head dims every kernel must handle: multiples of 16 from 16 to 256.
std::vector<int> gridHeadDims();

/// The stream the GPU property test runs against the reference, and CI
/// compiles so that a GPU failure is one of numbers: only what the GPU
/// pipeline compiles, on small problems.
inline constexpr uint64_t kGpuStreamSeed = 20261123;
inline constexpr int kGpuStreamVariants = 40;
inline GeneratorOptions gpuStreamOptions() {
  GeneratorOptions options;
  options.unsupported = false;
  options.smallProblems = true;
  return options;
}

/// One variant of a stream of the whole vocabulary (default options).
struct VariantId {
  uint64_t seed;
  int index;
};

/// Variants whose first plans spill on sm_90a (heavy score work at head
/// dims 160-192, a gathering producer, an fp32 output beside three
/// consumers), so that the driver plans them again with register relief:
/// the compile property test holds each to that and to no spills, and the
/// GPU tests run them against the reference. Seed 8's three replaced
/// (7, 12), (7, 42) and (20261122, 53) when the variants' numbers became
/// launch values (2026-11-29) and their first plans stopped spilling.
inline constexpr VariantId kReliefVariants[] = {
    {7, 0}, {7, 121}, {8, 21}, {8, 64}, {8, 102}};

} // namespace attnc::property

#endif // ATTNC_TEST_PROPERTY_VARIANTGENERATOR_H
