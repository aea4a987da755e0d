//===- FuzzOptions.h - compile options carried by a fuzz input --*- C++ -*-===//
//
// A fuzz input may name compile options in a comment line, which MLIR's
// parser skips, so a reproducer carries everything it needs:
//   // fuzz: arch=sm_80 warps=4 stages=3 sms=8
// (also consumers=, q_buffers=, cluster= and relief=). Values are clamped to
// what a user can ask for: the CLI's --prefill-warps and --decode-stages
// take 0..8, --consumers 0..3, --query-buffers 0..2, --register-relief 0..2
// and --cluster-ctas 1..2 (any other number is 1), the API's multiprocessor
// count is any positive number, and the shared memory comes with the arch
// (as the API reads it from the device).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_FUZZ_FUZZOPTIONS_H
#define ATTNC_TEST_FUZZ_FUZZOPTIONS_H

#include "attnc/Driver/Pipeline.h"

#include <string_view>

namespace attnc::fuzz {

/// The options of the first `// fuzz:` line of `source`; the defaults of
/// `attnc compile` without one.
CompileOptions optionsFrom(std::string_view source);

} // namespace attnc::fuzz

#endif // ATTNC_TEST_FUZZ_FUZZOPTIONS_H
