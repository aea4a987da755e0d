//===- ServingHarness.h - randomized serving over the stand-in -*- C++ -*-===//
//
// What the tests that serve randomized workloads through a scheduler and
// the stand-in engine (StandInEngine.h) share: the workload generator and
// what each sequence must generate, the engine's record of what it served,
// its loop (synchronous or overlapped, with hooks for what each test checks
// or breaks), the end-of-run leak checks, and a small scheduler fixture
// over an accounting pool for the hand-driven tests.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_UNIT_SERVINGHARNESS_H
#define ATTNC_TEST_UNIT_SERVINGHARNESS_H

#include "StandInEngine.h"
#include "TestPools.h"
#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

namespace attnc::standin {

/// A sequence: a request and one of its n samples.
using RequestBranch = std::pair<RequestId, int32_t>;

struct Arrival {
  Request request;
  /// The step it arrives before.
  int64_t step = 0;
  /// After this many output tokens of its branch 0, the engine aborts it
  /// (0: never).
  int64_t abortAfter = 0;
};

struct Workload {
  std::vector<Arrival> arrivals;
  /// Every sequence's output as the loop must give it.
  std::map<RequestBranch, std::vector<Token>> expected;
  int64_t layers = 2;
};

/// The ranges a workload's requests are drawn from. Each test keeps the
/// shape it was written with: a shape is a random stream, and changing one
/// changes every workload of its seeds.
struct WorkloadShape {
  int32_t requests = 32;
  /// Private prompt tokens after the shared system prompt: 1..this.
  int32_t ownTokensMax = 14;
  int64_t maxTokensMin = 4, maxTokensSpan = 13;
  /// Samples per request: 1..this.
  int32_t samplesMax = 3;
  /// Whether a quarter of the requests follow up on an earlier request's
  /// prompt and answer (those take one sample).
  bool followUps = true;
  /// Requests arriving before step 0, and the steps between the later
  /// ones (each of those one step later at random).
  int64_t arrivingAtOnce = 8, stepsBetweenArrivals = 2;
  /// One request of a single sample in this many is aborted after
  /// abortAfterMin + [0, abortAfterSpan) tokens.
  uint32_t abortOneIn = 4;
  int64_t abortAfterMin = 1, abortAfterSpan = 6;
  /// Whether an aborted request's expected output stops where it is
  /// aborted; if not, the loop aborts it at a point of its own (after
  /// abortAfter tokens), and its output is a prefix of the expected one.
  bool expectAbortsExactly = true;
};

/// Requests behind a shared system prompt with a partial last page (a
/// quarter of them with private prompts), some following up on an earlier
/// request, priorities of -1..1 (some outrank others: preempted for a
/// higher priority's pages), some aborted part way; the rest as `shape`
/// says.
inline Workload makeWorkload(uint32_t seed, int64_t layers,
                             const WorkloadShape &shape) {
  Workload w;
  w.layers = layers;
  std::mt19937 rng(seed);
  std::vector<Token> system;
  for (Token t = 1; t <= 9; ++t)
    system.push_back(t);
  std::vector<RequestId> quotable;
  for (RequestId id = 0; id < shape.requests; ++id) {
    Arrival a;
    Request &request = a.request;
    request.id = id;
    int kind = int(rng() % 4);
    if (kind != 0)
      request.prompt = system;
    bool followUp = shape.followUps && kind == 3;
    if (followUp && !quotable.empty()) { // quotes an earlier conversation
      const Arrival &quoted =
          w.arrivals[size_t(quotable[rng() % quotable.size()])];
      request.prompt = quoted.request.prompt;
      const std::vector<Token> &answer = w.expected.at({quoted.request.id, 0});
      request.prompt.insert(request.prompt.end(), answer.begin(), answer.end());
    }
    int own = 1 + int(rng() % uint32_t(shape.ownTokensMax));
    for (int i = 0; i < own; ++i)
      request.prompt.push_back(Token(60000 + 1000 * id + i));
    request.maxTokens =
        shape.maxTokensMin + int64_t(rng() % uint64_t(shape.maxTokensSpan));
    request.n = followUp ? 1 : int32_t(1 + rng() % uint32_t(shape.samplesMax));
    if (rng() % 3 == 0)
      request.priority = int32_t(rng() % 3) - 1;
    a.step = id < shape.arrivingAtOnce
                 ? 0
                 : (id - shape.arrivingAtOnce) * shape.stepsBetweenArrivals +
                       int64_t(rng() % 2);
    if (request.n == 1 && rng() % shape.abortOneIn == 0)
      a.abortAfter =
          shape.abortAfterMin + int64_t(rng() % uint64_t(shape.abortAfterSpan));
    for (int32_t branch = 0; branch < request.n; ++branch) {
      std::vector<Token> output =
          generateAlone(request.prompt, branch, request.maxTokens, layers);
      if (shape.expectAbortsExactly && a.abortAfter > 0 &&
          a.abortAfter < int64_t(output.size()))
        output.resize(size_t(a.abortAfter));
      w.expected[{id, branch}] = output;
    }
    if (!followUp) // (a quote of a quote would outgrow the pool)
      quotable.push_back(id);
    w.arrivals.push_back(a);
  }
  return w;
}

/// What the engine served: every sequence's output, and how requests
/// ended. Each test's loop adds counters of its own.
struct ServedOutputs {
  std::map<RequestBranch, std::vector<Token>> outputs;
  std::set<RequestId> finished, aborted;
  /// Requests aborted at a point the workload does not fix (at random, or
  /// mid-speculation): their outputs are prefixes of the expected ones.
  std::set<RequestId> cutShort;
  int64_t steps = 0;
  SchedulerTotals totals;
};

/// Every sequence's output is what it generates alone (a prefix of it when
/// cut short).
inline void expectExpectedOutputs(const Workload &w,
                                  const ServedOutputs &served) {
  for (const auto &[id, expected] : w.expected) {
    auto it = served.outputs.find(id);
    std::vector<Token> output =
        it == served.outputs.end() ? std::vector<Token>() : it->second;
    if (served.cutShort.count(id.first)) {
      EXPECT_LE(output.size(), expected.size());
      output.resize(std::min(output.size(), expected.size()));
      EXPECT_TRUE(std::equal(output.begin(), output.end(), expected.begin()))
          << "request " << id.first << " branch " << id.second;
      continue;
    }
    EXPECT_EQ(output, expected)
        << "request " << id.first << " branch " << id.second;
  }
}

/// How many sequences' outputs are not the expected ones: what a test that
/// breaks the engine on purpose needs above 0.
inline size_t countDifferingOutputs(const Workload &w,
                                    const ServedOutputs &served) {
  size_t differ = 0;
  for (const auto &[id, expected] : w.expected) {
    auto it = served.outputs.find(id);
    differ += it == served.outputs.end() || it->second != expected;
  }
  return differ;
}

inline std::map<RequestId, const Arrival *> arrivalsById(const Workload &w) {
  std::map<RequestId, const Arrival *> byId;
  for (const Arrival &a : w.arrivals)
    byId[a.request.id] = &a;
  return byId;
}

/// Adds the arrivals due before `step`, from `next` on; returns the next
/// not yet due.
inline size_t addArrivals(Scheduler &scheduler, const Workload &w, size_t next,
                          int64_t step) {
  for (; next < w.arrivals.size() && w.arrivals[next].step <= step; ++next) {
    Status added = scheduler.add(w.arrivals[next].request);
    EXPECT_TRUE(added.ok()) << added.toString();
  }
  return next;
}

/// A step formed, and once run, its samples.
struct Launched {
  StepStats stats;
  std::vector<Sample> samples;
  bool ran = false;
};

/// Each sampler's token from the top layer's output of its row.
inline std::vector<Sample> sampleTop(const EngineBatch &batch,
                                     const std::vector<Row> &top) {
  std::vector<Sample> samples;
  for (size_t k = 0; k < batch.samplers.size(); ++k) {
    Token token =
        sampleToken(top[size_t(batch.sampleRows[k])], batch.samplerBranches[k]);
    samples.push_back(
        {batch.samplers[k], batch.samplerBranches[k], token, isStop(token)});
  }
  return samples;
}

/// What the scheduler holds of every running sequence is what the engine
/// has: no sample lost, none taken twice (requests of one sample).
inline void expectSchedulerHoldsTheOutputs(const Scheduler &scheduler,
                                           ServedOutputs &served) {
  for (const RunningRequest &running : scheduler.running())
    if (running.request.n == 1)
      EXPECT_EQ(
          running.output,
          served.outputs[RequestBranch(running.request.id, running.branch)])
          << "request " << running.request.id << " branch " << running.branch;
}

/// A scheduler config that reserves little room for outputs (a small pool
/// preempts), runs at most 6 requests and chunks prompts longer than
/// `tokenBudget`.
inline SchedulerConfig preemptingConfig(int64_t tokenBudget) {
  SchedulerConfig config;
  config.tokenBudget = tokenBudget;
  config.maxRunning = 6;
  config.initialNewTokenRatio = config.minNewTokenRatio = 0.1;
  return config;
}

/// The engine's caches: its own (beside an accounting pool, with a host
/// tier's `hostPages`), or the pool's.
inline std::unique_ptr<Caches> makeCaches(bool own, PagedKVPool &pool,
                                          int64_t layers, int64_t pages,
                                          int64_t hostPages = 0) {
  if (own)
    return std::make_unique<OwnCaches>(layers, pages, hostPages);
  return std::make_unique<PoolCaches>(pool);
}

/// The engine's loop: queues the arrivals as they are due, forms steps and
/// runs and commits them, synchronous (step, run, commit) or overlapped
/// (Scheduler.h's header: a step is formed while the one before it runs,
/// and committed after it). What a test checks, counts or breaks on
/// purpose it does in the hooks.
struct EngineLoop {
  bool overlap = false;
  /// Forms the next step (Scheduler::step, and what the test checks of
  /// it).
  std::function<StatusOr<StepStats>()> formStep;
  /// Runs a launched step, leaving its samples; commits them.
  std::function<void(Launched &)> run, commit;
  /// Overlapped, a step just formed over one in flight, before the latter
  /// is committed (may be left empty).
  std::function<void(const Launched &formed, const Launched &inFlight)>
      formedOverInFlight;
  /// Overlapped, a row of `batch` that reads the pending `sample`: the
  /// engine puts its token there before the step runs.
  std::function<void(EngineBatch &batch, size_t row, const Sample &sample)>
      feedPending;
  /// Whether every step formed overlapped runs as soon as it is launched;
  /// otherwise a coin decides between that and its wait.
  bool alwaysRunAtOnce = false;
  /// Arrivals queued so far.
  size_t queued = 0;

  void serve(const Workload &w, Scheduler &scheduler, std::mt19937 &rng,
             ServedOutputs &served) {
    auto launch = [&](Launched &launched) {
      run(launched);
      launched.ran = true;
    };
    std::optional<Launched> inFlight;
    for (int64_t step = 0;; ++step) {
      queued = addArrivals(scheduler, w, queued, step);
      bool drained = queued == w.arrivals.size() && scheduler.idle();
      if (drained && !inFlight)
        break;
      if (++served.steps > 3000) {
        ADD_FAILURE() << "the scheduler stalled";
        break;
      }
      std::optional<Launched> formed;
      if (!drained) {
        StatusOr<StepStats> stats = formStep();
        if (!stats.ok()) {
          ADD_FAILURE() << stats.status().toString();
          break;
        }
        formed = Launched{std::move(*stats), {}, false};
      }
      if (!overlap) {
        launch(*formed);
        commit(*formed);
        continue;
      }
      if (formed && inFlight && formedOverInFlight)
        formedOverInFlight(*formed, *inFlight);
      if (inFlight) {
        if (!inFlight->ran)
          launch(*inFlight); // waited for
        commit(*inFlight);
      }
      if (formed) {
        // The tokens of the decodes fed the samples just committed.
        EngineBatch &batch = formed->stats.batch;
        for (size_t row = 0; row < batch.tokens.size(); ++row) {
          int32_t k = batch.tokenFromSample[row];
          if (k < 0)
            continue;
          if (!inFlight || size_t(k) >= inFlight->samples.size()) {
            ADD_FAILURE() << "row " << row << " reads sample " << k
                          << ", which no step before it has";
            continue;
          }
          feedPending(batch, row, inFlight->samples[size_t(k)]);
        }
        if (rng() % 2 || alwaysRunAtOnce)
          launch(*formed); // as soon as launched
      }
      inFlight = std::move(formed);
    }
  }
};

/// With nothing queued or running, every page in use is the cache's (and
/// the tier's, if any) and nothing is locked.
inline void expectNoLeaks(const Scheduler &scheduler, const PagedKVPool &pool,
                          const RadixCache &cache,
                          const HostTier *tier = nullptr) {
  EXPECT_TRUE(scheduler.idle());
  EXPECT_EQ(pool.numUsedPages() * pool.pageSize(), cache.totalSize())
      << "pages leaked";
  EXPECT_EQ(cache.protectedSize(), 0) << "a prefix stayed locked";
  if (tier) {
    EXPECT_EQ(tier->numUsedPages() * pool.pageSize(), cache.hostSize())
        << "host pages leaked";
    EXPECT_TRUE(tier->checkInvariants().ok());
  }
  EXPECT_TRUE(pool.checkInvariants().ok());
  EXPECT_TRUE(cache.checkInvariants().ok());
}

/// The end of a served workload: nothing leaked, no step left uncommitted,
/// every request finished or aborted.
inline void expectServedCleanly(const Workload &w, const ServedOutputs &served,
                                const Scheduler &scheduler,
                                const PagedKVPool &pool,
                                const RadixCache &cache,
                                const HostTier *tier = nullptr) {
  expectNoLeaks(scheduler, pool, cache, tier);
  EXPECT_EQ(scheduler.numUncommittedSteps(), 0u);
  EXPECT_EQ(served.finished.size() + served.aborted.size(), w.arrivals.size())
      << "a request was lost";
}

/// The batch row `row` belongs to.
inline size_t requestOfRow(const EngineBatch &batch, size_t row) {
  return size_t(std::upper_bound(batch.qoIndptr.begin(), batch.qoIndptr.end(),
                                 int32_t(row)) -
                batch.qoIndptr.begin() - 1);
}

/// A scheduler over an accounting pool of pages of 4 tokens, driven by
/// hand.
struct SchedulerFixture {
  SchedulerFixture(int64_t pages, const SchedulerConfig &config)
      : pool(makeAccountingPool(pages, 4)), cache(*pool),
        scheduler(std::make_unique<Scheduler>(config, *pool, cache)) {}
  StepStats step() {
    StatusOr<StepStats> stats = scheduler->step();
    EXPECT_TRUE(stats.ok()) << stats.status().toString();
    return stats.ok() ? std::move(*stats) : StepStats();
  }
  std::vector<RequestId> commit(const std::vector<Sample> &samples) {
    StatusOr<std::vector<RequestId>> finished = scheduler->commit(samples);
    EXPECT_TRUE(finished.ok()) << finished.status().toString();
    return finished.ok() ? *finished : std::vector<RequestId>();
  }
  void expectNoLeaks() { standin::expectNoLeaks(*scheduler, *pool, cache); }
  std::unique_ptr<PagedKVPool> pool;
  RadixCache cache;
  std::unique_ptr<Scheduler> scheduler;
};

/// Tokens from, from + 1, ..., count of them.
inline std::vector<Token> range(Token from, int count) {
  std::vector<Token> tokens;
  for (int i = 0; i < count; ++i)
    tokens.push_back(from + i);
  return tokens;
}

} // namespace attnc::standin

#endif // ATTNC_TEST_UNIT_SERVINGHARNESS_H
