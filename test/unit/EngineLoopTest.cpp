//===- EngineLoopTest.cpp - an engine of several layers over the scheduler ===//
//
// A stand-in transformer of 2-3 layers (StandInEngine.h) run by an engine
// loop over the scheduler, as a real engine runs one. Every number is an
// exact integer function of the sequence, so after each step every layer's
// K/V rows of every sequence in the batch are compared with a from-scratch
// computation over its tokens: one page read in the wrong place, or never
// copied, shows in that layer and in every layer above it.
//
// The engine either owns its caches or uses the pool's (StandInEngine.h).
// The workload forks requests into 1..3 branches on prompts with partial
// last pages, shares prefixes, chunks prompts, preempts and aborts.
//
//===----------------------------------------------------------------------===//

#include "StandInEngine.h"
#include "TestPools.h"
#include "sched/Scheduler.h"
#include "sim/SyntheticModel.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace attnc;
using namespace attnc::standin;

namespace {

struct LoopOptions {
  int64_t layers = 2;
  /// The engine's caches are its own (beside an accounting pool) or the
  /// pool's.
  bool ownCaches = true;
  /// Whether the engine applies each step's pageCopies.
  bool applyCopies = true;
  uint32_t seed = 1;
};

struct LoopResult {
  int64_t steps = 0, checkedRows = 0, wrongRows = 0, copies = 0,
          chunkedPrefills = 0, forked = 0, aborted = 0;
  /// (request, branch) sequences any of whose rows were ever wrong.
  std::set<std::pair<RequestId, int32_t>> wrongSequences;
  int64_t sequences = 0;
  SchedulerTotals totals;
};

/// Serves a workload of forks, shared prefixes, follow-ups, long prompts
/// and answers longer than admission expects through the scheduler, the
/// engine running every step through `layers` layers.
LoopResult runEngineLoop(const LoopOptions &options) {
  LoopResult result;
  const int64_t pages = 24;
  std::unique_ptr<PagedKVPool> pool =
      makeStandInPool(pages, options.layers, !options.ownCaches);
  if (!pool)
    return result;
  RadixCache cache(*pool);
  SchedulerConfig sched;
  sched.tokenBudget = 10; // prompts of up to 23 tokens come in chunks
  sched.maxRunning = 6;
  sched.initialNewTokenRatio = sched.minNewTokenRatio = 0.1; // preempts
  Scheduler scheduler(sched, *pool, cache);
  SyntheticModel model;
  std::unique_ptr<Caches> caches;
  if (options.ownCaches)
    caches = std::make_unique<OwnCaches>(options.layers, pages);
  else
    caches = std::make_unique<PoolCaches>(*pool);

  std::mt19937 rng(options.seed);
  std::vector<Token> system;
  for (Token t = 1; t <= 9; ++t)
    system.push_back(t); // 2 whole pages and one token: shared, and partial
  std::map<RequestId, TracedRequest> byId;
  std::vector<RequestId> finished;
  std::set<RequestId> done;
  RequestId nextId = 0;
  auto arrive = [&] {
    TracedRequest request;
    request.id = nextId++;
    int kind = int(rng() % 4);
    if (kind != 0)
      request.prompt = system;
    if (kind == 3 && !finished.empty()) // a follow-up quoting a conversation
      request.prompt = fullSequence(byId.at(finished[rng() % finished.size()]));
    int own = 1 + int(rng() % 14);
    for (int i = 0; i < own; ++i)
      request.prompt.push_back(Token(1000 * (request.id + 1) + i));
    request.outputLen = 6 + int64_t(rng() % 11);
    request.maxTokens = 16;
    // (A follow-up, up to 45 tokens and 16 more, is one sample: three
    // would not fit the pool.)
    request.n = kind == 3 ? 1 : int32_t(1 + rng() % 3);
    if (request.n > 1)
      ++result.forked;
    result.sequences += request.n;
    Status added = scheduler.add(request);
    EXPECT_TRUE(added.ok()) << added.toString();
    model.add(request);
    byId[request.id] = request;
  };
  for (int i = 0; i < 8; ++i)
    arrive();

  while (!scheduler.idle() || nextId < 32) {
    if (++result.steps > 2000) {
      ADD_FAILURE() << "the scheduler stalled";
      break;
    }
    if (result.steps % 3 == 0 && nextId < 32)
      arrive();
    StatusOr<StepStats> step = scheduler.step();
    if (!step.ok()) {
      ADD_FAILURE() << step.status().toString();
      break;
    }
    const EngineBatch &batch = step->batch;
    result.copies += int64_t(batch.pageCopies.size());
    // Copy-on-write first, in every layer, before anything is written.
    if (options.applyCopies)
      caches->copy(batch.pageCopies);

    size_t count = batch.requests.size();
    (void)forward(*caches, batch, options.layers);
    auto slotOf = [&](size_t r, int64_t position) {
      return slotThroughTable(batch, r, position);
    };

    // Every layer's rows of every sequence of the batch, against a
    // computation from its tokens alone.
    for (size_t r = 0; r < count; ++r) {
      const TracedRequest &request = byId.at(batch.requests[r]);
      int32_t branch = batch.branches[r];
      int64_t length = batch.positions[size_t(batch.qoIndptr[r + 1] - 1)] + 1;
      if (r >= size_t(batch.numDecodes) &&
          length < int64_t(request.prompt.size()))
        ++result.chunkedPrefills;
      std::vector<Token> sequence;
      for (int64_t j = 0; j < length; ++j)
        sequence.push_back(SyntheticModel::tokenAt(request, j, branch));
      Reference ref = recompute(sequence, options.layers);
      for (int64_t layer = 0; layer < options.layers; ++layer)
        for (int64_t j = 0; j < length; ++j) {
          ++result.checkedRows;
          int64_t slot = slotOf(r, j);
          if (caches->key(layer, slot) != ref.keys[size_t(layer)][size_t(j)] ||
              caches->value(layer, slot) !=
                  ref.values[size_t(layer)][size_t(j)]) {
            ++result.wrongRows;
            result.wrongSequences.insert({request.id, branch});
          }
        }
    }

    StatusOr<std::vector<RequestId>> committed =
        scheduler.commit(model.sample(batch));
    if (!committed.ok()) {
      ADD_FAILURE() << committed.status().toString();
      break;
    }
    for (RequestId id : *committed) {
      finished.push_back(id);
      done.insert(id);
    }
    // Now and then a running request is dropped, a fork's new branches
    // among them: the next step's copies may name pages it freed.
    if (result.steps % 13 == 0 && !scheduler.running().empty()) {
      RequestId victim =
          scheduler.running()[rng() % scheduler.running().size()].request.id;
      EXPECT_TRUE(scheduler.abort(victim).ok());
      done.insert(victim);
      ++result.aborted;
    }
  }
  EXPECT_EQ(done.size(), size_t(nextId)) << "a request was lost";
  EXPECT_TRUE(pool->checkInvariants().ok());
  EXPECT_TRUE(cache.checkInvariants().ok());
  result.totals = scheduler.totals();
  return result;
}

std::string describe(const LoopResult &r) {
  return std::to_string(r.wrongRows) + " of " + std::to_string(r.checkedRows) +
         " rows wrong in " + std::to_string(r.wrongSequences.size()) + " of " +
         std::to_string(r.sequences) + " sequences; " +
         std::to_string(r.copies) + " page copies, " +
         std::to_string(r.forked) + " forked requests, " +
         std::to_string(r.totals.preemptions) + " preemptions, " +
         std::to_string(r.totals.cachedTokens) + " cached tokens, " +
         std::to_string(r.chunkedPrefills) + " prefill chunks, " +
         std::to_string(r.aborted) + " aborts, " + std::to_string(r.steps) +
         " steps";
}

/// What the workload must have exercised for a run to mean anything.
void expectEverythingHappened(const LoopResult &r) {
  EXPECT_GT(r.copies, 0) << "no fork copied a partial page";
  EXPECT_GT(r.forked, 0);
  EXPECT_GT(r.totals.preemptions, 0) << "nothing was preempted";
  EXPECT_GT(r.totals.cachedTokens, 0) << "no prefix was reused";
  EXPECT_GT(r.chunkedPrefills, 0) << "no prompt came in chunks";
  EXPECT_GT(r.checkedRows, 0);
}

} // namespace

// An engine whose per-layer caches are its own applies each step's page
// copies in every layer: every row of every layer of every sequence is
// what a computation from scratch gives.
TEST(EngineLoop, OwnCachesOfSeveralLayersReadExactlyTheirSequences) {
  for (int64_t layers : {2, 3}) {
    LoopResult all;
    for (uint32_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(std::to_string(layers) + " layers, seed " +
                   std::to_string(seed));
      LoopOptions options;
      options.layers = layers;
      options.seed = seed;
      LoopResult r = runEngineLoop(options);
      EXPECT_EQ(r.wrongRows, 0) << describe(r);
      EXPECT_GT(r.copies, 0) << describe(r);
      all.copies += r.copies;
      all.forked += r.forked;
      all.totals.preemptions += r.totals.preemptions;
      all.totals.cachedTokens += r.totals.cachedTokens;
      all.chunkedPrefills += r.chunkedPrefills;
      all.checkedRows += r.checkedRows;
    }
    expectEverythingHappened(all);
  }
}

// The test can fail: an engine that ignores the reported copies reads,
// in its forked branches, a partial prompt page that was never copied
// (the bug of issue 52).
TEST(EngineLoop, IgnoringThePageCopiesReadsWrongRows) {
  LoopOptions options;
  options.layers = 3;
  options.applyCopies = false;
  LoopResult r = runEngineLoop(options);
  EXPECT_GT(r.wrongRows, 0) << describe(r);
  EXPECT_GT(r.wrongSequences.size(), 0u) << describe(r);
}

// The pool with a layer axis, as the engine's caches: the scheduler's
// fork copies went into every layer, so the engine may skip the reported
// copies, and applying them again changes nothing.
TEST(EngineLoop, APoolOfSeveralLayersCopiesForksInEveryLayer) {
  for (bool applyCopies : {false, true}) {
    SCOPED_TRACE(applyCopies ? "copies applied again" : "copies skipped");
    LoopOptions options;
    options.layers = 3;
    options.ownCaches = false;
    options.applyCopies = applyCopies;
    LoopResult r = runEngineLoop(options);
    EXPECT_EQ(r.wrongRows, 0) << describe(r);
    expectEverythingHappened(r);
  }
}

// A step reports exactly the copies the commit before it made, once: the
// fork's partial prompt page into each new branch's first page of its own.
TEST(EngineLoop, AStepReportsTheCopiesOfTheCommitBeforeIt) {
  std::unique_ptr<PagedKVPool> pool = makeAccountingPool(32, kPageSize);
  RadixCache cache(*pool);
  Scheduler scheduler(SchedulerConfig(), *pool, cache);
  SyntheticModel model;
  TracedRequest wide;
  wide.id = 5;
  wide.prompt = {1, 2, 3, 4, 5, 6}; // a whole page and 2 tokens
  wide.maxTokens = wide.outputLen = 3;
  wide.n = 3;
  model.add(wide);
  ASSERT_TRUE(scheduler.add(wide).ok());
  StatusOr<StepStats> first = scheduler.step();
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->batch.pageCopies.empty());
  ASSERT_TRUE(scheduler.commit(model.sample(first->batch)).ok());
  StatusOr<StepStats> second = scheduler.step();
  ASSERT_TRUE(second.ok());
  const EngineBatch &batch = second->batch;
  ASSERT_EQ(batch.requests.size(), 3u);
  // Each branch's second page; branch 0 keeps the prompt's.
  std::map<int32_t, PageId> partial;
  for (size_t r = 0; r < 3; ++r)
    partial[batch.branches[r]] =
        batch.pageTable.indices[size_t(batch.pageTable.indptr[r] + 1)];
  EXPECT_EQ(batch.pageCopies,
            (std::vector<PageCopy>{{partial[0], partial[1]},
                                   {partial[0], partial[2]}}));
  ASSERT_TRUE(scheduler.commit(model.sample(batch)).ok());
  StatusOr<StepStats> third = scheduler.step();
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->batch.pageCopies.empty()) << "reported once";
}
