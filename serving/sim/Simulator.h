//===- Simulator.h - trace-driven serving simulation ------------*- C++ -*-===//
//
// Runs a workload through the scheduler, the radix cache (with a host tier,
// optionally) and an accounting-only KV pool on a simple cost model of a
// forward pass, and reports the cache hit rate beside the best any order
// could reach.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SIM_SIMULATOR_H
#define ATTNC_RUNTIME_SIM_SIMULATOR_H

#include "attnc/device/abi.h"
#include "sched/Scheduler.h"
#include "sim/Workloads.h"

#include <string>

namespace attnc {

enum class ArrivalMode {
  /// Every request queued at the start, follow-ups included, as a trace
  /// replay does (a follow-up's prompt quotes an answer not generated yet).
  Offline,
  /// Requests arrive at their own times; a follow-up once what it follows
  /// has finished and its think time has passed.
  Online,
};

const char *toString(ArrivalMode mode);

/// The accounting pool still keeps a few bytes of bookkeeping per page:
/// 2^26 tokens stay under a gigabyte at one token a page.
constexpr int64_t kMaxCacheTokens = int64_t(1) << 26;

/// The cost model of one forward pass, in seconds of model time: a fixed
/// cost, plus each prefill token fed (recomputation included), plus each
/// decoding request. Only relative times matter (arrivals against service).
constexpr double kPassSeconds = 0.004;
constexpr double kPrefillTokenSeconds = 2.5e-5;
constexpr double kDecodeSeconds = 5e-5;

/// Seconds of model time a token's keys and values take to cross between
/// the device and a host tier, either way. A Llama-3-8B-shaped model keeps
/// 32 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 bytes (bf16) = 128 KiB
/// per token; PCIe Gen5 x16 moves about 55 GB/s in practice: 2.4e-6 s, a
/// tenth of the prefill token above. The tier copies on the pool's stream,
/// so each transfer (an offload or a load) is charged to the pass it is
/// reported in, serially with the pass's compute. (A GH200's NVLink-C2C, at
/// about 450 GB/s, would make it a tenth of that again.)
constexpr double kHostTransferTokenSeconds = 2.4e-6;

/// Seconds of model time the pass `step` describes takes, its transfers to
/// and from the host tier of pages of `pageSize` tokens included.
double passSeconds(const StepStats &step, int64_t pageSize);

/// Mean, median and 99th percentile (nearest rank: the ceil(p/100 * n)-th
/// smallest) of a metric over requests; all 0 when no request has one.
struct Distribution {
  double mean = 0, p50 = 0, p99 = 0;
};
Distribution summarize(std::vector<double> values);

struct SimOptions {
  SchedulerConfig scheduler;
  /// In [pageSize, kMaxCacheTokens]; rounded down to whole pages.
  int64_t cacheTokens = 0;
  /// In [1, limits::kMaxPageSize].
  int64_t pageSize = 16;
  ArrivalMode arrival = ArrivalMode::Offline;
  /// A host tier under the cache of this many tokens (whole pages, rounded
  /// down): 0, none, or in [pageSize, kMaxCacheTokens].
  int64_t hostTokens = 0;
};

struct SimResult {
  std::string workload;
  std::string policy;
  std::string arrival;
  int64_t cacheTokens = 0;
  bool cacheHoldsLongest = false;
  int64_t requests = 0;
  int64_t promptTokens = 0;
  double hitRate = 0;
  double optimalHitRate = 0;
  /// Time-weighted mean fraction of the pool's pages in use.
  double poolUtilisation = 0;
  int64_t evictedTokens = 0;
  /// Requests preempted when decode ran out of pages, and the tokens
  /// their recomputation fed again.
  int64_t preemptions = 0;
  int64_t recomputedTokens = 0;
  /// The host tier's size, the prompt tokens loaded back from it (part of
  /// the hit rate) and the tokens eviction moved to it.
  int64_t hostTokens = 0;
  int64_t hostLoadedTokens = 0;
  int64_t offloadedTokens = 0;
  /// Over every step, the KV pages its requests' page tables list (each
  /// layer's attention reads them) and those it reads with cascade levels
  /// (SchedulerConfig::cascade): a shared node's pages once for all the
  /// requests under it. Equal without cascade.
  int64_t pagesListed = 0;
  int64_t pagesRead = 0;
  int64_t steps = 0;
  /// Model time (seconds, from 0) at which the last request finished.
  double seconds = 0;
  /// Model time from the first request's release to the end of the pass
  /// that finished the last request.
  double makespan = 0;
  /// Time to first token: a request's release (its arrival; online, a
  /// follow-up's predecessor's finish plus its think time; offline, 0) to
  /// the end of the pass that samples its first output token. Over every
  /// request.
  Distribution ttft;
  /// Time per output token after the first: (the end of the pass that
  /// samples the request's last token - the end of the pass that sampled
  /// its first) / (output_len - 1). Over requests of two or more output
  /// tokens; preemption stalls count.
  Distribution tpot;
};

/// Checks the options and the workload (finite, non-negative times, ids
/// that name one request each) before simulating: InvalidArgument if not.
StatusOr<SimResult> simulate(const Workload &workload,
                             const SimOptions &options);

/// The hit-rate bound over every order of serving the requests, with a cache
/// that never evicts: 1 - (fewest prompt tokens any order must compute) /
/// prompt tokens, where a request reads the leading whole pages of its
/// prompt (all but its last token) that any request computed before it,
/// generated tokens included. Exact: the order by ascending prompt length
/// in whole matchable pages reaches it (Simulator.cpp says why).
double optimalHitRate(const Workload &workload, int64_t pageSize);

/// Tokens of the longest request (prompt and max_tokens).
int64_t longestRequest(const Workload &workload);

/// One JSON object on one line.
std::string toJson(const SimResult &result);

} // namespace attnc

#endif // ATTNC_RUNTIME_SIM_SIMULATOR_H
