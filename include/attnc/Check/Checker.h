//===- Checker.h - run a variant against the reference ----------*- C++ -*-===//
//
// `attnc run --check` and the GPU tests: random inputs (never zeros) in the
// variant's layouts (ragged index pointers, shuffled pages), outputs
// poisoned with NaN before the launch, the kernels run, and every output
// compared with the double-precision reference evaluated on the attn-level
// function (regions interpreted in double).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CHECK_CHECKER_H
#define ATTNC_CHECK_CHECKER_H

#include "attnc/Driver/Compile.h"

#include <string>
#include <vector>

namespace attnc {

struct RunShape {
  int batch = 2;
  int qLen = 0; // queries per request where the type says `?` (0: 64)
  int kvLen = 256;
  /// Ragged and paged requests get random lengths in [len/2, len].
  bool varyLengths = true;
  int splits = 0; // force the KV splits of split-KV launches (0: auto)
  /// Cap the CTAs of persistent (warp-specialized) launches (0: as many as
  /// the GPU holds at once).
  int64_t gridCtas = 0;
  /// Bytes each output's address lies past an allocation's start: a
  /// multiple of the element size that is not one of 16 leaves the
  /// output misaligned for 16-byte stores (tests of the kernels' way
  /// around them).
  int64_t outputOffsetBytes = 0;
  /// What the rows and pages no request reads hold: random finite values,
  /// or NaN or +Inf in every element, as memory from torch.empty may (a
  /// paged cache's never written slots, a ragged buffer's unused tail).
  /// The kernels must not let them reach an output (issue 50).
  enum class Unread { Random, NaN, Inf };
  Unread unread = Unread::Random;
  /// Rows a ragged key/value buffer holds past its last request's keys,
  /// counted in the batch's kv_tokens as Python's attention() counts
  /// k.shape[0].
  int kvTailRows = 0;
  unsigned seed = 1;
  int timingIterations = 0;
  /// Compare with the reference (slow for long sequences); off: only time.
  bool compare = true;
};

struct RunReport {
  /// Largest relative error over the function's outputs.
  double maxError = 0;
  std::vector<std::string> outputErrors; // "out 0: 3.1e-3"
  double milliseconds = 0;               // mean per launch sequence, when timed
  std::string layoutSummary;
};

/// Compiles (through the caches) and runs `source`'s function once on
/// random inputs, and compares with the reference.
StatusOr<RunReport> runAndCheck(const std::string &source,
                                const std::string &fileName,
                                const CompileOptions &options,
                                const RunShape &shape,
                                const std::string &cacheDir = "");

} // namespace attnc

#endif // ATTNC_CHECK_CHECKER_H
