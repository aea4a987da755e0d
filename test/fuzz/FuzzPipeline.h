//===- FuzzPipeline.h - the compiler's front half, for fuzzing --*- C++ -*-===//
//
// Three fuzz targets share it: attnc-fuzz takes the fuzz input as the
// variant's text (FuzzText.cpp), attnc-fuzz-variants writes a variant from
// the input (FuzzVariants.cpp), attnc-fuzz-regions compiles the variants
// attnc_variant_from_spec writes around fuzzed regions (FuzzRegions.cpp). The
// input may carry compile options in a line the parser skips, `// fuzz:
// arch=sm_80 warps=4 stages=3 sms=8` (FuzzOptions.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_FUZZ_FUZZPIPELINE_H
#define ATTNC_TEST_FUZZ_FUZZPIPELINE_H

#include <string>

namespace attnc::fuzz {

/// How far an input got.
enum class Reached { ParseError, CompileError, Cuda };

/// Parses `source` and compiles it to CUDA text as `attnc compile
/// --emit=cuda` would, discarding the diagnostics and the result.
Reached compileForFuzzing(const std::string &source);

} // namespace attnc::fuzz

#endif // ATTNC_TEST_FUZZ_FUZZPIPELINE_H
