//===- Request.h - a generation request -------------------------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_SCHED_REQUEST_H
#define ATTNC_RUNTIME_SCHED_REQUEST_H

#include "radix/RadixCache.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace attnc {

using RequestId = int64_t;

/// What an engine knows of a request when it arrives: the scheduler never
/// learns how long the answer will be, only its limit.
struct Request {
  RequestId id = 0;
  /// Seconds from the start of the run.
  double arrival = 0;
  std::vector<Token> prompt;
  /// Output tokens the request may generate at most; it stops earlier when
  /// the engine says so (an end-of-sequence token, a stop string).
  int64_t maxTokens = 1;
  /// A request whose prompt continues another's conversation (its prompt
  /// and output) is released only once that request has finished.
  std::optional<RequestId> after;
  /// Seconds between `after` finishing and this request arriving.
  double thinkTime = 0;
  /// Requests share cached KV only within one namespace (a LoRA adapter's
  /// id, a tenant's salt).
  CacheNamespace cacheNamespace = 0;
  /// Higher goes first; the policy orders requests of one priority.
  int32_t priority = 0;
  /// Parallel samples (vLLM's n): the prompt is computed once and each
  /// sample continues it as a branch of its own, forked when the prompt
  /// completes, sharing the prompt's pages (copy-on-write of its partial
  /// last page). In [1, kMaxParallelSamples].
  int32_t n = 1;
};

constexpr int32_t kMaxParallelSamples = 256;

/// A request of a workload (a trace, a synthetic workload) and the answer
/// the simulated model gives it: `outputLen` tokens, the last one its end
/// of sequence. Only whatever stands in for the model (the simulator, a
/// test) reads `outputLen`; the scheduler sees the Request.
struct TracedRequest : Request {
  int64_t outputLen = 1;
};

/// The synthetic output tokens of a request: deterministic, distinct from
/// every prompt token of the synthetic workloads and between requests, so a
/// later turn can quote them and hit the cache.
Token outputToken(RequestId request, int64_t position);

/// prompt followed by the request's synthetic output tokens.
std::vector<Token> fullSequence(const TracedRequest &request);

/// The tokens whose keys and values a finished request computed: its
/// prompt and every output token but the last, which was sampled and never
/// fed. Only these may enter the prefix cache.
std::vector<Token> computedSequence(const TracedRequest &request);

} // namespace attnc

#endif // ATTNC_RUNTIME_SCHED_REQUEST_H
