//===- VariantGenerator.h - fuzz bytes to a well-formed variant -*- C++ -*-===//
//
// Text mutations rarely get past MLIR's parser (about 1 in 80 inputs of a
// grown text corpus compiles to CUDA), and Debian's parser is not
// instrumented, so the fuzzer cannot steer through it. This generator reads
// the fuzz bytes as a sequence of choices and writes a variant that parses:
// head counts, dims, element types, layouts, page sizes, masks, modifiers,
// split counts, captures, random score_mod / mask_mod bodies over arith and
// math, merges of states and repeat_kv, plus a `// fuzz:` option line. The
// values lean to what users write and include the edges (0, 1, limits,
// limits + 1, huge), so the verifiers, the planner, the lowering and the
// C++ emission see them.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_FUZZ_VARIANTGENERATOR_H
#define ATTNC_TEST_FUZZ_VARIANTGENERATOR_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnc::fuzz {

/// A variant in the attn dialect chosen by `data`; any bytes, none included,
/// give one.
std::string generateVariant(const uint8_t *data, size_t size);

} // namespace attnc::fuzz

#endif // ATTNC_TEST_FUZZ_VARIANTGENERATOR_H
