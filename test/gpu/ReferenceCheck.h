//===- ReferenceCheck.h - a variant on the GPU against the reference -----===//
//
// What the variant suites (AttentionGpuTest, LatentGpuTest, PropertyGpuTest)
// assert of each case: run once on random inputs with poisoned outputs,
// every output within 1e-2 of the double-precision reference.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_GPU_REFERENCECHECK_H
#define ATTNC_TEST_GPU_REFERENCECHECK_H

#include "attnc/Check/Checker.h"
#include "cuda/CudaDriver.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

namespace attnc::testing {

/// Compiles `text` (reported as `fileName`), runs it for `shape` and expects
/// it to match the reference; `label` names the case in the log and
/// `context` (the variant, and how it was drawn) comes with a failure.
/// Skips the test, with the reason, where there is no GPU.
inline void expectMatchesReference(const std::string &text,
                                   const std::string &fileName,
                                   const RunShape &shape,
                                   const std::string &label,
                                   const std::string &context,
                                   const CompileOptions &options = {}) {
  StatusOr<cuda::Driver *> driver = cuda::Driver::get();
  if (!driver.ok())
    GTEST_SKIP() << "no GPU: " << driver.status().message();
  StatusOr<RunReport> report = runAndCheck(text, fileName, options, shape, "-");
  ASSERT_TRUE(report.ok()) << report.status().toString() << "\n" << context;
  std::string details;
  for (const std::string &line : report->outputErrors)
    details += "  " + line + "\n";
  std::cout << "[ " << label << " ] " << report->layoutSummary << "\n"
            << details;
  EXPECT_LT(report->maxError, 1e-2) << context << details;
}

} // namespace attnc::testing

#endif // ATTNC_TEST_GPU_REFERENCECHECK_H
