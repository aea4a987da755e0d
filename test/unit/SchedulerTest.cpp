//===- SchedulerTest.cpp - cache-aware batch scheduling -------------------===//

#include "sched/Scheduler.h"
#include "TestPools.h"
#include "sim/SyntheticModel.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>

using namespace attnc;

namespace {

struct Fixture {
  Fixture(Policy policy, int64_t pages, int64_t pageSize = 4,
          int64_t budget = 8192)
      : pool(makeAccountingPool(pages, pageSize)),
        cache(std::make_unique<RadixCache>(*pool)) {
    SchedulerConfig sched;
    sched.policy = policy;
    sched.tokenBudget = budget;
    scheduler = std::make_unique<Scheduler>(sched, *pool, *cache);
  }
  /// Queues `request` and lets the model answer it.
  Status add(const TracedRequest &request) {
    model.add(request);
    return scheduler->add(request);
  }
  StatusOr<SimulatedStep> step() { return model.step(*scheduler); }
  void runToCompletion() {
    for (int i = 0; i < 10000 && !scheduler->idle(); ++i)
      ASSERT_TRUE(step().ok());
    ASSERT_TRUE(scheduler->idle());
  }
  /// Serves one request to completion, leaving its tokens in the cache.
  void serve(const TracedRequest &request) {
    ASSERT_TRUE(add(request).ok());
    runToCompletion();
  }
  std::unique_ptr<PagedKVPool> pool;
  std::unique_ptr<RadixCache> cache;
  std::unique_ptr<Scheduler> scheduler;
  SyntheticModel model;
};

/// A request whose answer is `outputLen` tokens, within max_tokens of the
/// same length unless given.
TracedRequest makeRequest(RequestId id, std::vector<Token> prompt,
                          int64_t outputLen = 2, int64_t maxTokens = 0) {
  TracedRequest request;
  request.id = id;
  request.prompt = std::move(prompt);
  request.outputLen = outputLen;
  request.maxTokens = maxTokens ? maxTokens : outputLen;
  return request;
}

using Model = SyntheticModel;

std::vector<Token> range(Token from, int count) {
  std::vector<Token> tokens;
  for (int i = 0; i < count; ++i)
    tokens.push_back(from + i);
  return tokens;
}

std::vector<Token> concat(std::vector<Token> a, const std::vector<Token> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

} // namespace

TEST(Scheduler, ParsesPolicies) {
  EXPECT_EQ(*parsePolicy("lpm"), Policy::LongestPrefixMatch);
  EXPECT_EQ(*parsePolicy("dfs-weight"), Policy::DFSWeight);
  EXPECT_EQ(parsePolicy("random").status().message(),
            "unknown policy 'random': expected fcfs, lpm or dfs-weight");
}

TEST(Scheduler, RejectsRequestsThatCanNeverFit) {
  Fixture f(Policy::FCFS, /*pages=*/4);
  Status status = f.add(makeRequest(0, range(1, 15), 2));
  EXPECT_EQ(status.code(), ErrorCode::OutOfMemory);
  EXPECT_TRUE(f.scheduler->idle());
  EXPECT_EQ(f.add(makeRequest(1, {}, 2)).code(), ErrorCode::InvalidArgument);
}

// Parallel samples are bounded, and the pool must hold the prompt and
// every branch's max_tokens.
TEST(Scheduler, ChecksParallelSamples) {
  Fixture f(Policy::FCFS, /*pages=*/8);
  TracedRequest wide = makeRequest(3, range(1, 5), 2);
  wide.n = 129;
  EXPECT_EQ(f.add(wide).message(),
            "request 3 asks for 129 parallel samples, the scheduler runs at "
            "most 128 sequences");
  TracedRequest none = makeRequest(0, range(1, 5), 2);
  none.n = 0;
  EXPECT_EQ(f.add(none).message(),
            "request 0 asks for 0 parallel samples: n must be in [1, 256]");
  TracedRequest huge = makeRequest(2, range(1, 5), 2, INT64_MAX);
  EXPECT_EQ(f.add(huge).message(),
            "request 2: prompt (5 tokens) and max_tokens "
            "(9223372036854775807) exceed 2147483647 positions");
  TracedRequest many = makeRequest(1, range(1, 5), /*outputLen=*/8);
  many.n = 3;
  // 5 prompt + 8 tokens: 4 pages; 2 more branches: 2 pages of 8 tokens
  // and a copy of the partial prompt page each.
  Status status = f.add(many);
  EXPECT_EQ(status.code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(status.message(),
            "request 1 needs 10 pages of KV cache (prompt, and max_tokens "
            "for each of its 3 samples), the pool holds 8");
  EXPECT_TRUE(f.scheduler->idle());
}

TEST(Scheduler, LongestPrefixMatchComesFirst) {
  Fixture f(Policy::LongestPrefixMatch, 64);
  std::vector<Token> shared = range(100, 16);
  f.serve(makeRequest(0, concat(shared, range(1, 4))));
  ASSERT_TRUE(f.add(makeRequest(1, range(500, 20))).ok());
  ASSERT_TRUE(f.add(makeRequest(2, concat(range(100, 8), range(7, 12)))).ok());
  ASSERT_TRUE(f.add(makeRequest(3, concat(shared, range(9, 4)))).ok());
  // Matches: request 1 nothing, 2 eight tokens, 3 sixteen.
  EXPECT_EQ(f.scheduler->order(), (std::vector<size_t>{2, 1, 0}));
}

TEST(Scheduler, FCFSKeepsArrivalOrder) {
  Fixture f(Policy::FCFS, 64);
  std::vector<Token> shared = range(100, 16);
  f.serve(makeRequest(0, concat(shared, range(1, 4))));
  ASSERT_TRUE(f.add(makeRequest(1, range(500, 20))).ok());
  ASSERT_TRUE(f.add(makeRequest(2, concat(shared, range(9, 4)))).ok());
  EXPECT_EQ(f.scheduler->order(), (std::vector<size_t>{0, 1}));
}

TEST(Scheduler, DFSWeightVisitsHeavierSubtreesFirst) {
  Fixture f(Policy::DFSWeight, 128);
  std::vector<Token> a = range(100, 8), b = range(200, 8);
  f.serve(makeRequest(0, concat(a, range(1, 4))));
  f.serve(makeRequest(1, concat(b, range(1, 4))));
  // One request under a, two under b, one matching nothing.
  ASSERT_TRUE(f.add(makeRequest(2, concat(a, range(50, 5)))).ok());
  ASSERT_TRUE(f.add(makeRequest(3, range(900, 9))).ok());
  ASSERT_TRUE(f.add(makeRequest(4, concat(b, range(60, 5)))).ok());
  ASSERT_TRUE(f.add(makeRequest(5, concat(b, range(70, 5)))).ok());
  EXPECT_EQ(f.scheduler->order(), (std::vector<size_t>{2, 3, 0, 1}));
}

TEST(Scheduler, AdmitsOnlyWhatFitsAndFinishesEverything) {
  // 8 pages of 4 tokens: each request needs 3 pages, so two run at once.
  Fixture f(Policy::FCFS, 8);
  for (RequestId id = 0; id < 4; ++id)
    ASSERT_TRUE(f.add(makeRequest(id, range(1000 * (id + 1), 9), 3)).ok());
  StatusOr<SimulatedStep> first = f.step();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stats.admitted, (std::vector<RequestId>{0, 1}));
  EXPECT_EQ(first->stats.prefillTokens, 18);
  f.runToCompletion();
  EXPECT_EQ(f.scheduler->totals().finished, 4);
  // Only the radix tree holds pages now: nothing leaked.
  EXPECT_EQ(f.pool->numUsedPages() * f.pool->pageSize(), f.cache->totalSize());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
  EXPECT_TRUE(f.pool->checkInvariants().ok());
}

TEST(Scheduler, ChunksLongPromptsToTheBudget) {
  Fixture f(Policy::FCFS, 64, 4, /*budget=*/8);
  ASSERT_TRUE(f.add(makeRequest(0, range(1, 20), 2)).ok());
  std::vector<int64_t> prefill;
  for (int i = 0; i < 3; ++i)
    prefill.push_back(f.step()->stats.prefillTokens);
  EXPECT_EQ(prefill, (std::vector<int64_t>{8, 8, 4}));
  f.runToCompletion();
}

TEST(Scheduler, RequestSharingAnInFlightPrefixWaitsForIt) {
  Fixture f(Policy::LongestPrefixMatch, 128);
  std::vector<Token> shared = range(100, 64);
  ASSERT_TRUE(f.add(makeRequest(0, concat(shared, range(1, 4)))).ok());
  ASSERT_TRUE(f.add(makeRequest(1, concat(shared, range(5, 4)))).ok());
  StatusOr<SimulatedStep> first = f.step();
  EXPECT_EQ(first->stats.admitted, (std::vector<RequestId>{0}));
  StatusOr<SimulatedStep> second = f.step();
  EXPECT_EQ(second->stats.admitted, (std::vector<RequestId>{1}));
  f.runToCompletion();
  // Request 1 read the shared 64 tokens from the cache.
  EXPECT_EQ(f.scheduler->totals().cachedTokens, 64);
}

// A follow-up that quotes a running request's output waits until that output
// is in the cache, and the memory it needs is not given to a later request.
TEST(Scheduler, RequestQuotingARunningOutputWaitsAndKeepsItsPlace) {
  Fixture f(Policy::LongestPrefixMatch, 12);
  TracedRequest first = makeRequest(0, range(100, 16), 16);
  TracedRequest followUp =
      makeRequest(1, concat(fullSequence(first), range(1, 4)), 4);
  TracedRequest unrelated = makeRequest(2, range(500, 8), 4);
  for (const TracedRequest &request : {first, followUp, unrelated})
    ASSERT_TRUE(f.add(request).ok());
  StatusOr<SimulatedStep> step = f.step();
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->stats.admitted, (std::vector<RequestId>{0}));
  std::vector<RequestId> order;
  for (int i = 0; i < 100 && !f.scheduler->idle(); ++i) {
    step = f.step();
    ASSERT_TRUE(step.ok());
    order.insert(order.end(), step->stats.admitted.begin(),
                 step->stats.admitted.end());
  }
  EXPECT_EQ(order, (std::vector<RequestId>{1, 2}));
  // The follow-up read the first sequence's computed KV from the cache: 31
  // tokens (its last output token was never fed), 7 whole pages.
  EXPECT_EQ(f.scheduler->totals().cachedTokens, 28);
}

// Without knowing the answer, the scheduler sees a queued prompt that
// continues a running request's sequence exactly as far as it has been
// generated: the follow-up waits while the answer grows and matches, then
// reads all of it from the cache.
TEST(Scheduler, AFollowUpWaitsWhileTheAnswerItQuotesIsGenerated) {
  Fixture f(Policy::LongestPrefixMatch, 64);
  TracedRequest first = makeRequest(0, range(100, 16), /*outputLen=*/40);
  TracedRequest followUp =
      makeRequest(1, concat(fullSequence(first), range(1, 4)), 2);
  ASSERT_TRUE(f.add(first).ok());
  ASSERT_TRUE(f.add(followUp).ok());
  f.runToCompletion();
  // 16 + 39 computed tokens: 13 whole pages of 4.
  EXPECT_EQ(f.scheduler->totals().cachedTokens, 52);
  // An answer that stops matching releases the wait.
  TracedRequest other = makeRequest(2, range(500, 16), /*outputLen=*/20);
  std::vector<Token> diverging = other.prompt;
  for (int64_t i = 0; i < 8; ++i)
    diverging.push_back(outputToken(2, i));
  diverging.push_back(7); // not the answer's next token
  for (int64_t i = 9; i < 20; ++i)
    diverging.push_back(outputToken(2, i));
  TracedRequest elsewhere = makeRequest(3, diverging, 2);
  ASSERT_TRUE(f.add(other).ok());
  ASSERT_TRUE(f.add(elsewhere).ok());
  std::vector<RequestId> finishedOrder;
  for (int i = 0; i < 200 && !f.scheduler->idle(); ++i) {
    StatusOr<SimulatedStep> step = f.step();
    ASSERT_TRUE(step.ok());
    finishedOrder.insert(finishedOrder.end(), step->finished.begin(),
                         step->finished.end());
  }
  EXPECT_EQ(finishedOrder, (std::vector<RequestId>{3, 2}))
      << "the diverging request waited for the whole answer";
}

TEST(Scheduler, EvictsToAdmitWhenThePoolIsFull) {
  Fixture f(Policy::LongestPrefixMatch, 8);
  for (RequestId id = 0; id < 6; ++id) {
    ASSERT_TRUE(f.add(makeRequest(id, range(100 * (id + 1), 12), 4)).ok());
    f.runToCompletion();
  }
  EXPECT_GT(f.scheduler->totals().evictedTokens, 0);
  EXPECT_EQ(f.scheduler->totals().finished, 6);
  EXPECT_TRUE(f.pool->checkInvariants().ok());
}

namespace {

/// The stand-in for a model's key of the token at `position`: it depends
/// on the whole prefix, as real keys do, so a page read in the wrong
/// place, or one whose KV was never computed, shows.
std::array<uint16_t, 8> keyOf(const TracedRequest &request, int64_t position,
                              int32_t branch = 0) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (int64_t i = 0; i <= position; ++i)
    hash = (hash ^ uint32_t(Model::tokenAt(request, i, branch))) *
           0x100000001b3ull;
  std::array<uint16_t, 8> key{};
  for (int i = 0; i < 4; ++i)
    key[size_t(i)] = uint16_t(hash >> (16 * i));
  key[4] = uint16_t(position);
  key[5] = uint16_t(position >> 16);
  key[6] = 0x5eed;
  key[7] = 0xbeef;
  return key;
}

} // namespace

namespace {

/// Replays requests that share prefixes, quote earlier conversations and
/// outgrow the pool through the scheduler over a host pool of `pages`,
/// writing each step's new keys at its slot mapping as a model runner
/// would; every request of every step must then read, through its page
/// table, the keys of exactly its own sequence. Answers are up to
/// `longestAnswer` tokens long, within max_tokens of 2 x that, and
/// admission expects `newTokenRatio` of it. The first `queuedAtStart`
/// requests are queued at once, the others one every third step; a step
/// feeds `tokenBudget` tokens at most. Requests take 1 to `maxSamples`
/// parallel samples.
void replayThroughAHostPool(int64_t pages, int64_t longestAnswer,
                            double newTokenRatio, size_t queuedAtStart,
                            int64_t tokenBudget, bool expectPreemptions,
                            int32_t maxSamples = 1) {
  SCOPED_TRACE("pool of " + std::to_string(pages) + " pages");
  PoolConfig config;
  config.numPages = pages;
  config.pageSize = 4;
  config.numKVHeads = 1;
  config.headDim = 8;
  config.elementBytes = 2;
  std::unique_ptr<PagedKVPool> pool = *PagedKVPool::create(config);
  RadixCache cache(*pool);
  SchedulerConfig sched;
  sched.tokenBudget = tokenBudget;
  sched.maxRunning = 6;
  sched.initialNewTokenRatio = sched.minNewTokenRatio = newTokenRatio;
  Scheduler scheduler(sched, *pool, cache);
  SyntheticModel model;

  std::mt19937 rng(17);
  std::vector<TracedRequest> requests;
  std::vector<Token> system = range(1, 10);
  for (RequestId id = 0; id < 14; ++id) {
    std::vector<Token> prompt =
        id % 3 == 0 ? std::vector<Token>() : system; // a shared prefix
    std::vector<Token> own = range(Token(100 * (id + 1)), 1 + int(rng() % 9));
    requests.push_back(makeRequest(
        id, concat(prompt, own), 1 + rng() % longestAnswer, 2 * longestAnswer));
    if (maxSamples > 1)
      requests.back().n = int32_t(1 + rng() % maxSamples);
  }
  std::map<RequestId, TracedRequest> byId;
  for (size_t i = 0; i < queuedAtStart; ++i) {
    ASSERT_TRUE(scheduler.add(requests[i]).ok());
    model.add(requests[i]);
    byId[requests[i].id] = requests[i];
  }

  int64_t steps = 0, checkedKeys = 0;
  size_t next = queuedAtStart;
  std::vector<RequestId> finished;
  while (!scheduler.idle() || next < requests.size()) {
    ASSERT_LT(++steps, 1000) << "the scheduler stalled";
    if (steps % 3 == 0 && next < requests.size()) {
      TracedRequest request = requests[next++];
      // Some later requests continue a finished conversation: its prompt
      // and every output token.
      if (!finished.empty() && rng() % 2) {
        TracedRequest earlier = byId.at(finished[rng() % finished.size()]);
        request.prompt = concat(fullSequence(earlier), request.prompt);
      }
      ASSERT_TRUE(scheduler.add(request).ok());
      model.add(request);
      byId[request.id] = request;
    }
    StatusOr<StepStats> step = scheduler.step();
    ASSERT_TRUE(step.ok()) << step.status().toString();
    const EngineBatch &batch = step->batch;
    size_t count = batch.requests.size();
    ASSERT_EQ(batch.qoIndptr.size(), count + 1);
    ASSERT_EQ(batch.pageTable.indptr.size(), count + 1);
    ASSERT_EQ(batch.pageTable.lastPageLen.size(), count);
    ASSERT_EQ(batch.tokens.size(), size_t(batch.qoIndptr.back()));
    ASSERT_EQ(batch.slotMapping.size(), batch.tokens.size());
    ASSERT_EQ(
        std::set<int64_t>(batch.slotMapping.begin(), batch.slotMapping.end())
            .size(),
        batch.slotMapping.size())
        << "two tokens of a step share a slot";

    // The runner's append: each new token's key, at its slot.
    std::vector<std::array<uint16_t, 8>> keys;
    for (size_t r = 0; r < count; ++r) {
      const TracedRequest &request = byId.at(batch.requests[r]);
      if (int64_t(r) < batch.numDecodes)
        ASSERT_EQ(batch.qoIndptr[r + 1] - batch.qoIndptr[r], 1);
      for (int32_t t = batch.qoIndptr[r]; t < batch.qoIndptr[r + 1]; ++t) {
        ASSERT_EQ(batch.tokens[size_t(t)],
                  Model::tokenAt(request, batch.positions[size_t(t)],
                                 batch.branches[r]));
        keys.push_back(
            keyOf(request, batch.positions[size_t(t)], batch.branches[r]));
      }
    }
    auto address = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
    if (!keys.empty())
      ASSERT_TRUE(pool->appendSlots(address(keys.data()), address(keys.data()),
                                    8, 8, address(batch.slotMapping.data()),
                                    int64_t(keys.size()))
                      .ok());

    // Attention's read: every key of every request, through its pages.
    for (size_t r = 0; r < count; ++r) {
      const TracedRequest &request = byId.at(batch.requests[r]);
      int32_t first = batch.pageTable.indptr[r];
      int32_t pages = batch.pageTable.indptr[r + 1] - first;
      int64_t length =
          int64_t(pages - 1) * config.pageSize + batch.pageTable.lastPageLen[r];
      ASSERT_EQ(length, batch.positions[size_t(batch.qoIndptr[r + 1] - 1)] + 1);
      for (int64_t j = 0; j < length; ++j) {
        PageId page = batch.pageTable.indices[size_t(first + j / 4)];
        const auto *stored =
            reinterpret_cast<const uint16_t *>(pool->keyAt(page, j % 4, 0));
        std::array<uint16_t, 8> want = keyOf(request, j, batch.branches[r]);
        ASSERT_TRUE(std::equal(want.begin(), want.end(), stored))
            << "request " << request.id << " key " << j << " (page " << page
            << ") branch " << batch.branches[r] << " in step " << steps;
        ++checkedKeys;
      }
    }
    // The model samples once the step has run.
    StatusOr<std::vector<RequestId>> done =
        scheduler.commit(model.sample(batch));
    ASSERT_TRUE(done.ok()) << done.status().toString();
    finished.insert(finished.end(), done->begin(), done->end());
  }
  EXPECT_EQ(finished.size(), requests.size());
  for (const TracedRequest &request : requests)
    for (int32_t branch = 0; branch < request.n; ++branch)
      EXPECT_EQ(model.sampled(request.id, branch), request.outputLen)
          << "request " << request.id << " branch " << branch
          << " lost or repeated tokens";
  EXPECT_GT(scheduler.totals().cachedTokens, 0) << "no prefix was reused";
  EXPECT_GT(checkedKeys, 0);
  if (expectPreemptions)
    EXPECT_GT(scheduler.totals().preemptions, 0) << "nothing was preempted";
  EXPECT_TRUE(cache.checkInvariants().ok());
}

} // namespace

TEST(Scheduler, EngineBatchesReadBackEveryRequestsSequence) {
  replayThroughAHostPool(/*pages=*/40, /*longestAnswer=*/6,
                         /*newTokenRatio=*/1.0, /*queuedAtStart=*/8,
                         /*tokenBudget=*/12, false); // prompts in chunks
}

// Answers longer than the new-token ratio expects run the pool out of pages
// in decode: preempted requests are computed again, keys and all, and each
// still gets every one of its tokens exactly once.
TEST(Scheduler, PreemptedRequestsAreRecomputedWithoutLosingTokens) {
  replayThroughAHostPool(/*pages=*/24, /*longestAnswer=*/16,
                         /*newTokenRatio=*/0.1, /*queuedAtStart=*/12,
                         /*tokenBudget=*/64, true);
}

// Requests of n parallel samples compute their prompt once and fork: each
// branch reads the shared prompt pages and its own answer, through
// copy-on-write of the prompt's partial page, chunked prefill, prefix
// reuse.
TEST(Scheduler, ParallelSamplesForkAndReadTheirOwnBranches) {
  replayThroughAHostPool(/*pages=*/64, /*longestAnswer=*/6,
                         /*newTokenRatio=*/1.0, /*queuedAtStart=*/8,
                         /*tokenBudget=*/12, false, /*maxSamples=*/3);
}

namespace {

/// Whole pages of `tokens` (at most `limit`) the tree holds, walked
/// without touching it.
int64_t cachedPagesByWalking(const RadixCache &cache,
                             const std::vector<Token> &tokens, int64_t limit) {
  int64_t pageSize = cache.pageSize(), pages = 0;
  const RadixCache::Node *node = cache.root();
  while (pages < limit) {
    auto begin = tokens.begin() + pages * pageSize;
    auto it = node->children.find(std::vector<Token>(begin, begin + pageSize));
    if (it == node->children.end())
      break;
    const RadixCache::Node *child = it->second.get();
    int64_t within = 0;
    while (within < int64_t(child->pages.size()) && pages < limit &&
           std::equal(child->key.begin() + within * pageSize,
                      child->key.begin() + (within + 1) * pageSize,
                      tokens.begin() + pages * pageSize)) {
      ++within;
      ++pages;
    }
    if (within < int64_t(child->pages.size()))
      break;
    node = child;
  }
  return pages;
}

/// Replays bursts of requests sharing parts of three prefixes through LPM
/// and checks its order against the tree before every step.
void checkIncrementalMatches(int64_t poolPages, unsigned seed) {
  SCOPED_TRACE("pool of " + std::to_string(poolPages) + " pages, seed " +
               std::to_string(seed));
  Fixture f(Policy::LongestPrefixMatch, poolPages, /*pageSize=*/4,
            /*budget=*/16);
  std::mt19937 rng(seed);
  std::vector<std::vector<Token>> prefixes = {range(1, 12), range(50, 20),
                                              range(90, 7)};
  std::vector<TracedRequest>
      waiting; // in arrival order, as the scheduler has them
  RequestId next = 0;
  int64_t checks = 0;
  for (int step = 0; step < 1000 && (next < 60 || !f.scheduler->idle());
       ++step) {
    for (int i = step % 4 == 0 ? 10 : 0; i > 0 && next < 60; --i) {
      std::vector<Token> prompt = prefixes[rng() % prefixes.size()];
      prompt.resize(prompt.size() - rng() % 5); // share part of it
      TracedRequest request = makeRequest(
          next, concat(prompt, range(Token(1000 + 10 * next), 1 + rng() % 9)),
          1 + rng() % 4);
      ++next;
      ASSERT_TRUE(f.add(request).ok());
      waiting.push_back(request);
    }
    std::vector<int64_t> cached;
    for (const TracedRequest &request : waiting)
      cached.push_back(cachedPagesByWalking(
          *f.cache, request.prompt,
          (int64_t(request.prompt.size()) - 1) / f.pool->pageSize()));
    std::vector<size_t> want(waiting.size());
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = i;
    std::stable_sort(want.begin(), want.end(),
                     [&](size_t a, size_t b) { return cached[a] > cached[b]; });
    ASSERT_EQ(f.scheduler->order(), want) << "step " << step;
    checks += int64_t(want.size());

    StatusOr<SimulatedStep> stats = f.step();
    ASSERT_TRUE(stats.ok()) << stats.status().toString();
    for (RequestId id : stats->stats.admitted)
      waiting.erase(std::find_if(
          waiting.begin(), waiting.end(),
          [id](const TracedRequest &request) { return request.id == id; }));
  }
  EXPECT_TRUE(f.scheduler->idle());
  EXPECT_GT(f.scheduler->totals().cachedTokens, 0);
  EXPECT_GT(checks, 100);
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

} // namespace

// The queue's matches follow the cache incrementally (pages entering and
// leaving it); at every step LPM's order must be the one matching every
// waiting prompt against the tree from scratch gives, with pools small
// enough that waited prefixes are evicted.
TEST(Scheduler, IncrementalMatchesAgreeWithTheTree) {
  for (int64_t poolPages : {10, 14, 30})
    for (unsigned seed : {41u, 42u, 43u})
      checkIncrementalMatches(poolPages, seed);
}

namespace {

/// With nothing queued or running, every page in use is the cache's.
void expectNoLeaks(const Fixture &f) {
  EXPECT_TRUE(f.pool->checkInvariants().ok());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
  EXPECT_EQ(f.pool->numUsedPages() * f.pool->pageSize(), f.cache->totalSize())
      << "pages leaked";
}

} // namespace

// A request aborted while queued, while its prompt is being prefilled in
// chunks, or while it decodes leaves nothing behind: its pages return, its
// prefix is unlocked, the others finish, and a second abort says why not.
TEST(Scheduler, AbortAtEveryStageReleasesEverything) {
  enum Stage { Queued, Prefilling, Decoding };
  for (Stage stage : {Queued, Prefilling, Decoding}) {
    SCOPED_TRACE("stage " + std::to_string(int(stage)));
    Fixture f(Policy::LongestPrefixMatch, 64, /*pageSize=*/4, /*budget=*/8);
    std::vector<Token> shared = range(100, 16);
    f.serve(makeRequest(0, concat(shared, range(1, 4))));
    TracedRequest victim = makeRequest(1, concat(shared, range(500, 30)), 6);
    TracedRequest other = makeRequest(2, concat(shared, range(700, 5)), 3);
    ASSERT_TRUE(f.add(victim).ok());
    if (stage != Queued) {
      for (int i = 0; i < 20; ++i) {
        ASSERT_TRUE(f.step().ok());
        const auto &running = f.scheduler->running();
        bool there = !running.empty() && running[0].request.id == 1;
        ASSERT_TRUE(there);
        bool decoding = running[0].prefillDone() && !running[0].output.empty();
        if ((stage == Prefilling && running[0].fed > 16 &&
             !running[0].prefillDone()) ||
            (stage == Decoding && decoding && running[0].output.size() > 1))
          break;
      }
    }
    ASSERT_TRUE(f.add(other).ok());
    ASSERT_TRUE(f.scheduler->abort(1).ok());
    Status again = f.scheduler->abort(1);
    EXPECT_EQ(again.code(), ErrorCode::NotFound);
    EXPECT_EQ(again.message(), "request 1 is neither queued nor running");
    std::vector<RequestId> finished;
    for (int i = 0; i < 200 && !f.scheduler->idle(); ++i) {
      StatusOr<SimulatedStep> step = f.step();
      ASSERT_TRUE(step.ok());
      for (RequestId id : step->stats.batch.requests)
        EXPECT_NE(id, 1) << "an aborted request was scheduled";
      finished.insert(finished.end(), step->finished.begin(),
                      step->finished.end());
    }
    EXPECT_EQ(finished, (std::vector<RequestId>{2}));
    expectNoLeaks(f);
  }
}

// Requests abort at random points of a replay under memory pressure; the
// rest finish and nothing leaks.
TEST(Scheduler, RandomAbortsLeaveNothingBehind) {
  Fixture f(Policy::LongestPrefixMatch, 24, /*pageSize=*/4, /*budget=*/12);
  std::mt19937 rng(8);
  std::vector<RequestId> live;
  int64_t aborted = 0, finished = 0;
  RequestId next = 0;
  for (int step = 0; step < 2000 && (next < 80 || !f.scheduler->idle());
       ++step) {
    if (next < 80 && rng() % 2) {
      std::vector<Token> prompt = rng() % 2 ? range(1, 10) : range(40, 6);
      TracedRequest request = makeRequest(
          next, concat(prompt, range(Token(1000 + 20 * next), 1 + rng() % 12)),
          1 + rng() % 5);
      ASSERT_TRUE(f.add(request).ok());
      live.push_back(next++);
    }
    if (!live.empty() && rng() % 5 == 0) {
      size_t i = rng() % live.size();
      ASSERT_TRUE(f.scheduler->abort(live[i]).ok());
      live.erase(live.begin() + i);
      ++aborted;
    }
    StatusOr<SimulatedStep> stats = f.step();
    ASSERT_TRUE(stats.ok()) << stats.status().toString();
    for (RequestId id : stats->finished) {
      live.erase(std::find(live.begin(), live.end(), id));
      ++finished;
    }
    ASSERT_TRUE(f.cache->checkInvariants().ok()) << "step " << step;
  }
  EXPECT_TRUE(f.scheduler->idle());
  EXPECT_EQ(aborted + finished, 80);
  EXPECT_GT(aborted, 0);
  expectNoLeaks(f);
}

TEST(Scheduler, RefusesASecondRequestOfTheSameId) {
  Fixture f(Policy::FCFS, 64);
  ASSERT_TRUE(f.add(makeRequest(7, range(1, 9))).ok());
  Status twice = f.add(makeRequest(7, range(50, 9)));
  EXPECT_EQ(twice.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(twice.message(), "request 7 is queued or running already");
}

// Requests of one namespace read each other's cached prompts; a request of
// another namespace with the same prompt computes its own.
TEST(Scheduler, NamespacesDoNotShareCachedKV) {
  Fixture f(Policy::LongestPrefixMatch, 64);
  std::vector<Token> prompt = concat(range(100, 16), range(1, 4));
  TracedRequest first = makeRequest(0, prompt);
  first.cacheNamespace = 3;
  f.serve(first);
  TracedRequest otherTenant = makeRequest(1, prompt);
  f.serve(otherTenant);
  EXPECT_EQ(f.scheduler->totals().cachedTokens, 0);
  TracedRequest sameTenant = makeRequest(2, prompt);
  sameTenant.cacheNamespace = 3;
  f.serve(sameTenant);
  EXPECT_EQ(f.scheduler->totals().cachedTokens, 16);
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

// A higher priority goes first under every policy; the policy orders
// requests of one priority.
TEST(Scheduler, HigherPriorityGoesFirst) {
  for (Policy policy :
       {Policy::FCFS, Policy::LongestPrefixMatch, Policy::DFSWeight}) {
    Fixture f(policy, 64);
    std::vector<Token> shared = range(100, 16);
    f.serve(makeRequest(0, concat(shared, range(1, 4))));
    ASSERT_TRUE(f.add(makeRequest(1, concat(shared, range(5, 4)))).ok());
    TracedRequest urgent = makeRequest(2, range(500, 20));
    urgent.priority = 1;
    ASSERT_TRUE(f.add(urgent).ok());
    ASSERT_TRUE(f.add(makeRequest(3, concat(shared, range(9, 4)))).ok());
    std::vector<size_t> order = f.scheduler->order();
    ASSERT_EQ(order.size(), 3u) << toString(policy);
    EXPECT_EQ(order[0], 1u) << toString(policy); // request 2, cold
  }
}

namespace {

/// The most steps any request of a stream waited: hot requests sharing a
/// long prefix arrive faster than they are served while a few cold ones
/// with prompts of their own wait under LPM.
int64_t longestWait(int64_t agingSteps) {
  // 2.2 arrivals a step: just past what the pool serves while hot requests
  // keep coming, so LPM keeps putting the cold ones off.
  constexpr int perTenSteps = 22;
  auto pool = makeAccountingPool(/*pages=*/40, /*pageSize=*/4);
  RadixCache cache(*pool);
  SchedulerConfig config;
  config.tokenBudget = 24;
  config.agingSteps = agingSteps;
  Scheduler scheduler(config, *pool, cache);
  SyntheticModel model;
  std::mt19937 rng(5);
  std::map<RequestId, int64_t> arrivedAt;
  std::set<RequestId> admitted;
  int64_t longest = 0, steps = 600;
  RequestId next = 0;
  for (int64_t step = 0; step < steps; ++step) {
    int arrivals = int((step + 1) * perTenSteps / 10 - step * perTenSteps / 10);
    for (int i = 0; i < arrivals && step < 400; ++i) {
      bool cold = rng() % 8 == 0;
      std::vector<Token> prompt =
          cold ? range(Token(100000 + 100 * next), 40)
               : concat(range(1, 32), range(Token(1000 + 10 * next), 3));
      TracedRequest request = makeRequest(next, prompt, 4);
      EXPECT_TRUE(scheduler.add(request).ok());
      model.add(request);
      arrivedAt[next++] = step;
    }
    StatusOr<SimulatedStep> stats = model.step(scheduler);
    EXPECT_TRUE(stats.ok());
    for (RequestId id : stats->stats.admitted) {
      longest = std::max(longest, step - arrivedAt.at(id));
      admitted.insert(id);
    }
  }
  // Whoever never got in waited the whole run.
  for (const auto &[id, at] : arrivedAt)
    if (!admitted.count(id))
      longest = std::max(longest, steps - at);
  return longest;
}

} // namespace

// Under a steady stream of cache-hot requests LPM leaves the cold ones
// waiting; with aging, every request is admitted within the aging steps
// plus the time the requests ahead take to free their memory.
TEST(Scheduler, AgingBoundsEveryWait) {
  int64_t without = longestWait(0);
  int64_t with = longestWait(40);
  EXPECT_GT(without, 40 + 30) << "the stream never starved anyone";
  EXPECT_LE(with, 40 + 30);
}

// The scheduler never knows how long an answer is: a request stops when
// the model says so, long before its max_tokens, or at its max_tokens when
// the model never does.
TEST(Scheduler, RequestsStopWhenTheModelSaysOrAtMaxTokens) {
  Fixture f(Policy::FCFS, 64);
  ASSERT_TRUE(f.add(makeRequest(0, range(1, 9), /*outputLen=*/3,
                                /*maxTokens=*/50))
                  .ok());
  f.runToCompletion();
  EXPECT_EQ(f.model.sampled(0), 3);

  TracedRequest endless = makeRequest(1, range(100, 9), /*outputLen=*/1000);
  endless.maxTokens = 5;
  ASSERT_TRUE(f.add(endless).ok());
  f.runToCompletion();
  EXPECT_EQ(f.model.sampled(1), 5);
  expectNoLeaks(f);
}

// Admission holds back only the new-token ratio's share of max_tokens:
// requests whose max_tokens alone would fill the pool run side by side.
TEST(Scheduler, AdmissionReservesAnEstimateNotMaxTokens) {
  // 16 pages of 4: each request's prompt and max_tokens take 12 pages, its
  // prompt and 0.7 of max_tokens about 9.
  Fixture f(Policy::FCFS, 16);
  SchedulerConfig config;
  config.initialNewTokenRatio = 0.2;
  config.minNewTokenRatio = 0.2;
  f.scheduler = std::make_unique<Scheduler>(config, *f.pool, *f.cache);
  for (RequestId id = 0; id < 2; ++id)
    ASSERT_TRUE(f.add(makeRequest(id, range(Token(1000 * (id + 1)), 8),
                                  /*outputLen=*/2, /*maxTokens=*/40))
                    .ok());
  StatusOr<SimulatedStep> first = f.step();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stats.admitted, (std::vector<RequestId>{0, 1}));
  f.runToCompletion();
  EXPECT_EQ(f.scheduler->totals().preemptions, 0);
}

// The reservation for a request's output reads its max_tokens clipped to
// clipMaxNewTokens (SGLang's 4096): two requests that may each write 7000
// tokens are admitted together when the estimate is clipped, one at a time
// when it is not.
TEST(Scheduler, AdmissionClipsTheOutputItReserves) {
  for (int64_t clip : {int64_t(1000), int64_t(1) << 40}) {
    // 2000 pages of 4: 0.7 of 7000 tokens is 1225 pages, of 1000 is 175.
    Fixture f(Policy::FCFS, 2000);
    SchedulerConfig config;
    config.initialNewTokenRatio = config.minNewTokenRatio = 0.7;
    config.clipMaxNewTokens = clip;
    f.scheduler = std::make_unique<Scheduler>(config, *f.pool, *f.cache);
    for (RequestId id = 0; id < 2; ++id)
      ASSERT_TRUE(f.add(makeRequest(id, range(Token(1000 * (id + 1)), 8),
                                    /*outputLen=*/3, /*maxTokens=*/7000))
                      .ok());
    StatusOr<SimulatedStep> first = f.step();
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->stats.admitted.size(), clip == 1000 ? 2u : 1u)
        << "clip " << clip;
    f.runToCompletion();
    EXPECT_EQ(f.scheduler->totals().finished, 2);
    EXPECT_EQ(f.scheduler->totals().preemptions, 0);
  }
}

// A decode that finds no free page and nothing to evict preempts the
// latest-admitted request: it leaves the batch with the tokens it sampled,
// and later computes them again with its prompt.
TEST(Scheduler, DecodeOutOfPagesPreemptsTheLatestAdmitted) {
  Fixture f(Policy::FCFS, /*pages=*/8);
  SchedulerConfig config;
  config.initialNewTokenRatio = 0.0; // admit on prompts alone
  config.minNewTokenRatio = 0.0;
  f.scheduler = std::make_unique<Scheduler>(config, *f.pool, *f.cache);
  for (RequestId id = 0; id < 2; ++id)
    ASSERT_TRUE(f.add(makeRequest(id, range(Token(1000 * (id + 1)), 7),
                                  /*outputLen=*/11))
                    .ok());
  std::vector<RequestId> preempted, admitted;
  for (int i = 0; i < 200 && !f.scheduler->idle(); ++i) {
    StatusOr<SimulatedStep> step = f.step();
    ASSERT_TRUE(step.ok()) << step.status().toString();
    preempted.insert(preempted.end(), step->stats.preempted.begin(),
                     step->stats.preempted.end());
    admitted.insert(admitted.end(), step->stats.admitted.begin(),
                    step->stats.admitted.end());
  }
  ASSERT_TRUE(f.scheduler->idle());
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted.front(), 1);
  EXPECT_EQ(admitted, (std::vector<RequestId>{0, 1, 1}));
  EXPECT_EQ(f.model.sampled(0), 11);
  EXPECT_EQ(f.model.sampled(1), 11);
  EXPECT_GT(f.scheduler->totals().recomputedTokens, 0);
  // Hit rates count each prompt once.
  EXPECT_EQ(f.scheduler->totals().promptTokens, 14);
  expectNoLeaks(f);
}

// The step's token budget counts its decodes: prompt chunks get the rest.
// maxRunning counts sequences: a request of n samples takes n places,
// before it forks as after.
TEST(Scheduler, EveryBranchTakesARunningPlace) {
  Fixture f(Policy::FCFS, 256);
  SchedulerConfig config;
  config.maxRunning = 4;
  f.scheduler = std::make_unique<Scheduler>(config, *f.pool, *f.cache);
  TracedRequest three = makeRequest(0, range(1, 6), 5);
  three.n = 3;
  ASSERT_TRUE(f.add(three).ok());
  ASSERT_TRUE(f.add(makeRequest(1, range(100, 6), 5)).ok());
  ASSERT_TRUE(f.add(makeRequest(2, range(200, 6), 5)).ok());
  size_t most = 0;
  std::vector<RequestId> admitted;
  for (int i = 0; i < 100 && !f.scheduler->idle(); ++i) {
    StatusOr<SimulatedStep> step = f.step();
    ASSERT_TRUE(step.ok());
    admitted.insert(admitted.end(), step->stats.admitted.begin(),
                    step->stats.admitted.end());
    most = std::max(most, f.scheduler->running().size());
  }
  EXPECT_EQ(admitted, (std::vector<RequestId>{0, 1, 2}));
  EXPECT_EQ(most, 4u);
}

TEST(Scheduler, TheTokenBudgetCountsDecodes) {
  Fixture f(Policy::FCFS, 64, 4, /*budget=*/8);
  for (RequestId id = 0; id < 3; ++id)
    ASSERT_TRUE(
        f.add(makeRequest(id, range(Token(100 * (id + 1)), 2), 10)).ok());
  StatusOr<SimulatedStep> first = f.step();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stats.prefillTokens, 6);
  ASSERT_TRUE(f.add(makeRequest(3, range(900, 20), 2)).ok());
  StatusOr<SimulatedStep> second = f.step();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->stats.decodeTokens, 3);
  EXPECT_EQ(second->stats.prefillTokens, 5);
  f.runToCompletion();
}

// A long prompt's chunks enter the cache as they are computed: a request
// sharing its start reads it from there while the long one still prefills.
TEST(Scheduler, PromptChunksEnterTheCacheAsTheyComplete) {
  Fixture f(Policy::LongestPrefixMatch, 64, 4, /*budget=*/8);
  std::vector<Token> longPrompt = range(100, 40);
  ASSERT_TRUE(f.add(makeRequest(0, longPrompt, 2)).ok());
  ASSERT_TRUE(f.step().ok());
  ASSERT_TRUE(f.step().ok()); // 16 of its 40 tokens computed
  ASSERT_FALSE(f.scheduler->running().front().prefillDone());
  std::vector<Token> shorter(longPrompt.begin(), longPrompt.begin() + 16);
  ASSERT_TRUE(f.add(makeRequest(1, concat(shorter, range(7, 3)), 2)).ok());
  f.runToCompletion();
  EXPECT_EQ(f.scheduler->totals().cachedTokens, 16);
  expectNoLeaks(f);
}

// Samples must answer the last step's samplers, in order; a request
// aborted in between is skipped. (Steps formed before the last one's
// commit: OverlapTest.cpp.)
TEST(Scheduler, CommitTakesExactlyTheLastStepsSamples) {
  Fixture f(Policy::FCFS, 64);
  for (RequestId id = 0; id < 2; ++id)
    ASSERT_TRUE(
        f.add(makeRequest(id, range(Token(100 * (id + 1)), 5), 3)).ok());
  StatusOr<StepStats> step = f.scheduler->step();
  ASSERT_TRUE(step.ok());
  ASSERT_EQ(step->batch.samplers, (std::vector<RequestId>{0, 1}));
  EXPECT_EQ(step->batch.sampleRows, (std::vector<int32_t>{4, 9}));

  StatusOr<std::vector<RequestId>> few =
      f.scheduler->commit({Sample{0, 0, 7, false}});
  EXPECT_EQ(few.status().message(),
            "the last step has 2 samplers, got 1 samples");
  StatusOr<std::vector<RequestId>> swapped =
      f.scheduler->commit({Sample{1, 0, 7, false}, Sample{0, 0, 7, false}});
  EXPECT_EQ(swapped.status().message(),
            "sample 0 is for request 1, the step's sampler 0 is request 0");

  StatusOr<std::vector<RequestId>> otherBranch =
      f.scheduler->commit({Sample{0, 1, 7, false}, Sample{1, 0, 7, false}});
  EXPECT_EQ(otherBranch.status().message(),
            "sample 0 is for request 0 branch 1, the step's sampler 0 is "
            "request 0");

  // Aborted before its step ran: none of what the step was to compute
  // for it is cached.
  ASSERT_TRUE(f.scheduler->abort(1).ok());
  StatusOr<std::vector<RequestId>> done =
      f.scheduler->commit({Sample{0, 0, 7, true}, Sample{1, 0, 8, false}});
  ASSERT_TRUE(done.ok()) << done.status().toString();
  EXPECT_EQ(*done, (std::vector<RequestId>{0}));
  EXPECT_TRUE(f.scheduler->idle());
  // Request 0's 5 prompt tokens and 1 token of answer never fed: 4 cached.
  EXPECT_EQ(f.cache->totalSize(), 4);
  expectNoLeaks(f);
}

// Every field of a scheduler's configuration is checked by name.
TEST(Scheduler, ChecksItsConfiguration) {
  auto message = [](auto edit) {
    SchedulerConfig config;
    edit(config);
    return checkConfig(config).message();
  };
  EXPECT_TRUE(checkConfig(SchedulerConfig()).ok());
  EXPECT_EQ(message([](SchedulerConfig &c) { c.maxRunning = 0; }),
            "scheduler running limit must be at least 1, got 0");
  EXPECT_EQ(
      message([](SchedulerConfig &c) { c.inFlightShareThreshold = INT64_MAX; }),
      "scheduler in-flight share threshold must be in [1, 2147483647], "
      "got 9223372036854775807");
  EXPECT_EQ(message([](SchedulerConfig &c) { c.agingSteps = -3; }),
            "scheduler aging steps must be 0 (never) or more, got -3");
  EXPECT_EQ(message([](SchedulerConfig &c) { c.initialNewTokenRatio = 1.5; }),
            "scheduler initial new-token ratio must be in [0, 1], got "
            "1.500000");
  EXPECT_EQ(message([](SchedulerConfig &c) { c.minNewTokenRatio = 0.8; }),
            "scheduler minimum new-token ratio must be in [0, initial "
            "ratio], got 0.800000");
  EXPECT_EQ(
      message([](SchedulerConfig &c) { c.newTokenRatioDecay = std::nan(""); }),
      "scheduler new-token ratio decay must be in [0, 1], got nan");
  EXPECT_EQ(message([](SchedulerConfig &c) { c.clipMaxNewTokens = 0; }),
            "scheduler max_tokens clip must be at least 1, got 0");
  EXPECT_EQ(message([](SchedulerConfig &c) { c.dfsWeightWindow = -1; }),
            "scheduler DFS-weight window must be 0 (the whole queue) or "
            "more, got -1");
  EXPECT_EQ(message([](SchedulerConfig &c) { c.speculativeTokens = -1; }),
            "scheduler speculative tokens must be in [0 (off), 2147483647], "
            "got -1");
  EXPECT_EQ(
      message([](SchedulerConfig &c) { c.speculativeTokens = INT64_MAX; }),
      "scheduler speculative tokens must be in [0 (off), 2147483647], got "
      "9223372036854775807");
}

namespace {

/// Serves `first` and then `second` (n = 2), queued together, over a pool
/// of 4-token pages that admits on prompts alone; returns the totals.
SchedulerTotals serveTwo(int64_t pages, int64_t budget,
                         const TracedRequest &first,
                         const TracedRequest &second) {
  Fixture f(Policy::FCFS, pages, /*pageSize=*/4, budget);
  SchedulerConfig config;
  config.tokenBudget = budget;
  config.initialNewTokenRatio = config.minNewTokenRatio = 0.0;
  f.scheduler = std::make_unique<Scheduler>(config, *f.pool, *f.cache);
  EXPECT_TRUE(f.add(first).ok());
  EXPECT_TRUE(f.add(second).ok());
  f.runToCompletion();
  for (const TracedRequest *request : {&first, &second})
    for (int32_t branch = 0; branch < request->n; ++branch)
      EXPECT_EQ(f.model.sampled(request->id, branch), request->outputLen)
          << "request " << request->id << " branch " << branch;
  EXPECT_EQ(f.scheduler->totals().finished, 2);
  expectNoLeaks(f);
  return f.scheduler->totals();
}

} // namespace

// A branch is preempted and recomputed alone; a fork that finds no page
// for its copy of the prompt's partial page queues the branch, which
// computes that page again from the cache. Every branch gets its tokens.
TEST(Scheduler, BranchesArePreemptedAndForkedWithoutLosingTokens) {
  TracedRequest grower = makeRequest(0, range(500, 3), /*outputLen=*/12);
  TracedRequest sampled = makeRequest(1, range(100, 10), /*outputLen=*/7);
  sampled.n = 2;
  SchedulerTotals preempting = serveTwo(8, 64, grower, sampled);
  EXPECT_GT(preempting.preemptions, 0);

  TracedRequest shortGrower = makeRequest(0, range(500, 3), /*outputLen=*/8);
  TracedRequest late = makeRequest(1, range(100, 10), /*outputLen=*/2);
  late.n = 2;
  SchedulerTotals deferred = serveTwo(5, 4, shortGrower, late);
  EXPECT_EQ(deferred.preemptions, 0);
  EXPECT_GT(deferred.recomputedTokens, 0) << "every fork found a page";
}

namespace attnc {
/// Scheduler's friend: preemption is driven directly, where step would
/// have changed other things before it.
struct SchedulerTestAccess {
  static Status preempt(Scheduler &scheduler, size_t index) {
    return scheduler.preempt(index);
  }
};
} // namespace attnc

namespace {

/// Everything a failed call must leave as it was, as text (so that a
/// difference prints): the pool's references and free pages, the cache's
/// sizes, every running sequence and the queue.
std::string snapshot(const Fixture &f) {
  std::string text = "free " + std::to_string(f.pool->numFreePages()) + "\n";
  text += "refs";
  for (PageId page = 0; page < f.pool->numPages(); ++page)
    text += " " + std::to_string(f.pool->refCount(page));
  text += "\ncache " + std::to_string(f.cache->evictableSize()) + "/" +
          std::to_string(f.cache->protectedSize()) + "\n";
  for (const RunningRequest &running : f.scheduler->running()) {
    text += "running " + std::to_string(running.request.id) + "." +
            std::to_string(running.branch) + " n " +
            std::to_string(running.request.n) + " fed " +
            std::to_string(running.fed) + " output " +
            std::to_string(running.output.size()) + " owned from " +
            std::to_string(running.ownedFrom) + " locked " +
            std::to_string(running.locked ? running.locked->lockRef : -1) +
            " pages";
    for (PageId page : running.pages)
      text += " " + std::to_string(page);
    text += " reserved";
    for (PageId page : running.forkPages)
      text += " " + std::to_string(page);
    text += "\n";
  }
  const SchedulerTotals &totals = f.scheduler->totals();
  text += "waiting " + std::to_string(f.scheduler->numWaiting()) +
          " preemptions " + std::to_string(totals.preemptions) + " finished " +
          std::to_string(totals.finished) + " evicted " +
          std::to_string(totals.evictedTokens) + "\n";
  return text;
}

/// The next step of both, with the same samples: equal batches and equal
/// states after.
void expectSameNextStep(Fixture &a, Fixture &b) {
  StatusOr<SimulatedStep> left = a.step(), right = b.step();
  ASSERT_TRUE(left.ok()) << left.status().toString();
  ASSERT_TRUE(right.ok()) << right.status().toString();
  const EngineBatch &x = left->stats.batch, &y = right->stats.batch;
  EXPECT_EQ(x.requests, y.requests);
  EXPECT_EQ(x.branches, y.branches);
  EXPECT_EQ(x.tokens, y.tokens);
  EXPECT_EQ(x.positions, y.positions);
  EXPECT_EQ(x.slotMapping, y.slotMapping);
  EXPECT_EQ(x.pageTable.indices, y.pageTable.indices);
  EXPECT_EQ(x.samplers, y.samplers);
  EXPECT_EQ(left->finished, right->finished);
  EXPECT_EQ(snapshot(a), snapshot(b));
}

/// Fails the `nth` (from 1) call of `operation` on the pool, once.
void failNth(PagedKVPool &pool, PagedKVPool::Operation operation, int nth,
             int *calls) {
  *calls = 0;
  pool.setFaultHook([=](PagedKVPool::Operation op) {
    if (op != operation || ++*calls != nth)
      return Status();
    return Status::error(ErrorCode::CudaError, "injected failure");
  });
}

} // namespace

// A fork's copy fails half way (a device error): the commit changes
// nothing, and once retried the scheduler goes on exactly as one that never
// saw the failure.
TEST(Scheduler, ACommitWhoseCopyFailsChangesNothing) {
  Fixture f(Policy::FCFS, /*pages=*/32), twin(Policy::FCFS, /*pages=*/32);
  TracedRequest wide = makeRequest(1, range(1, 5), /*outputLen=*/3);
  wide.n = 3;
  TracedRequest other = makeRequest(2, range(50, 9), 3);
  for (Fixture *g : {&f, &twin}) {
    ASSERT_TRUE(g->add(wide).ok());
    ASSERT_TRUE(g->add(other).ok());
  }
  StatusOr<StepStats> step = f.scheduler->step();
  ASSERT_TRUE(step.ok()) << step.status().toString();
  StatusOr<StepStats> twinStep = twin.scheduler->step();
  ASSERT_TRUE(twinStep.ok());
  std::vector<Sample> samples = f.model.sample(step->batch);
  // The twin's model answers alike; its samples are these.
  ASSERT_EQ(twin.model.sample(twinStep->batch).size(), samples.size());
  // The 5-token prompt's partial page: a copy for each of branches 1, 2,
  // reserved by the step; request 2's 9 tokens enter the cache.
  ASSERT_EQ(f.scheduler->running()[0].forkPages.size(), 2u);
  std::string before = snapshot(f);

  int copies = 0;
  failNth(*f.pool, PagedKVPool::Operation::CopyPage, 2, &copies);
  StatusOr<std::vector<RequestId>> failed = f.scheduler->commit(samples);
  EXPECT_EQ(copies, 2) << "the failure is injected at the second copy";
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "injected failure");
  EXPECT_EQ(snapshot(f), before);
  EXPECT_TRUE(f.pool->checkInvariants().ok());
  EXPECT_TRUE(f.cache->checkInvariants().ok());

  f.pool->setFaultHook(nullptr);
  StatusOr<std::vector<RequestId>> retried = f.scheduler->commit(samples);
  ASSERT_TRUE(retried.ok()) << retried.status().toString();
  StatusOr<std::vector<RequestId>> twinDone = twin.scheduler->commit(samples);
  ASSERT_TRUE(twinDone.ok());
  EXPECT_EQ(*retried, *twinDone);
  EXPECT_EQ(f.scheduler->running().size(), 4u) << "three branches and 2";
  EXPECT_EQ(snapshot(f), snapshot(twin));
  for (int i = 0; i < 4; ++i)
    expectSameNextStep(f, twin);
  f.runToCompletion();
  twin.runToCompletion();
  expectNoLeaks(f);
}

// A preemption whose release fails leaves the request running, holding
// what it held; the scheduler then goes on as one that never tried.
TEST(Scheduler, APreemptionWhoseReleaseFailsChangesNothing) {
  Fixture f(Policy::FCFS, /*pages=*/32), twin(Policy::FCFS, /*pages=*/32);
  for (Fixture *g : {&f, &twin}) {
    ASSERT_TRUE(g->add(makeRequest(1, range(1, 10), 6)).ok());
    ASSERT_TRUE(g->add(makeRequest(2, range(40, 7), 6)).ok());
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(g->step().ok());
  }
  ASSERT_EQ(f.scheduler->running().size(), 2u);
  std::string before = snapshot(f);
  int releases = 0;
  failNth(*f.pool, PagedKVPool::Operation::Release, 1, &releases);
  Status failed = SchedulerTestAccess::preempt(*f.scheduler, 1);
  EXPECT_EQ(releases, 1);
  EXPECT_EQ(failed.message(), "injected failure");
  EXPECT_EQ(snapshot(f), before);
  EXPECT_TRUE(f.pool->checkInvariants().ok());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
  f.pool->setFaultHook(nullptr);
  expectSameNextStep(f, twin);

  // Without the failure it goes through: back in the queue, its output
  // kept, what it computed cached and unlocked.
  ASSERT_EQ(f.scheduler->running().size(), 2u);
  ASSERT_TRUE(SchedulerTestAccess::preempt(*f.scheduler, 1).ok());
  EXPECT_EQ(f.scheduler->running().size(), 1u);
  EXPECT_EQ(f.scheduler->numWaiting(), 1u);
  EXPECT_EQ(f.scheduler->totals().preemptions, 1);
  f.runToCompletion();
  expectNoLeaks(f);
}

// What add and the C API check before a prompt is read, and commit before
// its samples are.
TEST(Scheduler, ChecksCountsBeforeReadingArrays) {
  Fixture f(Policy::FCFS, /*pages=*/8);
  EXPECT_EQ(f.scheduler->checkRequest(1, int64_t(1) << 31, 1, 1).message(),
            "request 1: prompt (2147483648 tokens) and max_tokens (1) exceed "
            "2147483647 positions");
  Status big = f.scheduler->checkRequest(2, 100, 1, 1);
  EXPECT_EQ(big.code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(big.message(), "request 2 needs 26 pages of KV cache (prompt, and "
                           "max_tokens for each of its 1 samples), the pool "
                           "holds 8");
  EXPECT_EQ(f.scheduler->checkRequest(3, 4, 1, 1 << 20).message(),
            "request 3 asks for 1048576 parallel samples: n must be in [1, "
            "256]");
  EXPECT_TRUE(f.scheduler->checkRequest(4, 4, 1, 1).ok());
  EXPECT_EQ(f.scheduler->checkSampleCount(int64_t(1) << 40).message(),
            "the last step has 0 samplers, got 1099511627776 samples");
  EXPECT_TRUE(f.scheduler->checkSampleCount(0).ok());
  // add refuses exactly what checkRequest does, with its message.
  TracedRequest many = makeRequest(2, range(1, 100), 1);
  EXPECT_EQ(f.add(many).message(), big.message());
}

/// A DFS-weight scheduler whose cache holds 32 served 64-token prompts
/// and whose queue holds `n` requests, each one of those prompts plus 8
/// tokens of its own.
static void queueUnderSharedPrompts(Fixture &f, int n, int64_t window) {
  SchedulerConfig config;
  config.policy = Policy::DFSWeight;
  config.dfsWeightWindow = window;
  f.scheduler = std::make_unique<Scheduler>(config, *f.pool, *f.cache);
  for (RequestId s = 0; s < 32; ++s)
    f.serve(makeRequest(s, range(Token(1000 * (s + 1)), 64)));
  for (int i = 0; i < n; ++i)
    ASSERT_TRUE(f.scheduler
                    ->add(makeRequest(
                        100 + i, concat(range(Token(1000 * (i % 32 + 1)), 64),
                                        range(Token(5000000 + 8 * i), 8))))
                    .ok());
}

// DFS-weight's ordering costs a bounded number of operations per waiting
// request, whatever the queue's length: it files each waiter once and
// walks only the tree paths to where their matches end (it used to match
// every waiter's prompt against the tree at every pass). Counted, not
// timed: 1k, 10k and 100k waiters under 32 cached prefixes.
TEST(Scheduler, DFSWeightOrderIsLinearInTheQueue) {
  std::vector<uint64_t> operations;
  for (int n : {1000, 10000, 100000}) {
    Fixture f(Policy::DFSWeight, 4096);
    ASSERT_NO_FATAL_FAILURE(queueUnderSharedPrompts(
        f, n, /*window=*/0)); // the whole queue, the default
    uint64_t before = f.scheduler->orderOperations();
    std::vector<size_t> order = f.scheduler->order();
    ASSERT_EQ(order.size(), size_t(n));
    // Every waiter under one prefix comes together, in arrival order.
    for (size_t k = 1; k < order.size(); ++k)
      if (order[k] % 32 == order[k - 1] % 32)
        ASSERT_GT(order[k], order[k - 1]);
    operations.push_back(f.scheduler->orderOperations() - before);
  }
  for (size_t k = 0; k < operations.size(); ++k)
    EXPECT_LE(operations[k], 2 * (k == 0   ? 1000u
                                  : k == 1 ? 10000u
                                           : 100000u))
        << "more than two operations a waiter";
  EXPECT_LE(operations[2], 11 * operations[1]);
  EXPECT_LE(operations[1], 11 * operations[0]);
}

// With a window, a pass orders only the first dfsWeightWindow waiters (by
// priority, then arrival) and serves the rest after them in arrival
// order: its work is the same for 10k and 100k queued requests.
TEST(Scheduler, DFSWeightWindowBoundsAPass) {
  std::vector<uint64_t> operations;
  for (int n : {10000, 100000}) {
    Fixture f(Policy::DFSWeight, 4096);
    ASSERT_NO_FATAL_FAILURE(queueUnderSharedPrompts(f, n, /*window=*/1000));
    uint64_t before = f.scheduler->orderOperations();
    std::vector<size_t> order = f.scheduler->order();
    operations.push_back(f.scheduler->orderOperations() - before);
    ASSERT_EQ(order.size(), size_t(n));
    std::vector<size_t> head(order.begin(), order.begin() + 1000);
    std::sort(head.begin(), head.end());
    for (size_t k = 0; k < 1000; ++k)
      ASSERT_EQ(head[k], k) << "the window is the first 1000 arrivals";
    for (size_t k = 1000; k < order.size(); ++k)
      ASSERT_EQ(order[k], k) << "the rest in arrival order";
  }
  EXPECT_LE(operations[0], 2000u);
  EXPECT_EQ(operations[1], operations[0]);
}

// The linear ordering is the one matching every waiter's prompt against
// the tree gives (the former implementation, kept here as the reference):
// on random trees and queues, with priorities.
TEST(Scheduler, DFSWeightOrderMatchesMatchingEveryWaiter) {
  std::mt19937 rng(5);
  for (int round = 0; round < 40; ++round) {
    Fixture f(Policy::DFSWeight, 1024);
    std::vector<std::vector<Token>> prefixes;
    for (RequestId s = 0; s < 6; ++s) {
      std::vector<Token> prompt = range(Token(100 * (rng() % 3)), 8);
      prompt = concat(prompt, range(Token(10000 + 100 * (rng() % 4)), 8));
      prefixes.push_back(prompt);
      f.serve(makeRequest(s, concat(prompt, {1})));
    }
    std::vector<TracedRequest> queue;
    for (int i = 0; i < 60; ++i) {
      const std::vector<Token> &prefix = prefixes[rng() % prefixes.size()];
      size_t keep = 4 * (rng() % 5);
      TracedRequest request = makeRequest(
          100 + i, concat(std::vector<Token>(prefix.begin(),
                                             prefix.begin() + ptrdiff_t(keep)),
                          range(Token(900000 + 16 * i), 1 + int(rng() % 5))));
      request.priority = round % 2 ? int32_t(rng() % 3) : 0;
      ASSERT_TRUE(f.scheduler->add(request).ok());
      queue.push_back(request);
    }
    std::vector<size_t> order = f.scheduler->order();

    // The reference, on the tree as the ordering left it.
    using Node = RadixCache::Node;
    std::map<const Node *, int64_t> weight;
    std::map<const Node *, std::vector<size_t>> at;
    for (size_t i = 0; i < queue.size(); ++i) {
      const std::vector<Token> &prompt = queue[i].prompt;
      size_t matchable = (prompt.size() - 1) / 4 * 4;
      const Node *node = f.cache->matchPrefix(prompt.data(), matchable).node;
      at[node].push_back(i);
      for (; node; node = node->parent)
        ++weight[node];
    }
    std::vector<size_t> expected;
    std::function<void(const Node *)> visit = [&](const Node *node) {
      std::vector<const Node *> children;
      for (const auto &[key, child] : node->children)
        if (weight.count(child.get()))
          children.push_back(child.get());
      std::stable_sort(
          children.begin(), children.end(),
          [&](const Node *a, const Node *b) { return weight[a] > weight[b]; });
      for (const Node *child : children)
        visit(child);
      auto here = at.find(node);
      if (here != at.end())
        expected.insert(expected.end(), here->second.begin(),
                        here->second.end());
    };
    visit(f.cache->root());
    std::stable_sort(expected.begin(), expected.end(), [&](size_t a, size_t b) {
      return queue[a].priority > queue[b].priority;
    });
    ASSERT_EQ(order, expected) << "round " << round;
  }
}

namespace {

/// Three running requests of 13-token prompts in a pool of 12 pages that
/// they fill (4 pages each, the last for their output): 0 and 2 of
/// priority 0, 1 of priority -1, admitted by priority (0, 2, then 1).
void fillWithThreeRunning(Fixture &f) {
  int32_t priorities[] = {0, -1, 0};
  for (RequestId id = 0; id < 3; ++id) {
    TracedRequest request =
        makeRequest(id, range(Token(100 * (id + 1)), 13), /*outputLen=*/4);
    request.priority = priorities[id];
    ASSERT_TRUE(f.add(request).ok());
  }
  StatusOr<SimulatedStep> first = f.step();
  ASSERT_TRUE(first.ok()) << first.status().toString();
  ASSERT_EQ(first->stats.admitted, (std::vector<RequestId>{0, 2, 1}));
  ASSERT_EQ(f.pool->numFreePages(), 0);
}

TracedRequest arrivalOfPriority(RequestId id, int promptLength,
                                int32_t priority) {
  TracedRequest request =
      makeRequest(id, range(Token(100 * (id + 1)), promptLength), 4);
  request.priority = priority;
  return request;
}

} // namespace

// A waiting request of higher priority than running ones, for which there
// are no pages, preempts the lowest priority first, then the latest
// admitted, until it fits: a 2-token prompt needs what preempting request
// 1 frees, a 21-token one request 2's too, never request 0's. Every
// request still finishes.
TEST(Scheduler, AHigherPriorityArrivalPreemptsTheLowestUntilItFits) {
  for (auto [promptLength, victims] :
       {std::pair(2, std::vector<RequestId>{1}),
        std::pair(21, std::vector<RequestId>{1, 2})}) {
    SCOPED_TRACE(std::to_string(promptLength) + "-token arrival");
    Fixture f(Policy::FCFS, /*pages=*/12);
    fillWithThreeRunning(f);
    ASSERT_TRUE(f.add(arrivalOfPriority(3, promptLength, 1)).ok());
    StatusOr<SimulatedStep> step = f.step();
    ASSERT_TRUE(step.ok()) << step.status().toString();
    EXPECT_EQ(step->stats.preempted, victims);
    EXPECT_EQ(step->stats.admitted, (std::vector<RequestId>{3}));
    f.runToCompletion();
    EXPECT_EQ(f.scheduler->totals().finished, 4);
    expectNoLeaks(f);
  }
}

// Never a request of the arrival's priority or higher: an arrival of
// priority 0 may preempt request 1 (priority -1) only, and one of -1
// nobody; both wait for what is left.
TEST(Scheduler, PriorityPreemptsNoRequestOfEqualOrHigherPriority) {
  for (int32_t priority : {0, -1}) {
    SCOPED_TRACE("priority " + std::to_string(priority));
    Fixture f(Policy::LongestPrefixMatch, /*pages=*/12);
    fillWithThreeRunning(f);
    ASSERT_TRUE(f.add(arrivalOfPriority(3, 21, priority)).ok());
    StatusOr<SimulatedStep> step = f.step();
    ASSERT_TRUE(step.ok()) << step.status().toString();
    EXPECT_EQ(step->stats.preempted, priority == 0 ? std::vector<RequestId>{1}
                                                   : std::vector<RequestId>{});
    EXPECT_TRUE(step->stats.admitted.empty()) << "it does not fit";
    f.runToCompletion();
    EXPECT_EQ(f.scheduler->totals().finished, 4);
    expectNoLeaks(f);
  }
}
