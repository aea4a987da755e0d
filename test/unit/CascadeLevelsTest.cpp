//===- CascadeLevelsTest.cpp - a step's cascade attention levels ----------===//
//
// EngineBatch::cascade (SchedulerConfig::cascade): every step's levels are
// checked against the form FlashInfer's MultiLevelCascadeAttentionWrapper
// takes (checkLevels): each level's entries partition the step's rows, a
// shared entry's rows are exactly its requests', its pages full pages that
// precede them, worth the cost rule; and a request's pages, level by level,
// are its page table's. Randomized workloads of prefixes shared at depths
// 1-4 (and by nobody), forks, chunked prompts beside decodes, synchronous
// and overlapped steps, pages of 1 to 64 tokens; the stand-in engine, whose
// tokens depend on every page it reads, checks that ordering the rows for
// cascade serves every sequence what it generates alone.
//
//===----------------------------------------------------------------------===//

#include "../support/CascadeLevelsCheck.h"
#include "ServingHarness.h"
#include "TestPools.h"
#include "sched/CascadePlanner.h"
#include "sim/SyntheticModel.h"

#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <random>
#include <set>

using namespace attnc;

namespace {

/// What the steps' levels held (CascadeLevelStats), and the run's
/// preemptions.
struct LevelStats : check::CascadeLevelStats {
  int64_t preemptions = 0;
};

/// Checks `batch.cascade` against the contract (EngineBatch::cascade), with
/// the checker the serving fuzz target applies to the C API's steps.
void checkLevels(const EngineBatch &batch, int64_t pageSize,
                 const CascadeCost &cost, LevelStats &stats) {
  check::CascadeBatchView view;
  view.numRequests = int64_t(batch.requests.size());
  view.numDecodes = batch.numDecodes;
  view.numRows = int64_t(batch.tokens.size());
  view.qoIndptr = batch.qoIndptr.data();
  view.pageIndptr = batch.pageTable.indptr.data();
  view.pageIndices = batch.pageTable.indices.data();
  view.lastPageLen = batch.pageTable.lastPageLen.data();
  view.positions = batch.positions.data();
  std::vector<check::CascadeLevelView> levels;
  for (const CascadeLevel &level : batch.cascade) {
    // The view reads each array as long as its level says: sizes that
    // disagree are a failure here, not a read past them there.
    size_t entries = level.kvLastPageLen.size();
    ASSERT_EQ(level.qoIndptr.size(), entries + 1);
    ASSERT_EQ(level.kvIndptr.size(), entries + 1);
    levels.push_back({int64_t(entries), level.qoIndptr.data(),
                      level.kvIndptr.data(), level.kvLastPageLen.data(),
                      level.kvIndices.data(), int64_t(level.kvIndices.size())});
  }
  check::CascadeRules rules{cost.minSharers, cost.minSharedTokens,
                            cost.maxLevels};
  EXPECT_EQ(check::checkCascadeLevels(view, levels, pageSize, rules, stats),
            "");
}

/// Prompts from a random tree of segments: depth 1-4 shared, or nothing.
std::vector<TracedRequest> treeWorkload(uint32_t seed, int64_t pageSize,
                                        int count) {
  std::mt19937 rng(seed);
  // Segments of a few pages (plus a ragged tail now and then), per depth
  // and choice: requests choosing alike share them.
  auto segment = [&](int depth, int choice) {
    std::vector<Token> tokens;
    int64_t length = pageSize * int64_t(1 + (depth * 7 + choice) % 3) +
                     (choice % 2 ? int64_t(depth) : 0);
    for (int64_t i = 0; i < length; ++i)
      tokens.push_back(Token(1000 * (1 + depth) + 100 * choice + i % 97));
    return tokens;
  };
  std::vector<TracedRequest> requests;
  for (int id = 0; id < count; ++id) {
    TracedRequest request;
    request.id = id;
    int depth = int(rng() % 5); // 0: shares nothing
    int choice = 0;
    for (int d = 0; d < depth; ++d) {
      choice = choice * 2 + int(rng() % 2);
      std::vector<Token> part = segment(d, choice);
      request.prompt.insert(request.prompt.end(), part.begin(), part.end());
    }
    int own = 1 + int(rng() % uint32_t(2 * pageSize + 3));
    for (int i = 0; i < own; ++i)
      request.prompt.push_back(Token(500000 + 1000 * id + i));
    request.n = rng() % 4 == 0 ? int32_t(2 + rng() % 3) : 1;
    request.outputLen = 1 + int64_t(rng() % 12);
    request.maxTokens = request.outputLen + int64_t(rng() % 3);
    requests.push_back(request);
  }
  return requests;
}

/// Serves `requests` (arriving a few per step) through a scheduler over an
/// accounting pool, synchronous or overlapped, checking every step.
LevelStats serveTree(const std::vector<TracedRequest> &requests,
                     int64_t pageSize, bool overlap, const CascadeCost &cost,
                     int64_t tokenBudget, bool tight) {
  LevelStats stats;
  // Tight: room for the largest request and a little more, so that decodes
  // preempt.
  int64_t pages = 4096;
  if (tight) {
    pages = 0;
    for (const TracedRequest &r : requests)
      pages = std::max<int64_t>(
          pages,
          (int64_t(r.prompt.size()) + r.maxTokens + pageSize) / pageSize * r.n +
              r.n);
    pages += 2;
  }
  auto pool = makeAccountingPool(pages, pageSize);
  RadixCache cache(*pool);
  SchedulerConfig config;
  config.cascade = true;
  config.cascadeMinSharers = cost.minSharers;
  config.cascadeMinSharedTokens = cost.minSharedTokens;
  config.tokenBudget = tokenBudget;
  config.inFlightShareThreshold = 1 << 20; // admit sharers together
  if (tight) // reserve no output at admission: decodes run out of pages
    config.initialNewTokenRatio = config.minNewTokenRatio = 0;
  Scheduler scheduler(config, *pool, cache);
  SyntheticModel model;
  size_t next = 0;
  std::optional<StepStats> inFlight;
  for (int step = 0; step < 5000; ++step) {
    for (int k = 0; k < 3 && next < requests.size(); ++k, ++next) {
      EXPECT_TRUE(scheduler.add(requests[next]).ok());
      model.add(requests[next]);
    }
    bool drained = next == requests.size() && scheduler.idle();
    if (drained && !inFlight)
      break;
    std::optional<StepStats> formed;
    if (!drained) {
      StatusOr<StepStats> made = scheduler.step();
      EXPECT_TRUE(made.ok()) << made.status().toString();
      if (!made.ok())
        return stats;
      checkLevels(made->batch, pageSize, cost, stats);
      formed = std::move(*made);
    }
    if (!overlap) {
      EXPECT_TRUE(scheduler.commit(model.sample(formed->batch)).ok());
      continue;
    }
    if (inFlight)
      EXPECT_TRUE(scheduler.commit(model.sample(inFlight->batch)).ok());
    inFlight = std::move(formed);
  }
  EXPECT_TRUE(scheduler.idle());
  standin::expectNoLeaks(scheduler, *pool, cache);
  stats.preemptions = scheduler.totals().preemptions;
  return stats;
}

} // namespace

// The property, on random workloads: pages of 1, 4, 16 and 64 tokens,
// prefixes shared at depths 1-4 and not at all, forks, prompts chunked
// beside decodes, synchronous and overlapped.
TEST(CascadeLevels, EveryRequestsPagesComeBackLevelByLevel) {
  LevelStats all;
  for (int64_t pageSize : {1, 4, 16, 64})
    for (uint32_t seed : {1u, 2u, 3u})
      for (bool overlap : {false, true}) {
        bool tight = seed == 3;
        SCOPED_TRACE((tight ? "a tight pool, " : "") + std::string() + "page " +
                     std::to_string(pageSize) + ", seed " +
                     std::to_string(seed) + (overlap ? ", overlap" : ""));
        std::vector<TracedRequest> requests = treeWorkload(seed, pageSize, 40);
        CascadeCost cost{2, pageSize};
        LevelStats stats = serveTree(requests, pageSize, overlap, cost,
                                     6 * pageSize + 8, tight);
        EXPECT_GT(stats.stepsWithLevels, 0);
        all.steps += stats.steps;
        all.sharedEntries += stats.sharedEntries;
        all.stepsWithLevels += stats.stepsWithLevels;
        all.savedPages += stats.savedPages;
        all.splitEntries += stats.splitEntries;
        all.deepest = std::max(all.deepest, stats.deepest);
        all.preemptions += stats.preemptions;
      }
  std::cout << all.steps << " steps, " << all.stepsWithLevels
            << " with levels, " << all.sharedEntries << " shared entries, "
            << all.savedPages << " page reads saved, " << all.splitEntries
            << " split\n";
  EXPECT_GT(all.savedPages, 0);
  // Prompt chunks read their prefixes in their own level (the scheduler
  // shares decodes only: checkLevels fails a step otherwise), and a DFS
  // order leaves no decode group apart: planCascadeLevels' run-splitting is
  // tested on hand-made batches below.
  EXPECT_EQ(all.splitEntries, 0) << "a decode group was split into runs";
  EXPECT_GE(all.deepest, 3) << "no request read three shared levels";
  EXPECT_GT(all.preemptions, 0) << "nothing was preempted";
}

namespace {

/// A node of a hand-built tree under `parent`.
std::unique_ptr<RadixCache::Node>
node(RadixCache::Node *parent, std::vector<PageId> pages, uint64_t serial) {
  auto made = std::make_unique<RadixCache::Node>();
  made->parent = parent;
  made->pages = std::move(pages);
  made->serial = serial;
  return made;
}

/// A batch of one-row decodes (pages of 4 tokens) over `tables`, each a
/// request's pages, its row at the last page's second position.
EngineBatch decodes(const std::vector<std::vector<PageId>> &tables) {
  EngineBatch batch;
  batch.qoIndptr.push_back(0);
  batch.pageTable.indptr.push_back(0);
  for (size_t r = 0; r < tables.size(); ++r) {
    batch.requests.push_back(RequestId(r));
    batch.branches.push_back(0);
    batch.tokens.push_back(7);
    batch.positions.push_back(int32_t((tables[r].size() - 1) * 4 + 1));
    batch.qoIndptr.push_back(int32_t(r + 1));
    batch.pageTable.indices.insert(batch.pageTable.indices.end(),
                                   tables[r].begin(), tables[r].end());
    batch.pageTable.indptr.push_back(int32_t(batch.pageTable.indices.size()));
    batch.pageTable.lastPageLen.push_back(2);
  }
  batch.numDecodes = int64_t(tables.size());
  return batch;
}

} // namespace

// A node whose requests are not contiguous rows (a decode and a prefill
// share it, which no order of the decodes and the prefills apart can
// always make contiguous) is one entry per run of rows, each run under the
// cost rule on its own; a path the batch's pages disagree with, or one
// reaching a request's rows, is cut back to whole nodes before them.
TEST(CascadeLevels, SplitsAGroupIntoItsContiguousRuns) {
  RadixCache::Node root;
  auto x = node(&root, {10, 11}, 1);
  auto y = node(&root, {20, 21}, 2);
  using Path = std::vector<const RadixCache::Node *>;
  EngineBatch batch =
      decodes({{10, 11, 1}, {20, 21, 2}, {10, 11, 3}, {10, 11, 4}});
  std::vector<Path> paths = {{x.get()}, {y.get()}, {x.get()}, {x.get()}};
  std::vector<CascadeLevel> levels =
      planCascadeLevels(batch, paths, 4, CascadeCost{1, 1});
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0].qoIndptr, (std::vector<int32_t>{0, 1, 2, 4}));
  EXPECT_EQ(levels[0].kvIndptr, (std::vector<int32_t>{0, 2, 4, 6}));
  EXPECT_EQ(levels[0].kvIndices,
            (std::vector<int32_t>{10, 11, 20, 21, 10, 11}));
  EXPECT_EQ(levels[0].kvLastPageLen, (std::vector<int32_t>{4, 4, 4}));
  EXPECT_EQ(levels[1].kvIndices, (std::vector<int32_t>{1, 2, 3, 4}));

  // Two sharers at least: the lone runs read their pages last.
  levels = planCascadeLevels(batch, paths, 4, CascadeCost{2, 1});
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0].qoIndptr, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(levels[0].kvIndices, (std::vector<int32_t>{10, 11}));
  EXPECT_EQ(levels[0].kvLastPageLen, (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(levels[1].kvIndptr, (std::vector<int32_t>{0, 3, 6, 7, 8}));

  // Request 3's pages are not the node's (a stale path): it shares
  // nothing, and request 2 alone is not worth a level.
  batch = decodes({{10, 11, 1}, {20, 21, 2}, {10, 11, 3}, {12, 13, 4}});
  EXPECT_TRUE(planCascadeLevels(batch, paths, 4, CascadeCost{2, 1}).empty());

  // A request whose row is inside the node's pages (a prompt chunk from
  // its middle) leaves the group: its last level holds every key its rows
  // see.
  batch = decodes({{10, 11, 1}, {20, 21, 2}, {10, 11, 3}, {10, 11, 4}});
  batch.positions[3] = 6; // in page 11
  levels = planCascadeLevels(batch, paths, 4, CascadeCost{2, 1});
  EXPECT_TRUE(levels.empty());
}

// One merge combines at most limits::kMaxMergeStates states: groups past
// the levels it allows are read in their members' last level.
TEST(CascadeLevels, KeepsToTheLevelsOneMergeTakes) {
  RadixCache::Node root;
  std::vector<std::unique_ptr<RadixCache::Node>> chain;
  std::vector<const RadixCache::Node *> path;
  std::vector<PageId> pages;
  for (int depth = 0; depth < 40; ++depth) {
    chain.push_back(
        node(depth ? chain.back().get() : &root, {PageId(depth)}, depth));
    path.push_back(chain.back().get());
    pages.push_back(depth);
  }
  // Request r goes through the first r + 1 nodes, then a page of its own:
  // each node's run ends where a request's path does, a group each.
  std::vector<std::vector<PageId>> tables;
  std::vector<std::vector<const RadixCache::Node *>> paths;
  for (int r = 0; r < 40; ++r) {
    tables.push_back(std::vector<PageId>(pages.begin(), pages.begin() + r + 1));
    tables.back().push_back(1000 + r);
    paths.push_back(std::vector<const RadixCache::Node *>(
        path.begin(), path.begin() + r + 1));
  }
  EngineBatch batch = decodes(tables);
  std::vector<CascadeLevel> levels =
      planCascadeLevels(batch, paths, 4, CascadeCost{1, 1});
  EXPECT_EQ(int64_t(levels.size()), limits::kMaxMergeStates);
  levels = planCascadeLevels(batch, paths, 4, CascadeCost{1, 1, 3});
  ASSERT_EQ(levels.size(), 3u);
  LevelStats stats;
  batch.cascade = levels;
  checkLevels(batch, 4, CascadeCost{1, 1}, stats);
  // The last request reads 2 pages shared, the other 38 and its own last.
  EXPECT_EQ(levels[2].kvIndptr[40] - levels[2].kvIndptr[39], 39);
}

namespace {

/// A scheduler over pages of 4 tokens whose cache holds a (8 tokens) under
/// b (16 tokens) for requests 0-3 and a under c (8 tokens) for 4-5, all
/// decoding, admitted interleaved (0, 4, 1, 5, 2, 3).
struct TwoLevels {
  explicit TwoLevels(SchedulerConfig config)
      : pool(makeAccountingPool(512, 4)), cache(*pool) {
    config.inFlightShareThreshold = 1 << 20;
    config.policy = Policy::FCFS; // admitted in arrival order
    scheduler = std::make_unique<Scheduler>(config, *pool, cache);
    std::vector<Token> a = standin::range(1, 8), b = standin::range(100, 16),
                       c = standin::range(200, 8);
    auto prompt = [&](RequestId id) {
      std::vector<Token> p = a;
      const std::vector<Token> &next = id < 4 ? b : c;
      p.insert(p.end(), next.begin(), next.end());
      p.push_back(Token(1000 + id));
      return p;
    };
    // Warm the cache, then start the batch.
    for (RequestId id : {100, 104}) {
      TracedRequest warm;
      warm.id = id;
      warm.prompt = prompt(id - 100);
      warm.prompt.pop_back();
      warm.outputLen = warm.maxTokens = 1;
      EXPECT_TRUE(scheduler->add(warm).ok());
      model.add(warm);
    }
    while (!scheduler->idle())
      EXPECT_TRUE(model.step(*scheduler).ok());
    for (RequestId id : {0, 4, 1, 5, 2, 3}) {
      TracedRequest request;
      request.id = id;
      request.prompt = prompt(id);
      request.outputLen = request.maxTokens = 50;
      EXPECT_TRUE(scheduler->add(request).ok());
      model.add(request);
    }
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(model.step(*scheduler).ok());
  }
  EngineBatch step() {
    StatusOr<SimulatedStep> stepped = model.step(*scheduler);
    EXPECT_TRUE(stepped.ok());
    return stepped.ok() ? stepped->stats.batch : EngineBatch();
  }
  std::unique_ptr<PagedKVPool> pool;
  RadixCache cache;
  std::unique_ptr<Scheduler> scheduler;
  SyntheticModel model;
};

SchedulerConfig cascadeConfig(int64_t sharers, int64_t tokens) {
  SchedulerConfig config;
  config.cascade = true;
  config.cascadeMinSharers = sharers;
  config.cascadeMinSharedTokens = tokens;
  return config;
}

} // namespace

// Off (the default), a step has no levels and its rows keep the running
// order; on, requests under one node are contiguous rows (a DFS order).
TEST(CascadeLevels, OrdersTheDecodesByTheTree) {
  TwoLevels off{SchedulerConfig()};
  EngineBatch batch = off.step();
  EXPECT_TRUE(batch.cascade.empty());
  EXPECT_EQ(batch.requests, (std::vector<RequestId>{0, 4, 1, 5, 2, 3}));

  TwoLevels on{cascadeConfig(2, 4)};
  batch = on.step();
  EXPECT_EQ(batch.requests, (std::vector<RequestId>{0, 1, 2, 3, 4, 5}));
  LevelStats stats;
  checkLevels(batch, 4, {2, 4}, stats);
  ASSERT_EQ(batch.cascade.size(), 3u);
  // a for all six, then b for 0-3 and c for 4-5.
  EXPECT_EQ(batch.cascade[0].qoIndptr, (std::vector<int32_t>{0, 6}));
  EXPECT_EQ(batch.cascade[0].kvIndices.size(), 2u);
  EXPECT_EQ(batch.cascade[1].qoIndptr, (std::vector<int32_t>{0, 4, 6}));
  EXPECT_EQ(batch.cascade[1].kvIndptr, (std::vector<int32_t>{0, 4, 6}));
}

// The cost rule: a run too short, or of too few requests, is read with its
// members' next entry, or their last level; nothing worth it, no levels.
TEST(CascadeLevels, SharesOnlyWhatTheCostRuleAllows) {
  {
    // a (8 tokens) is too short alone: b's entry reads a's pages too, and
    // 4-5 read a in their last level (c has too few sharers).
    TwoLevels t{cascadeConfig(4, 16)};
    EngineBatch batch = t.step();
    LevelStats stats;
    checkLevels(batch, 4, {4, 16}, stats);
    ASSERT_EQ(batch.cascade.size(), 2u);
    EXPECT_EQ(batch.cascade[0].qoIndptr, (std::vector<int32_t>{0, 4, 6}));
    EXPECT_EQ(batch.cascade[0].kvIndptr, (std::vector<int32_t>{0, 6, 6}));
    EXPECT_EQ(batch.cascade[0].kvLastPageLen, (std::vector<int32_t>{4, 0}));
    EXPECT_EQ(batch.cascade[1].kvIndptr[5] - batch.cascade[1].kvIndptr[4],
              batch.pageTable.indptr[5] - batch.pageTable.indptr[4]);
  }
  for (CascadeCost cost : {CascadeCost{7, 1}, CascadeCost{4, 25}}) {
    TwoLevels t{cascadeConfig(cost.minSharers, cost.minSharedTokens)};
    EXPECT_TRUE(t.step().cascade.empty())
        << cost.minSharers << " sharers, " << cost.minSharedTokens << " tokens";
  }
}

TEST(CascadeLevels, ChecksItsSettings) {
  auto pool = makeAccountingPool(16, 4);
  SchedulerConfig config;
  config.cascadeMinSharers = 0;
  Status status = checkConfig(config);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("cascade sharers"), std::string::npos);
  config = SchedulerConfig();
  config.cascadeMinSharedTokens = int64_t(1) << 31;
  status = checkConfig(config);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("cascade shared tokens"), std::string::npos);
}

// Ordering the rows for cascade changes nothing an engine computes: the
// stand-in engine (whose tokens depend on every key it reads, through the
// page table) serves every sequence what it generates alone, synchronous
// and overlapped, with forks, chunks, preemption and aborts; and every
// step's levels hold to the contract.
TEST(CascadeLevels, TheStandInEngineServesTheSameOutputs) {
  using namespace standin;
  LevelStats stats;
  int64_t verifications = 0;
  for (uint32_t seed : {1u, 2u, 3u})
    for (bool overlap : {false, true})
      for (int64_t drafts : {0, 2}) {
        SCOPED_TRACE("seed " + std::to_string(seed) +
                     (overlap ? ", overlap, " : ", ") + std::to_string(drafts) +
                     " drafts");
        // Speculating, a commit may take the tokens past where the workload
        // aborts: no aborts then.
        WorkloadShape shape;
        if (drafts > 0)
          shape.abortOneIn = 1u << 30;
        Workload w = standin::makeWorkload(seed, 2, shape);
        std::unique_ptr<PagedKVPool> pool = makeStandInPool(64, w.layers, true);
        ASSERT_TRUE(pool);
        RadixCache cache(*pool);
        SchedulerConfig config = preemptingConfig(/*tokenBudget=*/10);
        config.cascade = true;
        config.cascadeMinSharers = 2;
        config.cascadeMinSharedTokens = 1;
        config.speculativeTokens = drafts;
        Scheduler scheduler(config, *pool, cache);
        PoolCaches caches(*pool);
        std::mt19937 rng(seed);
        ServedOutputs served;
        std::map<RequestId, const Arrival *> byId = arrivalsById(w);
        std::set<RequestBranch> stopped;
        EngineLoop loop;
        loop.overlap = overlap;
        loop.alwaysRunAtOnce = true;
        loop.formStep = [&] {
          StatusOr<StepStats> made = scheduler.step();
          if (made.ok())
            checkLevels(made->batch, kPageSize, {2, 1}, stats);
          return made;
        };
        loop.run = [&](Launched &launched) {
          const EngineBatch &batch = launched.stats.batch;
          launched.samples = sampleTop(batch, forward(caches, batch, w.layers));
          markRejectedDrafts(batch, launched.samples);
          for (int32_t d : batch.numDrafts)
            verifications += d > 0;
        };
        // Drafts: each sequence's true next tokens, a third of them wrong.
        auto propose = [&] {
          for (const RunningRequest &running : scheduler.running()) {
            if (drafts == 0 || !running.decoding())
              continue;
            const std::vector<Token> &truth =
                w.expected.at({running.request.id, running.branch});
            std::vector<Token> next;
            for (size_t i = running.output.size();
                 int64_t(next.size()) < drafts; ++i)
              next.push_back(i < truth.size() && rng() % 3 ? truth[i]
                                                           : Token(7));
            Status status =
                scheduler.propose(running.request.id, running.branch, next);
            EXPECT_TRUE(status.ok()) << status.toString();
          }
        };
        loop.commit = [&](Launched &launched) {
          StatusOr<std::vector<RequestId>> finished =
              scheduler.commit(launched.samples);
          ASSERT_TRUE(finished.ok()) << finished.status().toString();
          for (const Sample &sample : launched.samples) {
            RequestBranch id{sample.request, sample.branch};
            if (served.aborted.count(sample.request) || stopped.count(id) ||
                sample.rejected)
              continue;
            served.outputs[id].push_back(sample.token);
            if (sample.stop)
              stopped.insert(id);
          }
          served.finished.insert(finished->begin(), finished->end());
          for (size_t i = 0; i < loop.queued; ++i) {
            const Arrival &a = w.arrivals[i];
            RequestId id = a.request.id;
            if (a.abortAfter > 0 && !served.aborted.count(id) &&
                !served.finished.count(id) &&
                int64_t(served.outputs[RequestBranch(id, 0)].size()) >=
                    a.abortAfter) {
              EXPECT_TRUE(scheduler.abort(id).ok());
              served.aborted.insert(id);
            }
          }
          propose();
        };
        loop.feedPending = [&](EngineBatch &batch, size_t row,
                               const Sample &sample) {
          batch.tokens[row] = sample.token;
        };
        loop.serve(w, scheduler, rng, served);
        expectServedCleanly(w, served, scheduler, *pool, cache);
        expectExpectedOutputs(w, served);
      }
  EXPECT_GT(stats.stepsWithLevels, 0);
  EXPECT_GT(stats.savedPages, 0);
  EXPECT_GT(verifications, 0) << "no step verified drafts";
}
