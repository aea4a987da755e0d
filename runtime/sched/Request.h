//===- Request.h - a generation request -------------------------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_SCHED_REQUEST_H
#define ATTNC_RUNTIME_SCHED_REQUEST_H

#include "radix/RadixCache.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace attnc {

using RequestId = int64_t;

struct Request {
  RequestId id = 0;
  /// Seconds from the start of the run.
  double arrival = 0;
  std::vector<Token> prompt;
  int64_t outputLen = 1;
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
};

/// The synthetic output tokens of a request: deterministic, distinct from
/// every prompt token of the synthetic workloads and between requests, so a
/// later turn can quote them and hit the cache.
Token outputToken(RequestId request, int64_t position);

/// prompt followed by the request's synthetic output tokens.
std::vector<Token> fullSequence(const Request &request);

/// The tokens whose keys and values a finished request computed: its
/// prompt and every output token but the last, which was sampled and never
/// fed. Only these may enter the prefix cache.
std::vector<Token> computedSequence(const Request &request);

/// The token at `position` of fullSequence(request).
Token tokenAt(const Request &request, int64_t position);

} // namespace attnc

#endif // ATTNC_RUNTIME_SCHED_REQUEST_H
