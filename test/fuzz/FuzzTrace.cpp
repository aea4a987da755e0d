//===- FuzzTrace.cpp - attnc-fuzz-trace: the simulator's trace parser -----===//
//
// The input is a JSON-lines request trace, as `attnc sim --trace FILE`
// reads it (serving/sim/Trace.cpp, parseTrace). A ParseError is the
// expected answer to most inputs; a crash, a sanitizer report, a hang or an
// allocation past the fuzzer's RSS limit is a finding, and so is a trace
// that parses into requests outside the bounds Workloads.h promises (the
// simulator relies on them).
//
//===----------------------------------------------------------------------===//

#include "sim/Workloads.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace {

[[noreturn]] void broken(const char *what, int line) {
  std::fprintf(stderr,
               "attnc-fuzz-trace: a parsed trace breaks its bounds at "
               "FuzzTrace.cpp:%d: %s\n",
               line, what);
  __builtin_trap();
}
#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond))                                                               \
      broken(#cond, __LINE__);                                                 \
  } while (0)

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace attnc;
  StatusOr<Workload> trace = parseTrace(
      std::string(reinterpret_cast<const char *>(data), size), "fuzz.jsonl");
  if (!trace.ok()) {
    EXPECT(trace.status().code() == ErrorCode::ParseError);
    return 0;
  }
  EXPECT(!trace->requests.empty());
  double arrival = 0;
  for (size_t i = 0; i < trace->requests.size(); ++i) {
    const TracedRequest &request = trace->requests[i];
    // Renumbered densely in arrival order.
    EXPECT(request.id == RequestId(i));
    EXPECT(std::isfinite(request.arrival) && request.arrival >= 0 &&
           request.arrival <= kMaxTraceArrival);
    EXPECT(i == 0 || request.arrival >= arrival);
    arrival = request.arrival;
    EXPECT(!request.prompt.empty() &&
           int64_t(request.prompt.size()) <= kMaxTracePromptTokens);
    for (Token token : request.prompt)
      EXPECT(token >= 0 && int64_t(token) <= kMaxTraceTokenId);
    EXPECT(request.outputLen >= 1 && request.outputLen <= kMaxTraceOutputLen);
    EXPECT(request.maxTokens >= request.outputLen &&
           request.maxTokens <= kMaxTraceOutputLen);
    EXPECT(request.n >= 1 && request.n <= kMaxParallelSamples);
  }
  return 0;
}
