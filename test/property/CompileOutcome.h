//===- CompileOutcome.h - compile a variant and judge it --------*- C++ -*-===//
//
// What the compile-only property tests assert about a variant: it compiles
// to a cubin whose ptxas report shows no spills and no stack frame, or the
// pipeline refuses it with a diagnostic that names the feature. Anything
// else (an NVRTC or ptxas error, a verifier error) is a failure.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_PROPERTY_COMPILEOUTCOME_H
#define ATTNC_TEST_PROPERTY_COMPILEOUTCOME_H

#include "attnc/Driver/Compile.h"

#include <functional>
#include <string>
#include <vector>

namespace attnc::property {

/// Phrases of the pipeline's diagnostics that refuse a variant by naming
/// what it cannot compile: attn-plan's unsupported features, and the C++
/// emitter's regions with an op it has no lowering for (the op is named in
/// the conversion's error before it).
inline constexpr const char *kRefusalPhrases[] = {
    "cannot be compiled for the GPU yet: ",
    "region the C++ emitter cannot express"};

struct Outcome {
  enum class Kind { Compiled, Refused, Failed };
  Kind kind = Kind::Failed;
  /// Compiled: the ptxas log. Refused: the diagnostics. Failed: the error.
  std::string detail;
  /// Compiled: the ptxas lines that report spills or a stack frame.
  std::vector<std::string> spills;
  /// Compiled: the register relief the kept plan took (compileVariant),
  /// and why a step of it failed (ok when none did).
  int64_t registerRelief = 0;
  Status reliefError;
  double milliseconds = 0;
};

/// Compiles `mlir` through the whole pipeline and NVRTC, without the disk
/// cache, and judges the result.
Outcome compileAndJudge(const std::string &mlir, const std::string &fileName,
                        const CompileOptions &options);

/// Runs `job(i)` for i in [0, count) on a few threads (NVRTC compiles in
/// parallel; CI machines have few cores).
void parallelFor(int count, const std::function<void(int)> &job);

} // namespace attnc::property

#endif // ATTNC_TEST_PROPERTY_COMPILEOUTCOME_H
