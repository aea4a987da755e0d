//===- FuzzVariants.cpp - attnc-fuzz-variants: a variant from the input ---===//
//
// The fuzz input chooses a well-formed variant (VariantGenerator.h), which
// then goes through the same pipeline as attnc-fuzz's text. With
// ATTNC_FUZZ_PRINT set, each variant is printed to stdout: that text is the
// reproducer for attnc-fuzz and test/fuzz/regressions.
//
//===----------------------------------------------------------------------===//

#include "FuzzPipeline.h"
#include "VariantGenerator.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const bool print = std::getenv("ATTNC_FUZZ_PRINT") != nullptr;
  std::string variant = attnc::fuzz::generateVariant(data, size);
  if (print) {
    std::fwrite(variant.data(), 1, variant.size(), stdout);
    std::fflush(stdout);
  }
  attnc::fuzz::compileForFuzzing(variant);
  return 0;
}
