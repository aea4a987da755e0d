//===- SpeculativeTest.cpp - drafts fed and verified in the step ----------===//
//
// Speculative decoding (Scheduler.h): the engine proposes a decoding
// sequence's next tokens, the next step feeds them after its last sample
// with every row a sampler, and the commit takes the accepted ones and
// drops the rest's KV and pages. The bar: every sequence's output is what
// plain decoding gives it, and what it generates alone. The stand-in
// transformer (StandInEngine.h) samples each row from what it reads
// through the step's page table, so a draft's KV kept past its rejection,
// or a page released too early, changes every token after it. A "draft
// model" proposes each sequence's true next tokens, some corrupted at
// random, and the engine verifies greedily (markRejectedDrafts).
//
//===----------------------------------------------------------------------===//

#include "ServingHarness.h"
#include "StandInEngine.h"
#include "TestPools.h"
#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

using namespace attnc;
using namespace attnc::standin;

namespace {

/// 20 requests, n of 1..2, max_tokens 6..24, some aborted part way, as
/// soon as they have a verification in flight.
Workload makeWorkload(uint32_t seed) {
  WorkloadShape shape;
  shape.requests = 20;
  shape.ownTokensMax = 10;
  shape.maxTokensMin = 6;
  shape.maxTokensSpan = 19;
  shape.samplesMax = 2;
  shape.followUps = false;
  shape.arrivingAtOnce = 6;
  shape.stepsBetweenArrivals = 1;
  shape.abortOneIn = 5;
  shape.abortAfterMin = 2;
  shape.abortAfterSpan = 5;
  shape.expectAbortsExactly = false;
  return standin::makeWorkload(seed, /*layers=*/2, shape);
}

struct ServeOptions {
  /// Drafts proposed per sequence after each commit (0: plain decoding).
  int64_t drafts = 0;
  /// The chance that each draft is corrupted (a random token).
  double corruption = 0;
  bool overlap = false;
  bool ownCaches = false;
  int64_t pages = 24;
  uint32_t seed = 1;
  /// Whether the engine drops what the verification rejected, as it must,
  /// or takes every row's sample.
  bool verify = true;
};

/// A broken verification: takes every draft as the target's token, and
/// the last row's sample after them.
void trustDrafts(const EngineBatch &batch, std::vector<Sample> &samples) {
  size_t k = 0;
  for (size_t r = 0; r < batch.requests.size(); ++r) {
    int32_t end = batch.qoIndptr[r + 1], drafts = batch.numDrafts[r];
    while (k < samples.size() && batch.sampleRows[k] < end - 1 - drafts)
      ++k;
    for (int32_t i = 0; i < drafts && k < samples.size(); ++i, ++k) {
      samples[k].token = batch.tokens[size_t(batch.sampleRows[k] + 1)];
      samples[k].stop = isStop(samples[k].token);
    }
  }
}

struct Served : ServedOutputs {
  int64_t draftsFed = 0, draftsAccepted = 0, skippedVerifying = 0,
          preemptedVerifying = 0;
};

Served serve(const Workload &w, const ServeOptions &options) {
  Served served;
  std::unique_ptr<PagedKVPool> pool =
      makeStandInPool(options.pages, w.layers, !options.ownCaches);
  if (!pool)
    return served;
  RadixCache cache(*pool);
  SchedulerConfig config = preemptingConfig(/*tokenBudget=*/12);
  config.speculativeTokens = options.drafts;
  Scheduler scheduler(config, *pool, cache);
  std::unique_ptr<Caches> caches =
      makeCaches(options.ownCaches, *pool, w.layers, options.pages);
  std::mt19937 rng(options.seed);
  std::map<RequestId, const Arrival *> byId = arrivalsById(w);
  EngineLoop loop;
  loop.overlap = options.overlap;

  loop.run = [&](Launched &launched) {
    const EngineBatch &batch = launched.stats.batch;
    if (options.ownCaches)
      caches->copy(batch.pageCopies);
    launched.samples = sampleTop(batch, forward(*caches, batch, w.layers));
    if (options.verify)
      markRejectedDrafts(batch, launched.samples);
    else
      trustDrafts(batch, launched.samples);
    for (int32_t drafts : batch.numDrafts)
      served.draftsFed += drafts;
  };
  // The engine's record: accepted samples, none after a stop it reported
  // or of a request it aborted.
  std::set<RequestBranch> stopped;
  auto accept = [&](const std::vector<Sample> &samples) {
    for (size_t k = 0; k < samples.size(); ++k) {
      const Sample &sample = samples[k];
      RequestBranch id{sample.request, sample.branch};
      bool verifiesAnother =
          k > 0 && !sample.rejected &&
          RequestBranch(samples[k - 1].request, samples[k - 1].branch) == id;
      served.draftsAccepted += verifiesAnother;
      if (sample.rejected || served.aborted.count(sample.request) ||
          stopped.count(id))
        continue;
      std::vector<Token> &output = served.outputs[id];
      EXPECT_LT(int64_t(output.size()),
                byId.at(sample.request)->request.maxTokens)
          << "request " << sample.request << " branch " << sample.branch
          << " was sampled past its max_tokens";
      output.push_back(sample.token);
      if (sample.stop)
        stopped.insert(id);
    }
  };
  // The draft model: each sequence's true next tokens after what it has
  // committed, each corrupted with the chance the options give.
  auto propose = [&] {
    if (options.drafts == 0)
      return;
    std::uniform_real_distribution<double> chance(0, 1);
    for (const RunningRequest &running : scheduler.running()) {
      if (!running.decoding())
        continue;
      const std::vector<Token> &truth =
          w.expected.at({running.request.id, running.branch});
      std::vector<Token> drafts;
      for (size_t i = running.output.size();
           int64_t(drafts.size()) < options.drafts; ++i)
        drafts.push_back(i < truth.size() && chance(rng) >= options.corruption
                             ? truth[i]
                             : Token(1 + rng() % 50000));
      Status status =
          scheduler.propose(running.request.id, running.branch, drafts);
      EXPECT_TRUE(status.ok()) << status.toString();
    }
  };
  loop.commit = [&](Launched &launched) {
    StatusOr<std::vector<RequestId>> finished =
        scheduler.commit(launched.samples);
    ASSERT_TRUE(finished.ok()) << finished.status().toString();
    accept(launched.samples);
    served.finished.insert(finished->begin(), finished->end());
    expectSchedulerHoldsTheOutputs(scheduler, served);
    propose();
  };
  // Aborts due, of requests with a verification in flight (mid-
  // speculation) or, with no drafts at all, at once.
  auto abortDue = [&] {
    for (const RunningRequest &running : scheduler.running()) {
      const Arrival &a = *byId.at(running.request.id);
      bool midSpeculation = !running.verifying.empty() || options.drafts == 0;
      if (a.abortAfter > 0 && midSpeculation &&
          int64_t(running.output.size()) >= a.abortAfter) {
        RequestId id = running.request.id; // abort moves `running`
        ASSERT_TRUE(scheduler.abort(id).ok());
        served.aborted.insert(id);
        served.cutShort.insert(id);
        return;
      }
    }
  };

  // A sequence whose verification is uncommitted is fed nothing.
  loop.formStep = [&] {
    std::vector<RequestBranch> verifying;
    for (const RunningRequest &running : scheduler.running())
      if (!running.verifying.empty())
        verifying.push_back({running.request.id, running.branch});
    StatusOr<StepStats> stats = scheduler.step();
    if (!stats.ok())
      return stats;
    const EngineBatch &batch = stats->batch;
    for (RequestId id : stats->preempted)
      for (RequestBranch v : verifying)
        served.preemptedVerifying += v.first == id;
    for (RequestBranch id : verifying) {
      for (size_t r = 0; r < batch.requests.size(); ++r)
        EXPECT_NE(RequestBranch(batch.requests[r], batch.branches[r]), id)
            << "fed while its verification is uncommitted";
      ++served.skippedVerifying;
    }
    abortDue();
    return stats;
  };
  loop.feedPending = [&](EngineBatch &batch, size_t row, const Sample &sample) {
    EXPECT_FALSE(sample.rejected)
        << "row " << row << " reads a rejected sample";
    batch.tokens[row] = sample.token;
  };
  loop.serve(w, scheduler, rng, served);
  expectServedCleanly(w, served, scheduler, *pool, cache);
  served.totals = scheduler.totals();
  return served;
}

} // namespace

// The bar: with drafts good, poor or useless, synchronous and overlapped,
// over the engine's own caches and the pool's, every sequence generates
// what plain decoding gives it and what it generates alone, through prefix
// sharing, forks, stops, max_tokens, preemptions and aborts mid-
// speculation; nothing leaks; good drafts take fewer steps.
TEST(Speculative, GivesThePlainDecodingOutputs) {
  int64_t fed = 0, accepted = 0, rejected = 0, preemptions = 0, cached = 0,
          skipped = 0, preemptedVerifying = 0, aborted = 0;
  for (uint32_t seed : {1u, 2u, 3u}) {
    Workload w = makeWorkload(seed);
    for (bool overlap : {false, true})
      for (bool ownCaches : {false, true}) {
        ServeOptions options;
        options.seed = seed;
        options.overlap = overlap;
        options.ownCaches = ownCaches;
        Served plain = serve(w, options);
        expectExpectedOutputs(w, plain);
        for (double corruption : {0.0, 0.3, 1.0}) {
          SCOPED_TRACE("seed " + std::to_string(seed) +
                       (overlap ? ", overlapped" : ", synchronous") +
                       (ownCaches ? ", own caches" : ", the pool's caches") +
                       ", corruption " + std::to_string(corruption));
          options.drafts = 4;
          options.corruption = corruption;
          Served speculative = serve(w, options);
          expectExpectedOutputs(w, speculative);
          for (const auto &[id, output] : plain.outputs)
            if (!plain.aborted.count(id.first) &&
                !speculative.aborted.count(id.first))
              EXPECT_EQ(speculative.outputs[id], output)
                  << "request " << id.first << " branch " << id.second;
          EXPECT_GT(speculative.draftsFed, 0);
          // Overlapped, a speculating sequence runs every other step.
          if (corruption == 0)
            EXPECT_LT(speculative.steps,
                      overlap ? plain.steps : plain.steps * 4 / 5)
                << "good drafts saved too few steps";
          if (corruption == 1.0)
            EXPECT_EQ(speculative.draftsAccepted, 0);
          fed += speculative.draftsFed;
          accepted += speculative.draftsAccepted;
          rejected += speculative.draftsFed - speculative.draftsAccepted;
          preemptions += speculative.totals.preemptions;
          cached += speculative.totals.cachedTokens;
          skipped += speculative.skippedVerifying;
          preemptedVerifying += speculative.preemptedVerifying;
          aborted += int64_t(speculative.aborted.size());
        }
      }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(preemptions, 0) << "nothing was preempted";
  EXPECT_GT(cached, 0) << "no prefix was reused";
  EXPECT_GT(skipped, 0) << "no step was formed over a verification";
  EXPECT_GT(preemptedVerifying, 0)
      << "no sequence was preempted with its verification in flight";
  EXPECT_GT(aborted, 0) << "nothing was aborted mid-speculation";
}

// The test can fail: an engine that takes every draft as the target's
// token generates other tokens.
TEST(Speculative, TakingRejectedSamplesChangesTheOutputs) {
  Workload w = makeWorkload(1);
  ServeOptions options;
  options.drafts = 4;
  options.corruption = 0.3;
  options.verify = false;
  Served served = serve(w, options);
  EXPECT_GT(countDifferingOutputs(w, served), 0u)
      << "the unverified drafts went unnoticed";
  EXPECT_GT(served.draftsFed, 0);
}

namespace {

/// A scheduler over an accounting pool of pages of 4 tokens, speculating
/// up to 8 drafts.
struct Fixture : SchedulerFixture {
  explicit Fixture(int64_t pages, int64_t tokenBudget = 8192)
      : SchedulerFixture(pages, speculating(tokenBudget)) {}
  static SchedulerConfig speculating(int64_t tokenBudget) {
    SchedulerConfig config;
    config.speculativeTokens = 8;
    config.tokenBudget = tokenBudget;
    return config;
  }
  void add(RequestId id, std::vector<Token> prompt, int64_t maxTokens) {
    Request request;
    request.id = id;
    request.prompt = std::move(prompt);
    request.maxTokens = maxTokens;
    Status status = scheduler->add(request);
    ASSERT_TRUE(status.ok()) << status.toString();
  }
  /// Samples of `batch` whose tokens are `tokens`, in sampler order, those
  /// in [rejectFrom, rejectTo) rejected.
  static std::vector<Sample> samples(const EngineBatch &batch,
                                     const std::vector<Token> &tokens,
                                     size_t rejectFrom = SIZE_MAX,
                                     size_t rejectTo = SIZE_MAX) {
    std::vector<Sample> out;
    for (size_t k = 0; k < batch.samplers.size(); ++k)
      out.push_back({batch.samplers[k], batch.samplerBranches[k], tokens[k],
                     false, k >= rejectFrom && k < rejectTo});
    return out;
  }
  const RunningRequest &running(RequestId id) const {
    for (const RunningRequest &r : scheduler->running())
      if (r.request.id == id)
        return r;
    ADD_FAILURE() << "request " << id << " is not running";
    return scheduler->running().front();
  }
};

} // namespace

// A verification step feeds the last sample and the drafts at consecutive
// positions, with pages for all of them, every row a sampler; its commit
// keeps the accepted tokens and returns the pages only rejected drafts
// wrote; nothing rejected enters the cache.
TEST(Speculative, RejectedDraftsReturnTheirPages) {
  Fixture f(16);
  f.add(0, range(100, 4), 20);
  StepStats prefill = f.step();
  f.commit(Fixture::samples(prefill.batch, {500}));
  // The prompt's page is the cache's; position 4 (the sample) goes next.
  EXPECT_EQ(f.pool->numFreePages(), 15);
  ASSERT_TRUE(f.scheduler->propose(0, 0, range(501, 8)).ok());
  StepStats verify = f.step();
  const EngineBatch &batch = verify.batch;
  EXPECT_EQ(batch.numDecodes, 1);
  EXPECT_EQ(batch.numDrafts, (std::vector<int32_t>{8}));
  EXPECT_EQ(batch.tokens,
            (std::vector<Token>{500, 501, 502, 503, 504, 505, 506, 507, 508}));
  EXPECT_EQ(batch.positions,
            (std::vector<int32_t>{4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(batch.sampleRows,
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(batch.samplers.size(), 9u);
  EXPECT_EQ(verify.decodeTokens, 9);
  // 13 keys: the prompt's page and 3 more.
  EXPECT_EQ(batch.pageTable.indptr.back(), 4);
  EXPECT_EQ(f.pool->numFreePages(), 12);
  // The target agrees with drafts 501 and 502 and says 777 after them.
  std::vector<Token> tokens = {501, 502, 777, 1, 2, 3, 4, 5, 6};
  f.commit(Fixture::samples(batch, tokens, /*rejectFrom=*/3));
  EXPECT_EQ(f.running(0).output, (std::vector<Token>{500, 501, 502, 777}));
  EXPECT_EQ(f.running(0).fed, 7);
  // Keys 0..6 computed: 2 pages kept, the 2 past them returned.
  EXPECT_EQ(f.pool->numFreePages(), 14);
  EXPECT_TRUE(f.pool->checkInvariants().ok());
  // The next step feeds 777 at position 7, where draft 503 stood.
  StepStats next = f.step();
  EXPECT_EQ(next.batch.tokens, (std::vector<Token>{777}));
  EXPECT_EQ(next.batch.positions, (std::vector<int32_t>{7}));
  EXPECT_EQ(next.batch.numDrafts, (std::vector<int32_t>{0}));
  f.commit(Fixture::samples(next.batch, {778}));
  ASSERT_TRUE(f.scheduler->abort(0).ok());
  f.expectNoLeaks();
  // Only the prompt's page was cached: no draft entered.
  EXPECT_EQ(f.cache.totalSize(), 4);
}

// A verification accepting every draft gives d + 1 tokens; a stop among the
// accepted ones ends the request there; drafts that could only overshoot
// max_tokens are not fed; the cache gets the accepted tokens' whole pages.
TEST(Speculative, StopsAndMaxTokensApplyWithinTheAcceptedTokens) {
  Fixture f(16);
  f.add(0, range(100, 4), 20);
  StepStats prefill = f.step();
  f.commit(Fixture::samples(prefill.batch, {500}));
  ASSERT_TRUE(f.scheduler->propose(0, 0, range(501, 3)).ok());
  StepStats all = f.step();
  f.commit(Fixture::samples(all.batch, {501, 502, 503, 504}));
  EXPECT_EQ(f.running(0).output, range(500, 5));
  ASSERT_TRUE(f.scheduler->propose(0, 0, range(505, 4)).ok());
  StepStats stopping = f.step();
  std::vector<Sample> samples =
      Fixture::samples(stopping.batch, {505, 506, 9, 9, 9}, 3);
  samples[1].stop = true; // 506 ends it: 507 and on are dropped
  EXPECT_EQ(f.commit(samples), (std::vector<RequestId>{0}));
  f.expectNoLeaks();
  // Prompt and output 500..506 (11 tokens), the last never fed: 2 pages.
  EXPECT_EQ(f.cache.totalSize(), 8);

  f.add(1, range(200, 4), 4);
  StepStats second = f.step();
  f.commit(Fixture::samples(second.batch, {600}));
  ASSERT_TRUE(f.scheduler->propose(1, 0, range(601, 8)).ok());
  StepStats clipped = f.step();
  // 3 tokens left: 2 drafts and the token after them.
  EXPECT_EQ(clipped.batch.numDrafts, (std::vector<int32_t>{2}));
  EXPECT_EQ(f.commit(Fixture::samples(clipped.batch, {601, 602, 603})),
            (std::vector<RequestId>{1}));
  f.expectNoLeaks();
}

// The token budget counts the drafts and cuts them, never the decode.
TEST(Speculative, TheTokenBudgetCutsDrafts) {
  Fixture f(32, /*tokenBudget=*/8);
  f.add(0, range(100, 4), 20);
  f.add(1, range(200, 4), 20);
  StepStats prefill = f.step();
  f.commit(Fixture::samples(prefill.batch, {500, 600}));
  ASSERT_TRUE(f.scheduler->propose(0, 0, range(501, 8)).ok());
  ASSERT_TRUE(f.scheduler->propose(1, 0, range(601, 8)).ok());
  StepStats step = f.step();
  // Two decodes leave 6 tokens: all to the first in batch order; the
  // second's drafts are dropped (the engine proposes again).
  EXPECT_EQ(step.batch.numDrafts, (std::vector<int32_t>{6, 0}));
  EXPECT_EQ(step.decodeTokens, 8);
  EXPECT_TRUE(f.running(1).drafts.empty());
  f.commit(Fixture::samples(step.batch, {501, 502, 9, 9, 9, 9, 9, 601}, 2, 7));
  EXPECT_EQ(f.running(0).output, (std::vector<Token>{500, 501, 502}));
  ASSERT_TRUE(f.scheduler->abort(0).ok());
  ASSERT_TRUE(f.scheduler->abort(1).ok());
  f.expectNoLeaks();
}

// Overlapped, a sequence with drafts is not fed while a sample of it is
// pending, nor fed at all while its verification is; drafts proposed while
// a sample is pending keep only as far as it agrees with them.
TEST(Speculative, OverlappedStepsWaitForVerifications) {
  Fixture f(32);
  f.add(0, range(100, 4), 20);
  StepStats prefill = f.step();
  f.commit(Fixture::samples(prefill.batch, {500}));
  StepStats plain = f.step(); // feeds 500, its sample pending
  ASSERT_TRUE(f.scheduler->propose(0, 0, {501, 502, 503}).ok());
  StepStats skipped = f.step();
  EXPECT_TRUE(skipped.batch.requests.empty())
      << "drafts were fed after a pending sample";
  f.commit(Fixture::samples(plain.batch, {501}));
  EXPECT_EQ(f.running(0).drafts, (std::vector<Token>{502, 503}));
  f.commit({});
  StepStats verify = f.step();
  EXPECT_EQ(verify.batch.numDrafts, (std::vector<int32_t>{2}));
  StepStats overVerify = f.step();
  EXPECT_TRUE(overVerify.batch.requests.empty())
      << "a sequence was fed while its verification is uncommitted";
  // Proposed during the verification: only as far as its tokens agree.
  ASSERT_TRUE(f.scheduler->propose(0, 0, {502, 9, 9}).ok());
  f.commit(Fixture::samples(verify.batch, {502, 700, 0}, 2));
  EXPECT_TRUE(f.running(0).drafts.empty());
  EXPECT_EQ(f.running(0).output, (std::vector<Token>{500, 501, 502, 700}));
  f.commit({});
  ASSERT_TRUE(f.scheduler->abort(0).ok());
  f.expectNoLeaks();
}

// Every refusal of propose and of a malformed verdict, by message; a
// refused commit changes nothing.
TEST(Speculative, RefusesWhatItCannotVerify) {
  Fixture f(32);
  f.add(0, range(100, 4), 20);
  f.add(1, range(200, 4), 20);
  auto message = [&](RequestId id, int32_t branch, std::vector<Token> drafts) {
    return f.scheduler->propose(id, branch, std::move(drafts)).toString();
  };
  EXPECT_EQ(message(0, 0, {1}),
            "not found: request 0 is not running (queued, preempted, finished, "
            "aborted or never added)");
  StepStats prefill = f.step();
  EXPECT_EQ(message(0, 0, {1}),
            "invalid argument: request 0 computes its prompt still: drafts "
            "follow its first committed sample");
  f.commit(Fixture::samples(prefill.batch, {500, 600}));
  EXPECT_EQ(message(7, 0, {1}),
            "not found: request 7 is not running (queued, preempted, finished, "
            "aborted or never added)");
  EXPECT_EQ(message(0, 1, {1}),
            "not found: request 0 branch 1 is not running (queued, preempted, "
            "finished, aborted or never added)");
  EXPECT_EQ(message(0, 0, range(1, 9)),
            "invalid argument: request 0 is given 9 drafts, a step verifies at "
            "most 8 (speculativeTokens)");
  EXPECT_EQ(message(0, 0, {1, -1}),
            "invalid argument: request 0's draft 1 is token -1: tokens are not "
            "negative");
  EXPECT_TRUE(f.running(0).drafts.empty()) << "a refusal kept drafts";

  ASSERT_TRUE(f.scheduler->propose(0, 0, {501, 502}).ok());
  StepStats step = f.step();
  ASSERT_EQ(step.batch.samplers, (std::vector<RequestId>{0, 0, 0, 1}));
  auto verdict = [&](std::vector<Token> tokens, std::vector<bool> rejected) {
    std::vector<Sample> samples = Fixture::samples(step.batch, tokens);
    for (size_t k = 0; k < samples.size(); ++k)
      samples[k].rejected = rejected[k];
    return f.scheduler->commit(samples).status().toString();
  };
  EXPECT_EQ(verdict({501, 502, 503, 601}, {false, false, false, true}),
            "invalid argument: sample 3 rejects the token of request 1, whose "
            "row verifies no draft");
  EXPECT_EQ(verdict({501, 502, 503, 601}, {true, true, true, false}),
            "invalid argument: sample 0 rejects the first token of request 0's "
            "verification: the target's token after its last sample is "
            "always taken");
  EXPECT_EQ(verdict({501, 502, 503, 601}, {false, true, false, false}),
            "invalid argument: sample 2 accepts a token of request 0 after "
            "sample 1 rejected one: the accepted samples are the first of a "
            "verification");
  EXPECT_EQ(verdict({501, 9, 503, 601}, {false, false, false, false}),
            "invalid argument: sample 1 accepts token 9 of request 0 where the "
            "step fed draft 502, and sample 2 is accepted after it: only the "
            "draft itself may be followed by another accepted token");
  EXPECT_EQ(f.scheduler->numUncommittedSteps(), 1u) << "a refusal committed";
  EXPECT_EQ(f.pool->numFreePages(), 32 - 4) << "a refusal released pages";
  f.commit(Fixture::samples(step.batch, {501, 9, 9, 601}, 2, 3));
  EXPECT_EQ(f.running(0).output, (std::vector<Token>{500, 501, 9}));
  EXPECT_EQ(f.running(1).output, (std::vector<Token>{600, 601}));

  // Off: no drafts at all.
  std::unique_ptr<PagedKVPool> pool = makeAccountingPool(8, 4);
  RadixCache cache(*pool);
  Scheduler off(SchedulerConfig(), *pool, cache);
  Request request;
  request.id = 3;
  request.prompt = range(300, 4);
  request.maxTokens = 4;
  ASSERT_TRUE(off.add(request).ok());
  StatusOr<StepStats> first = off.step();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(off.commit({Sample{3, 0, 5, false}}).ok());
  EXPECT_EQ(off.propose(3, 0, {1}).toString(),
            "invalid argument: request 3 is given 1 drafts, a step verifies at "
            "most 0 (speculativeTokens)");
  EXPECT_TRUE(off.propose(3, 0, {}).ok()) << "no drafts are always fine";
}
