//===- Scheduler.h - cache-aware batch scheduling ---------------*- C++ -*-===//
//
// Forms the batch of each forward pass the way a cache-aware serving engine
// does (DESIGN.md, runtime/sched):
//
//   1. match every waiting request against the radix cache;
//   2. order them by the policy (FCFS, longest prefix match, DFS weight);
//   3. available = evictable + free; admit requests in order while what
//      each needs (its uncached prompt plus its output, in whole pages)
//      fits, locking each matched prefix (which moves it out of evictable);
//      prefixes other waiting requests match are not counted as available
//      while anything runs;
//   4. allocate the admitted requests' pages, evicting least-recently-used
//      leaves when the pool runs out;
//   5. run: prefill the admitted prompts (chunked to a token budget) and
//      decode one token for every running request;
//   6. insert each prefilled prompt into the cache; for each finished
//      request insert its tokens and unlock its prefix.
//
// A waiting request whose uncached prompt starts with KV that a running
// request is computing (its prompt, or the output it is generating) waits,
// so that it reads that prefix from the cache instead of computing it
// again.
//
// The queue is matched incrementally: each waiting request knows how many
// pages of its prompt are cached, indexed by the prefix hash of the next
// page it lacks and of the deepest page it has, and only the requests whose
// pages entered or left the cache (the radix cache's change journal) are
// looked at again. LPM and FCFS keep their order as the matches change, so
// an admission pass reads the queue only as far as it admits, beside one
// walk per distinct cached prefix that waiting requests read (to touch and
// protect it); DFS-weight walks the tree from every waiting request's match
// at each pass. The scheduler is its cache's only reader of changes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SCHED_SCHEDULER_H
#define ATTNC_RUNTIME_SCHED_SCHEDULER_H

#include "kv/PagedKVPool.h"
#include "radix/RadixCache.h"
#include "sched/Request.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace attnc {

enum class Policy { FCFS, LongestPrefixMatch, DFSWeight };

const char *toString(Policy policy);
StatusOr<Policy> parsePolicy(const std::string &name);

struct SchedulerConfig {
  Policy policy = Policy::LongestPrefixMatch;
  /// Prompt tokens prefilled per forward pass; longer prompts are chunked.
  int64_t prefillBudget = 8192;
  int64_t maxRunning = 128;
  /// Shared uncached prompt tokens that make a waiting request wait for
  /// the request in flight that computes them.
  int64_t inFlightShareThreshold = 32;
  /// Admission leaves alone the cached prefixes that waiting requests match
  /// (while anything runs), rather than evicting them for another request.
  bool protectWaitingPrefixes = true;
  /// A request that has waited this many steps goes before every other,
  /// whatever its priority and the policy's order, oldest first, so that
  /// no request starves (LPM alone serves cache-cold requests last). 0:
  /// never.
  int64_t agingSteps = 0;
};

/// One scheduled request as the attention kernels see it.
struct RunningRequest {
  Request request;
  /// Every page of the request's sequence, root first: the cached prefix's
  /// pages, then pages the request owns from `ownedFrom` on.
  std::vector<PageId> pages;
  size_t ownedFrom = 0;
  /// The radix node locked for this request.
  RadixCache::Node *locked = nullptr;
  int64_t cachedTokens = 0;
  int64_t prefilled = 0;
  int64_t generated = 0;
  bool prefillDone() const {
    return prefilled == static_cast<int64_t>(request.prompt.size());
  }
};

/// The attention inputs of one forward pass, as PagedAttention.plan
/// (Python) and Kernel::plan (C++) take them, over the pool's caches.
/// Requests come in batch order, decodes first, then prefill chunks; each
/// feeds the tokens [qoIndptr[i], qoIndptr[i+1]) of `tokens`, whose keys
/// and values the model writes at `slotMapping` (PagedKVPool::appendSlots)
/// before attention reads them through the page table. Pages a step
/// releases (a finished request's, or copies of what the cache already
/// held) return to the pool when the step is formed; the runner must run
/// the step's attention before the next step's appends, as one stream
/// does.
struct EngineBatch {
  std::vector<RequestId> requests;
  int64_t numDecodes = 0;
  std::vector<int32_t> qoIndptr;
  /// Each new token's id, its position in its request's sequence, and its
  /// slot: page * page_size + position in the page.
  std::vector<Token> tokens;
  std::vector<int32_t> positions;
  std::vector<int64_t> slotMapping;
  /// The pages of each request's keys, this step's tokens included.
  PageTable pageTable;
};

struct StepStats {
  int64_t prefillTokens = 0;
  int64_t decodeTokens = 0;
  std::vector<RequestId> admitted;
  std::vector<RequestId> finished;
  EngineBatch batch;
};

struct SchedulerTotals {
  int64_t promptTokens = 0;
  int64_t cachedTokens = 0;
  int64_t computedPrefillTokens = 0;
  int64_t evictedTokens = 0;
  int64_t finished = 0;
};

class Scheduler {
public:
  Scheduler(const SchedulerConfig &config, PagedKVPool &pool,
            RadixCache &cache);
  ~Scheduler();

  /// Queues a request. Fails when it could never fit in the pool, or when
  /// a request of its id is queued or running.
  Status add(const Request &request);

  /// Forms and runs one forward pass.
  StatusOr<StepStats> step();

  /// Drops a request wherever it is: from the queue, or from the running
  /// batch mid-prefill or mid-decode (its prefix unlocked, the pages it owns
  /// released, the KV it was computing no longer waited for). What it
  /// computed is not cached. NotFound when no such request is queued or
  /// running (never added, finished, or aborted already).
  Status abort(RequestId id);

  bool idle() const { return waiting_.empty() && running_.empty(); }
  size_t numWaiting() const { return waiting_.size(); }
  const std::vector<RunningRequest> &running() const { return running_; }
  const SchedulerTotals &totals() const { return totals_; }

  /// The order the policy gives the waiting requests now, as positions in
  /// arrival order. Exposed for tests.
  std::vector<size_t> order();

private:
  /// A queued request and how much of its prompt the cache holds.
  struct Waiter {
    Request request;
    /// Page-prefix hashes of the prompt, computed once.
    std::vector<uint64_t> hashes;
    /// Pages a match may cover: at least one prompt token is always
    /// computed, for the logits.
    int64_t matchable = 0;
    /// Leading pages of the prompt in the cache now.
    int64_t cached = 0;
    /// The step it arrived before.
    int64_t arrivalStep = 0;
  };
  using Arrival = uint64_t;
  /// Tokens [begin, begin + count) of running_[index] fed this step.
  struct Fed {
    size_t index;
    int64_t begin, count;
  };

  /// Files a waiter under its next and deepest page, and in LPM order.
  void index(Arrival arrival, const Waiter &waiter);
  void unindex(Arrival arrival, const Waiter &waiter);
  /// Re-reads the cached pages of the waiters whose pages entered or left
  /// the cache since the last call.
  void followCache();
  void touchWaitingPrefixes();
  /// Brings the waiters' matches up to date with the cache and touches
  /// what they read; DFS-weight's order (the others keep theirs).
  std::vector<Arrival> prepareOrder();
  /// Visits the waiting requests in the policy's order until `visit`
  /// returns false.
  void visitInOrder(const std::vector<Arrival> &dfsOrder,
                    const std::function<bool(Arrival)> &visit);
  std::vector<Arrival> dfsWeightOrder();
  bool waitsForInFlight(const Waiter &waiter) const;
  /// Admits waiting requests in order; returns whether admission stopped
  /// for a reason that can pass by the next step (token budget, running
  /// cap).
  StatusOr<bool> admit(StepStats &stats, int64_t &budget,
                       std::vector<Fed> &fed);
  Status allocateFor(RunningRequest &running, int64_t pages);
  EngineBatch batchOf(const std::vector<Fed> &fed) const;
  Status finishPrefill(RunningRequest &running);
  Status finish(RunningRequest &running);
  /// No request waits any more for the KV `running` was computing.
  void withdrawInFlight(const RunningRequest &running);

  SchedulerConfig config_;
  PagedKVPool &pool_;
  RadixCache &cache_;
  std::map<Arrival, Waiter> waiting_;
  Arrival arrivals_ = 0;
  std::unordered_map<RequestId, Arrival> arrivalOf_;
  /// The orders within priorities (highest first): arrival (FCFS), and
  /// most cached pages, then arrival (LPM).
  std::set<std::pair<int64_t, Arrival>> byPriority_;
  std::set<std::tuple<int64_t, int64_t, Arrival>> byCachedPages_;
  /// Steps formed so far: the clock of aging.
  int64_t steps_ = 0;
  /// Whether `waiter` has waited long enough to go first.
  bool aged(const Waiter &waiter) const {
    return config_.agingSteps > 0 &&
           steps_ - waiter.arrivalStep >= config_.agingSteps;
  }
  /// Waiters by the prefix hash of the first prompt page the cache lacks
  /// (while it can still match more), and of the last page it holds.
  std::unordered_map<uint64_t, std::set<Arrival>> byNextPage_, byLastPage_;
  std::vector<RunningRequest> running_;
  /// Page-prefix hashes of each running request's whole sequence (prompt
  /// and output): the KV it is computing, in the cache once it finishes.
  std::unordered_map<RequestId, std::vector<uint64_t>> inFlightOf_;
  /// The union of `inFlightOf_`, counted.
  std::unordered_multiset<uint64_t> inFlight_;
  SchedulerTotals totals_;
  /// Whether anything happened since the last admission attempt that could
  /// change its outcome (an arrival, a finish, a prompt entering the cache).
  bool admissionMayChange_ = true;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_SCHED_SCHEDULER_H
