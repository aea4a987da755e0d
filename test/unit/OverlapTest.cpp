//===- OverlapTest.cpp - steps formed while the last one runs -------------===//
//
// Overlap scheduling (Scheduler.h): step N+1 is formed before step N's
// samples are committed, its decodes fed N's samples on the device
// (EngineBatch::tokenFromSample). The bar: the same results as the
// synchronous loop. A stand-in transformer (StandInEngine.h) samples each
// token from what it reads through the step's page table and slots, so a
// wrong page, slot, position or token changes every token after it; the
// same randomized workloads (shared prefixes, follow-ups quoting answers,
// chunked prompts, n of 1..3, stops, max_tokens, aborts, a pool small
// enough to preempt) go through the synchronous and the overlapped loop,
// and every sequence's output must be the same in both, and what the
// sequence generates alone.
//
//===----------------------------------------------------------------------===//

#include "ServingHarness.h"
#include "StandInEngine.h"
#include "TestPools.h"
#include "sched/Scheduler.h"
#include "sim/SyntheticModel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

using namespace attnc;
using namespace attnc::standin;

namespace {

/// 32 requests, a quarter of them following up on an earlier request's
/// prompt and answer; 1..3 samples, max_tokens 4..16.
Workload makeWorkload(uint32_t seed, int64_t layers) {
  return standin::makeWorkload(seed, layers, WorkloadShape());
}

struct ServeOptions {
  bool overlap = false;
  /// The engine's caches are its own (beside an accounting pool) or the
  /// pool's.
  bool ownCaches = false;
  /// Seeds when an overlapped step runs (as soon as it is launched, or at
  /// its wait) and the aborts at random points.
  uint32_t seed = 1;
  /// Aborts a random running request now and then, before or after a
  /// commit (its output is then only a prefix of the expected one).
  bool randomAborts = false;
  /// Whether the engine reads a pending token from the sample the row
  /// names (EngineBatch::tokenFromSample), as it must, or feeds the
  /// placeholder.
  bool fillPendingTokens = true;
  Policy policy = Policy::LongestPrefixMatch;
  /// Host pages of a tier under the cache (0: none), and whether an engine
  /// with caches of its own applies the steps' pageTransfers, as it must.
  int64_t hostPages = 0;
  bool applyTransfers = true;
};

struct Served : ServedOutputs {
  int64_t rowsFromSamples = 0, wastedSamples = 0, preemptedInFlight = 0,
          abortedInBothSteps = 0, copies = 0, offloads = 0, loads = 0;
};

/// Serves `w` through the scheduler and the stand-in engine, the
/// synchronous loop (step, run, commit) or the overlapped one
/// (Scheduler.h's header).
Served serve(const Workload &w, const ServeOptions &options) {
  Served served;
  const int64_t pages = 24;
  std::unique_ptr<PagedKVPool> pool =
      makeStandInPool(pages, w.layers, !options.ownCaches);
  if (!pool)
    return served;
  std::unique_ptr<HostTier> tier;
  std::unique_ptr<RadixCache> owned;
  if (options.hostPages > 0) {
    StatusOr<std::unique_ptr<HostTier>> made =
        HostTier::create(*pool, options.hostPages);
    EXPECT_TRUE(made.ok()) << made.status().toString();
    if (!made.ok())
      return served;
    tier = std::move(*made);
    StatusOr<std::unique_ptr<RadixCache>> withTier =
        RadixCache::withHostTier(*pool, *tier);
    EXPECT_TRUE(withTier.ok()) << withTier.status().toString();
    if (!withTier.ok())
      return served;
    owned = std::move(*withTier);
  } else {
    owned = std::make_unique<RadixCache>(*pool);
  }
  RadixCache &cache = *owned;
  // Prompts of up to 23 tokens come in chunks.
  SchedulerConfig config = preemptingConfig(/*tokenBudget=*/10);
  config.policy = options.policy;
  Scheduler scheduler(config, *pool, cache);
  std::unique_ptr<Caches> caches =
      makeCaches(options.ownCaches, *pool, w.layers, pages, options.hostPages);
  std::mt19937 rng(options.seed);
  std::map<RequestId, const Arrival *> byId = arrivalsById(w);
  EngineLoop loop;
  loop.overlap = options.overlap;

  loop.run = [&](Launched &launched) {
    const EngineBatch &batch = launched.stats.batch;
    if (options.ownCaches)
      caches->copy(batch.pageCopies);
    if (options.ownCaches && options.applyTransfers)
      caches->transfer(batch.pageTransfers);
    launched.samples = sampleTop(batch, forward(*caches, batch, w.layers));
  };
  // The engine's own record of every sequence's output: every sample but
  // those of requests it aborted and those after a stop it reported (a
  // step formed before the stop was committed feeds one more token).
  std::set<RequestBranch> stopped, full;
  auto accept = [&](const std::vector<Sample> &samples) {
    for (const Sample &sample : samples) {
      RequestBranch id{sample.request, sample.branch};
      if (served.aborted.count(sample.request))
        continue;
      if (stopped.count(id)) {
        ++served.wastedSamples;
        continue;
      }
      EXPECT_FALSE(full.count(id))
          << "request " << sample.request << " branch " << sample.branch
          << " was sampled past its max_tokens";
      std::vector<Token> &output = served.outputs[id];
      output.push_back(sample.token);
      if (sample.stop)
        stopped.insert(id);
      if (int64_t(output.size()) >= byId.at(sample.request)->request.maxTokens)
        full.insert(id);
    }
  };
  auto abort = [&](RequestId id, bool atRandom) {
    Status status = scheduler.abort(id);
    EXPECT_TRUE(status.ok()) << status.toString();
    served.aborted.insert(id);
    if (atRandom)
      served.cutShort.insert(id);
  };
  auto randomAbort = [&] {
    if (!options.randomAborts || rng() % 23 != 0 || scheduler.running().empty())
      return std::optional<RequestId>();
    RequestId victim =
        scheduler.running()[rng() % scheduler.running().size()].request.id;
    abort(victim, /*atRandom=*/true);
    return std::optional<RequestId>(victim);
  };
  auto commit = [&](Launched &launched) {
    StatusOr<std::vector<RequestId>> finished =
        scheduler.commit(launched.samples);
    ASSERT_TRUE(finished.ok()) << finished.status().toString();
    accept(launched.samples);
    served.finished.insert(finished->begin(), finished->end());
    expectSchedulerHoldsTheOutputs(scheduler, served);
    // The aborts the workload asks for, at the same output in both loops
    // (running, queued or preempted).
    for (size_t i = 0; i < loop.queued; ++i) {
      const Arrival &a = w.arrivals[i];
      RequestId id = a.request.id;
      if (a.abortAfter > 0 && !served.aborted.count(id) &&
          !served.finished.count(id) &&
          int64_t(served.outputs[RequestBranch(id, 0)].size()) >= a.abortAfter)
        abort(id, /*atRandom=*/false);
    }
  };
  loop.commit = [&](Launched &launched) {
    commit(launched);
    (void)randomAbort();
  };

  loop.formStep = [&] {
    StatusOr<StepStats> stats = scheduler.step();
    if (stats.ok()) {
      served.copies += int64_t(stats->batch.pageCopies.size());
      for (const PageTransfer &t : stats->batch.pageTransfers)
        ++(t.direction == TransferDirection::Load ? served.loads
                                                  : served.offloads);
    }
    return stats;
  };
  loop.formedOverInFlight = [&](const Launched &formed,
                                const Launched &inFlight) {
    std::set<RequestId> sampled(inFlight.stats.batch.samplers.begin(),
                                inFlight.stats.batch.samplers.end());
    for (RequestId id : formed.stats.preempted)
      served.preemptedInFlight += sampled.count(id);
    // Aborted between the step formed and the commit of the one before: in
    // both steps, possibly.
    if (std::optional<RequestId> victim = randomAbort()) {
      const auto &requests = formed.stats.batch.requests;
      served.abortedInBothSteps +=
          sampled.count(*victim) && std::find(requests.begin(), requests.end(),
                                              *victim) != requests.end();
    }
  };
  loop.feedPending = [&](EngineBatch &batch, size_t row, const Sample &sample) {
    ++served.rowsFromSamples;
    EXPECT_EQ(batch.tokens[row], kPendingSampleToken);
    size_t r = requestOfRow(batch, row);
    EXPECT_EQ(RequestBranch(sample.request, sample.branch),
              RequestBranch(batch.requests[r], batch.branches[r]))
        << "row " << row << " reads another sequence's sample";
    if (options.fillPendingTokens)
      batch.tokens[row] = sample.token;
  };
  // A tier over a host pool moves pages at once, as a step is formed: a
  // load there would overwrite a page a step launched before still writes,
  // had it not run (Scheduler.h's header).
  loop.alwaysRunAtOnce = tier && !options.ownCaches;
  loop.serve(w, scheduler, rng, served);
  expectServedCleanly(w, served, scheduler, *pool, cache, tier.get());
  served.totals = scheduler.totals();
  return served;
}

} // namespace

// The bar: the overlapped loop gives every sequence the output the
// synchronous loop gives it (and what it generates alone), over workloads
// that fork, share prefixes, chunk prompts, stop, run into max_tokens, are
// aborted part way and preempt; with the engine's own caches and the
// pool's, under every policy; and nothing leaks.
TEST(Overlap, GivesTheSynchronousLoopsOutputs) {
  Served all;
  int64_t stops = 0;
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    Workload w = makeWorkload(seed, /*layers=*/2 + seed % 2);
    for (const auto &[id, output] : w.expected)
      stops += !output.empty() && isStop(output.back());
    for (bool ownCaches : {false, true})
      for (Policy policy :
           {Policy::FCFS, Policy::LongestPrefixMatch, Policy::DFSWeight}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + ", " + toString(policy) +
                     (ownCaches ? ", own caches" : ", the pool's caches"));
        ServeOptions options;
        options.ownCaches = ownCaches;
        options.policy = policy;
        options.seed = seed;
        Served sync = serve(w, options);
        options.overlap = true;
        Served overlapped = serve(w, options);
        EXPECT_EQ(sync.outputs, overlapped.outputs);
        EXPECT_EQ(sync.finished, overlapped.finished);
        expectExpectedOutputs(w, sync);
        expectExpectedOutputs(w, overlapped);
        EXPECT_EQ(sync.rowsFromSamples, 0);
        EXPECT_EQ(sync.wastedSamples, 0) << "a synchronous step fed a stop";
        all.rowsFromSamples += overlapped.rowsFromSamples;
        all.wastedSamples += overlapped.wastedSamples;
        all.preemptedInFlight += overlapped.preemptedInFlight;
        all.copies += overlapped.copies;
        all.aborted.insert(overlapped.aborted.begin(),
                           overlapped.aborted.end());
        all.totals.preemptions += overlapped.totals.preemptions;
        all.totals.cachedTokens += overlapped.totals.cachedTokens;
      }
  }
  // What the workloads must have exercised, overlapped, to mean anything.
  EXPECT_GT(stops, 0) << "nothing stopped before its max_tokens";
  EXPECT_GT(all.rowsFromSamples, 0) << "no decode read a pending sample";
  EXPECT_GT(all.wastedSamples, 0) << "no stop was in flight";
  EXPECT_GT(all.preemptedInFlight, 0)
      << "no request was preempted with a sample pending";
  EXPECT_GT(all.copies, 0) << "no fork copied a partial page";
  EXPECT_GT(all.aborted.size(), 0u);
  EXPECT_GT(all.totals.preemptions, 0);
  EXPECT_GT(all.totals.cachedTokens, 0) << "no prefix was reused";
}

// Aborts at random points, between a step and the commit of the one
// before it among them: outputs stay prefixes of what each sequence
// generates alone, and nothing leaks.
TEST(Overlap, RandomAbortsLeaveNothingBehind) {
  int64_t inBothSteps = 0, atRandom = 0;
  for (uint32_t seed : {5u, 6u, 7u, 8u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Workload w = makeWorkload(seed, /*layers=*/2);
    ServeOptions options;
    options.overlap = true;
    options.randomAborts = true;
    options.seed = seed;
    Served served = serve(w, options);
    expectExpectedOutputs(w, served);
    inBothSteps += served.abortedInBothSteps;
    atRandom += int64_t(served.cutShort.size());
  }
  EXPECT_GT(atRandom, 0);
  EXPECT_GT(inBothSteps, 0) << "no request was aborted in two steps";
}

// The test can fail: an engine that feeds a decode its placeholder instead
// of the sample it names generates other tokens.
TEST(Overlap, IgnoringTokenFromSampleChangesTheOutputs) {
  Workload w = makeWorkload(1, /*layers=*/2);
  ServeOptions options;
  options.overlap = true;
  options.fillPendingTokens = false;
  Served served = serve(w, options);
  EXPECT_GT(countDifferingOutputs(w, served), 0u)
      << "the placeholders went unnoticed";
}

// A host tier under the cache of a pool too small for the workload: what
// eviction takes is offloaded and loaded back at admission, and every
// sequence still generates what it generates alone, synchronous and
// overlapped, with the engine's own caches (which apply the steps'
// pageTransfers) and the pool's (which the tier moved); nothing leaks,
// host pages included; and loading back computes less than no tier.
TEST(Overlap, AHostTierLoadsBackWhatThePoolHadNoRoomFor) {
  int64_t loaded = 0, loads = 0, offloads = 0;
  int64_t computedWithTier = 0, computedWithout = 0;
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    Workload w = makeWorkload(seed, /*layers=*/2 + seed % 2);
    for (bool ownCaches : {false, true})
      for (bool overlap : {false, true}) {
        SCOPED_TRACE("seed " + std::to_string(seed) +
                     (ownCaches ? ", own caches" : ", the pool's caches") +
                     (overlap ? ", overlapped" : ", synchronous"));
        ServeOptions options;
        options.ownCaches = ownCaches;
        options.overlap = overlap;
        options.seed = seed;
        Served without = serve(w, options);
        options.hostPages = 64;
        Served with = serve(w, options);
        expectExpectedOutputs(w, with);
        EXPECT_EQ(with.outputs, without.outputs);
        loaded += with.totals.hostLoadedTokens;
        loads += with.loads;
        offloads += with.offloads;
        EXPECT_EQ(without.loads + without.offloads, 0);
        EXPECT_EQ(without.totals.hostLoadedTokens, 0);
        computedWithTier +=
            with.totals.computedPrefillTokens + with.totals.recomputedTokens;
        computedWithout += without.totals.computedPrefillTokens +
                           without.totals.recomputedTokens;
      }
  }
  EXPECT_GT(loaded, 0) << "nothing was loaded back from the host";
  EXPECT_EQ(loaded, loads * 4) << "every page loaded is a prompt's";
  EXPECT_GT(offloads, 0);
  EXPECT_LT(computedWithTier, computedWithout);
}

// The test above can fail: an engine with caches of its own that ignores
// the pageTransfers reads pages that were never loaded.
TEST(Overlap, IgnoringThePageTransfersChangesTheOutputs) {
  size_t differ = 0;
  for (bool overlap : {false, true}) {
    Workload w = makeWorkload(1, /*layers=*/2);
    ServeOptions options;
    options.ownCaches = true;
    options.overlap = overlap;
    options.hostPages = 64;
    options.applyTransfers = false;
    differ += countDifferingOutputs(w, serve(w, options));
  }
  EXPECT_GT(differ, 0u) << "the unapplied transfers went unnoticed";
}

namespace {

/// A scheduler over an accounting pool of pages of 4 tokens, the synthetic
/// model answering.
struct Fixture : SchedulerFixture {
  explicit Fixture(int64_t pages, double newTokenRatio = 0.7)
      : SchedulerFixture(pages, configWithRatio(newTokenRatio)) {}
  static SchedulerConfig configWithRatio(double newTokenRatio) {
    SchedulerConfig config;
    config.initialNewTokenRatio = newTokenRatio;
    config.minNewTokenRatio = std::min(config.minNewTokenRatio, newTokenRatio);
    return config;
  }
  void add(RequestId id, std::vector<Token> prompt, int64_t maxTokens,
           int64_t outputLen, int32_t n = 1) {
    TracedRequest request;
    request.id = id;
    request.prompt = std::move(prompt);
    request.maxTokens = maxTokens;
    request.outputLen = outputLen;
    request.n = n;
    model.add(request);
    Status status = scheduler->add(request);
    ASSERT_TRUE(status.ok()) << status.toString();
  }
  /// The overlapped loop, the synthetic model answering, until nothing is
  /// left: the requests finished.
  std::vector<RequestId> drain() {
    std::vector<RequestId> finished;
    std::optional<StepStats> inFlight;
    for (int i = 0; i < 1000; ++i) {
      bool idle = scheduler->idle();
      if (idle && !inFlight)
        return finished;
      std::optional<StepStats> formed;
      if (!idle)
        formed = step();
      if (inFlight)
        for (RequestId id : commit(model.sample(inFlight->batch)))
          finished.push_back(id);
      inFlight = std::move(formed);
    }
    ADD_FAILURE() << "the loop did not drain";
    return finished;
  }
  /// No leaks, and no step left uncommitted.
  void expectNoLeaks() {
    SchedulerFixture::expectNoLeaks();
    EXPECT_EQ(scheduler->numUncommittedSteps(), 0u);
  }
  SyntheticModel model;
};

} // namespace

// One uncommitted step may precede a step, not two; commit takes the
// oldest's samples, and its count is checked against the oldest's
// samplers. The step formed over the uncommitted one feeds its decodes
// the pending samples, at the positions and slots after their prompts.
TEST(Overlap, AThirdStepIsRefusedAndCommitTakesTheOldest) {
  Fixture f(64);
  f.add(0, range(100, 5), 4, 4);
  f.add(1, range(200, 6), 4, 4);
  StepStats first = f.step();
  ASSERT_EQ(first.batch.samplers, (std::vector<RequestId>{0, 1}));
  f.add(2, range(300, 3), 4, 4);
  StepStats second = f.step();
  // Two decodes reading the first step's samples, then request 2's prompt.
  const EngineBatch &batch = second.batch;
  ASSERT_EQ(batch.requests, (std::vector<RequestId>{0, 1, 2}));
  EXPECT_EQ(batch.numDecodes, 2);
  EXPECT_EQ(batch.tokenFromSample, (std::vector<int32_t>{0, 1, -1, -1, -1}));
  EXPECT_EQ(batch.tokens[0], kPendingSampleToken);
  EXPECT_EQ(batch.tokens[1], kPendingSampleToken);
  EXPECT_EQ((std::vector<int32_t>(batch.positions.begin(),
                                  batch.positions.begin() + 2)),
            (std::vector<int32_t>{5, 6}));
  const EngineBatch &before = first.batch;
  // Position 5 of request 0: the slot after its prompt's last (row 4).
  EXPECT_EQ(batch.slotMapping[0], before.slotMapping[4] + 1);
  EXPECT_EQ(batch.slotMapping[1], before.slotMapping[10] + 1);
  EXPECT_EQ(batch.samplers, (std::vector<RequestId>{0, 1, 2}));

  StatusOr<StepStats> third = f.scheduler->step();
  EXPECT_EQ(third.status().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(third.status().message(),
            "two steps await their samples: commit the oldest's 2 samples "
            "before forming another step");
  EXPECT_EQ(f.scheduler->checkSampleCount(3).message(),
            "the oldest of 2 uncommitted steps has 2 samplers, got 3 "
            "samples");
  std::vector<Sample> secondSamples = f.model.sample(second.batch);
  StatusOr<std::vector<RequestId>> newest = f.scheduler->commit(secondSamples);
  EXPECT_EQ(newest.status().message(),
            "the oldest of 2 uncommitted steps has 2 samplers, got 3 "
            "samples");
  StatusOr<std::vector<RequestId>> swapped =
      f.scheduler->commit({Sample{1, 0, 7, false}, Sample{0, 0, 7, false}});
  EXPECT_EQ(swapped.status().message(),
            "sample 0 is for request 1, the step's sampler 0 is request 0");
  EXPECT_EQ(f.scheduler->numUncommittedSteps(), 2u) << "a refusal changed it";

  EXPECT_TRUE(f.commit(f.model.sample(first.batch)).empty());
  EXPECT_EQ(f.scheduler->checkSampleCount(2).message(),
            "the last step has 3 samplers, got 2 samples");
  // The first samples are committed: a step may follow the second.
  StatusOr<StepStats> fourth = f.scheduler->step();
  ASSERT_TRUE(fourth.ok()) << fourth.status().toString();
  EXPECT_TRUE(f.commit(secondSamples).empty());
  EXPECT_TRUE(f.commit(f.model.sample(fourth->batch)).empty());
  f.drain();
  f.expectNoLeaks();
}

// A request aborted while it is in two uncommitted steps: both its samples
// are ignored, its pages return, and a request of the same id queued again
// at once, admitted before the older steps' commits, gets none of them.
TEST(Overlap, AnAbortInBothStepsIgnoresBothSamples) {
  Fixture f(64);
  f.add(0, range(100, 5), 8, 8);
  f.add(1, range(200, 6), 8, 8);
  StepStats first = f.step();
  StepStats second = f.step();
  ASSERT_EQ(second.batch.samplers, (std::vector<RequestId>{0, 1}));
  ASSERT_TRUE(f.scheduler->abort(0).ok());
  EXPECT_EQ(f.scheduler->abort(0).code(), ErrorCode::NotFound);
  // Again, with a prompt of its own: admitted while both steps are
  // uncommitted, after the first is committed.
  f.add(0, range(500, 3), 8, 8);
  std::vector<Sample> firstSamples = f.model.sample(first.batch);
  EXPECT_TRUE(f.commit(firstSamples).empty());
  StepStats third = f.step();
  ASSERT_EQ(third.admitted, (std::vector<RequestId>{0}));
  std::vector<Sample> secondSamples = f.model.sample(second.batch);
  EXPECT_TRUE(f.commit(secondSamples).empty());
  for (const RunningRequest &running : f.scheduler->running())
    if (running.request.id == 0)
      EXPECT_TRUE(running.output.empty())
          << "the aborted request's samples reached its successor";
  std::vector<Sample> thirdSamples = f.model.sample(third.batch);
  EXPECT_TRUE(f.commit(thirdSamples).empty());
  for (const RunningRequest &running : f.scheduler->running())
    if (running.request.id == 0)
      EXPECT_EQ(running.output,
                (std::vector<Token>{thirdSamples.back().token}));
  std::vector<RequestId> finished = f.drain();
  std::sort(finished.begin(), finished.end());
  EXPECT_EQ(finished, (std::vector<RequestId>{0, 1}));
  f.expectNoLeaks();
}

// A pending sample that says stop finishes its request at its commit; the
// step formed meanwhile fed it once more (wasted), and that sample is
// ignored. Only KV of committed steps enters the cache.
TEST(Overlap, AStopInFlightWastesOneRow) {
  Fixture f(64);
  f.add(0, range(100, 8), 8, /*outputLen=*/1);
  StepStats first = f.step();
  StepStats second = f.step();
  ASSERT_EQ(second.batch.samplers, (std::vector<RequestId>{0}));
  EXPECT_EQ(f.commit(f.model.sample(first.batch)), (std::vector<RequestId>{0}));
  EXPECT_TRUE(f.scheduler->idle());
  EXPECT_TRUE(f.commit(f.model.sample(second.batch)).empty());
  f.expectNoLeaks();
  // The prompt's 2 whole pages: not the wasted row's token.
  EXPECT_EQ(f.cache.totalSize(), 8);
}

// A request whose pending sample brings it to max_tokens is not fed
// again.
TEST(Overlap, APendingSampleAtMaxTokensIsNotScheduled) {
  for (int64_t maxTokens : {1, 2}) {
    SCOPED_TRACE("max_tokens " + std::to_string(maxTokens));
    Fixture f(64);
    f.add(0, range(100, 5), maxTokens, /*outputLen=*/10);
    std::optional<StepStats> inFlight = f.step();
    std::vector<RequestId> finished;
    for (int i = 0; i < 5 && inFlight; ++i) {
      StepStats next = f.step();
      EXPECT_EQ(next.batch.samplers.size(), i + 1 < maxTokens ? 1u : 0u)
          << "step " << i + 2 << " fed a request at its max_tokens";
      finished = f.commit(f.model.sample(inFlight->batch));
      if (!finished.empty()) {
        EXPECT_TRUE(f.commit(f.model.sample(next.batch)).empty());
        break;
      }
      inFlight = std::move(next);
    }
    EXPECT_EQ(finished, (std::vector<RequestId>{0}));
    EXPECT_EQ(f.model.sampled(0), maxTokens);
    f.expectNoLeaks();
  }
}

// A prompt of n > 1 completed in an uncommitted step forks only at its
// commit: the step formed meanwhile leaves it out; the one after feeds
// every branch its own token, with the fork's copies.
TEST(Overlap, APromptOfSeveralSamplesForksAtItsCommit) {
  Fixture f(64);
  f.add(0, range(100, 6), 4, 4, /*n=*/3);
  StepStats first = f.step();
  ASSERT_EQ(first.batch.samplerBranches, (std::vector<int32_t>{0, 1, 2}));
  StepStats second = f.step();
  EXPECT_TRUE(second.batch.requests.empty()) << "a branch ran before its fork";
  std::vector<Sample> samples = f.model.sample(first.batch);
  EXPECT_TRUE(f.commit(samples).empty());
  StepStats third = f.step();
  const EngineBatch &batch = third.batch;
  ASSERT_EQ(batch.branches.size(), 3u);
  EXPECT_EQ(batch.pageCopies.size(), 2u); // the partial prompt page, twice
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(batch.tokenFromSample[r], -1);
    EXPECT_EQ(batch.positions[r], 6);
    EXPECT_EQ(batch.tokens[r], samples[size_t(batch.branches[r])].token);
  }
  EXPECT_TRUE(f.commit(f.model.sample(second.batch)).empty());
  EXPECT_TRUE(f.commit(f.model.sample(third.batch)).empty());
  EXPECT_EQ(f.drain(), (std::vector<RequestId>{0}));
  for (int32_t branch = 0; branch < 3; ++branch)
    EXPECT_EQ(f.model.sampled(0, branch), 4);
  f.expectNoLeaks();
}

// A request preempted while the step that samples it is uncommitted gives
// its pages up at once, and rejoins the queue with that sample at its
// commit: it continues from it, losing no token and sampling none twice.
TEST(Overlap, APreemptedRequestKeepsItsPendingSample) {
  // 4 pages and no output reserved: two prompts of 2 pages each fill the
  // pool, and their first decodes find none (their prompts enter the cache
  // only at the commit).
  Fixture f(4, /*newTokenRatio=*/0);
  f.add(0, range(100, 8), 3, 3);
  f.add(1, range(200, 8), 3, 3);
  StepStats first = f.step();
  ASSERT_EQ(first.batch.samplers, (std::vector<RequestId>{0, 1}));
  StepStats second = f.step();
  EXPECT_EQ(second.preempted, (std::vector<RequestId>{1}));
  EXPECT_EQ(second.batch.requests, (std::vector<RequestId>{0}));
  EXPECT_FALSE(f.scheduler->idle());
  EXPECT_EQ(f.scheduler->numWaiting(), 1u);
  std::vector<Sample> samples = f.model.sample(first.batch);
  EXPECT_TRUE(f.commit(samples).empty());
  EXPECT_EQ(f.scheduler->numWaiting(), 1u);
  // Its continuation is its prompt and the sample: admitted again, it has
  // that sample as output.
  std::optional<StepStats> inFlight = second;
  bool seen = false;
  for (int i = 0; i < 50 && !seen; ++i) {
    StepStats next = f.step();
    f.commit(f.model.sample(inFlight->batch));
    inFlight = std::move(next);
    for (const RunningRequest &running : f.scheduler->running())
      if (running.request.id == 1) {
        seen = true;
        ASSERT_FALSE(running.output.empty());
        EXPECT_EQ(running.output.front(), samples[1].token);
      }
  }
  EXPECT_TRUE(seen) << "the preempted request never ran again";
  f.commit(f.model.sample(inFlight->batch));
  std::vector<RequestId> finished = f.drain();
  EXPECT_EQ(f.model.sampled(1), 3) << "a token was sampled twice or lost";
  EXPECT_EQ(f.model.sampled(0), 3);
  EXPECT_EQ(f.scheduler->totals().finished, 2);
  f.expectNoLeaks();
}

// A prompt of n > 1 completed by an uncommitted step, preempted before its
// commit: each branch rejoins the queue with its own sample, and every
// branch finishes with all its tokens.
TEST(Overlap, APreemptedPromptOfSeveralSamplesKeepsEverySample) {
  // 5 pages: request 0's prompt takes 2, request 1's 2 and a page for its
  // fork's copy; request 0's first decode finds none.
  Fixture f(5, /*newTokenRatio=*/0);
  f.add(0, range(100, 8), 3, 3);
  f.add(1, range(200, 6), 3, 3, /*n=*/2);
  StepStats first = f.step();
  ASSERT_EQ(first.batch.samplers, (std::vector<RequestId>{0, 1, 1}));
  StepStats second = f.step();
  EXPECT_EQ(second.preempted, (std::vector<RequestId>{1}));
  EXPECT_EQ(second.batch.requests, (std::vector<RequestId>{0}));
  std::vector<Sample> samples = f.model.sample(first.batch);
  EXPECT_TRUE(f.commit(samples).empty());
  EXPECT_EQ(f.scheduler->numWaiting(), 2u) << "one waiter per branch";
  f.commit(f.model.sample(second.batch));
  std::vector<RequestId> finished = f.drain();
  std::sort(finished.begin(), finished.end());
  EXPECT_EQ(finished, (std::vector<RequestId>{0, 1}));
  for (int32_t branch = 0; branch < 2; ++branch)
    EXPECT_EQ(f.model.sampled(1, branch), 3)
        << "branch " << branch << " lost or repeated a token";
  f.expectNoLeaks();
}
