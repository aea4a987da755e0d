//===- Workloads.h - synthetic serving workloads ----------------*- C++ -*-===//
//
// Deterministic (per seed) request streams with the prefix-sharing shapes
// that make a prefix cache and its scheduling policy matter. Prompts of
// later requests may quote earlier ones' outputs (a conversation, a branch
// of thought); such a request names the one it follows in `after`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SIM_WORKLOADS_H
#define ATTNC_RUNTIME_SIM_WORKLOADS_H

#include "sched/Request.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc {

/// What a trace line may hold (docs/SIMULATOR.md). The bounds keep every
/// value the simulator derives exact and finite: tokens fit a Token, a
/// request fits the largest cache (kMaxCacheTokens in Simulator.h) twice,
/// ids compare exactly as doubles, and arrival times keep sub-microsecond
/// resolution.
constexpr double kMaxTraceArrival = 1e9;
constexpr int64_t kMaxTraceTokenId = INT32_MAX;
constexpr int64_t kMaxTracePromptTokens = int64_t(1) << 20;
constexpr int64_t kMaxTraceOutputLen = int64_t(1) << 20;
constexpr int64_t kMaxTraceId = (int64_t(1) << 53) - 1;
/// Arrays and objects nested inside a request, the request included.
constexpr int kMaxTraceNesting = 256;
/// max_tokens of a trace request that gives none: what an OpenAI-style
/// client leaves to the server, which then reserves up to a cap (SGLang
/// clips its estimate at 4096; vLLM uses the context left). Never the
/// answer's length, which no scheduler knows; raised to output_len when
/// that is longer, since the recorded answer fit its limit.
constexpr int64_t kDefaultTraceMaxTokens = 4096;

/// makeWorkload's online arrival rates, per second: slower than one every
/// 1000 s keeps arrivals of the largest workload under kMaxTraceArrival.
constexpr double kMinArrivalRate = 1e-3;
constexpr double kMaxArrivalRate = 1e6;

struct Workload {
  std::string name;
  /// In id order; a request comes after the one it follows.
  std::vector<TracedRequest> requests;
};

/// Names accepted by makeWorkload: few-shot, multi-turn, branching, agents.
const std::vector<std::string> &workloadNames();

/// `arrivalsPerSecond` spaces independent requests as a Poisson process
/// (online mode, in [kMinArrivalRate, kMaxArrivalRate]); 0 queues them all
/// at time 0 (offline mode).
StatusOr<Workload> makeWorkload(const std::string &name, uint64_t seed,
                                double arrivalsPerSecond);

/// One request per line: {"id": …, "arrival": seconds, "prompt": [token
/// ids], "output_len": n, "max_tokens": m}, within the kMaxTrace* bounds
/// above (max_tokens at least output_len; when absent,
/// max(defaultMaxTokens, output_len)). Errors (ErrorCode::ParseError) name
/// the line, the byte column and the field. `defaultMaxTokens` must be in
/// [1, kMaxTraceOutputLen] (InvalidArgument if not).
StatusOr<Workload> readTrace(const std::string &path,
                             int64_t defaultMaxTokens = kDefaultTraceMaxTokens);
StatusOr<Workload>
parseTrace(const std::string &text, const std::string &name,
           int64_t defaultMaxTokens = kDefaultTraceMaxTokens);

} // namespace attnc

#endif // ATTNC_RUNTIME_SIM_WORKLOADS_H
