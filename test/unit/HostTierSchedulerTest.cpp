//===- HostTierSchedulerTest.cpp - admission through a host tier ----------===//
//
// The scheduler over a radix cache with a host tier: admission loads back
// the part of a prompt the tier holds instead of computing it, and reports
// the transfers in the step; a load that fails leaves the prompt computed.
// (OverlapTest runs whole workloads through a tier.)
//
//===----------------------------------------------------------------------===//

#include "TestPools.h"
#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace attnc;

namespace {

constexpr int64_t kPageSize = 4;

/// An accounting pool of 8 pages of 4 tokens, a tier of 16 host pages and
/// a scheduler over them.
struct TierFixture {
  TierFixture() : pool(makeAccountingPool(8, kPageSize)) {
    StatusOr<std::unique_ptr<HostTier>> made = HostTier::create(*pool, 16);
    EXPECT_TRUE(made.ok()) << made.status().toString();
    tier = std::move(*made);
    StatusOr<std::unique_ptr<RadixCache>> withTier =
        RadixCache::withHostTier(*pool, *tier);
    EXPECT_TRUE(withTier.ok()) << withTier.status().toString();
    cache = std::move(*withTier);
    scheduler = std::make_unique<Scheduler>(SchedulerConfig(), *pool, *cache);
  }

  /// Steps and commits a sample for every sampler until `id` finishes.
  StepStats runUntilFinished(RequestId id) {
    StepStats first;
    for (int step = 0; step < 64; ++step) {
      StatusOr<StepStats> stats = scheduler->step();
      EXPECT_TRUE(stats.ok()) << stats.status().toString();
      if (step == 0)
        first = *stats;
      std::vector<Sample> samples;
      for (size_t k = 0; k < stats->batch.samplers.size(); ++k)
        samples.push_back(
            {stats->batch.samplers[k], stats->batch.samplerBranches[k], 7});
      StatusOr<std::vector<RequestId>> finished = scheduler->commit(samples);
      EXPECT_TRUE(finished.ok()) << finished.status().toString();
      if (std::find(finished->begin(), finished->end(), id) != finished->end())
        return first;
    }
    ADD_FAILURE() << "request " << id << " never finished";
    return first;
  }

  /// Nothing held but what the cache holds, in either tier.
  void expectNothingLeaked() const {
    EXPECT_TRUE(scheduler->idle());
    EXPECT_EQ(pool->numUsedPages() * kPageSize, cache->totalSize());
    EXPECT_EQ(tier->numUsedPages() * kPageSize, cache->hostSize());
    EXPECT_EQ(cache->protectedSize(), 0);
    EXPECT_TRUE(cache->checkInvariants().ok());
    EXPECT_TRUE(tier->checkInvariants().ok());
  }

  std::unique_ptr<PagedKVPool> pool;
  std::unique_ptr<HostTier> tier;
  std::unique_ptr<RadixCache> cache;
  std::unique_ptr<Scheduler> scheduler;
};

Request requestOf(RequestId id, std::vector<Token> prompt) {
  Request request;
  request.id = id;
  request.prompt = std::move(prompt);
  return request;
}

std::vector<Token> tokensFrom(Token first, int count) {
  std::vector<Token> tokens(static_cast<size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

/// Request 1 computes a prompt of 17 tokens (4 whole pages enter the
/// cache), which eviction then moves to the tier; request 2 shares its
/// first 16 tokens and adds 4.
void cacheAPromptInTheTier(TierFixture &f) {
  ASSERT_TRUE(f.scheduler->add(requestOf(1, tokensFrom(1, 17))).ok());
  f.runUntilFinished(1);
  ASSERT_EQ(f.cache->totalSize(), 16);
  ASSERT_EQ(f.cache->evict(INT64_MAX), 16);
  ASSERT_EQ(f.cache->hostSize(), 16);
  std::vector<Token> prompt = tokensFrom(1, 16);
  prompt.insert(prompt.end(), {100, 101, 102, 103});
  ASSERT_TRUE(f.scheduler->add(requestOf(2, prompt)).ok());
}

} // namespace

TEST(HostTierScheduler, AdmissionLoadsBackThePrefixTheTierHolds) {
  TierFixture f;
  cacheAPromptInTheTier(f);
  StepStats stats = f.runUntilFinished(2);
  EXPECT_EQ(stats.prefillTokens, 4) << "only the new page is computed";
  EXPECT_EQ(f.scheduler->totals().hostLoadedTokens, 16);
  // The eviction between the steps (four offloads), then the loads of
  // the same host pages, into the pages the request's table starts with.
  const std::vector<PageTransfer> &transfers = stats.batch.pageTransfers;
  ASSERT_EQ(transfers.size(), 8u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(transfers[k].direction, TransferDirection::Offload);
    EXPECT_EQ(transfers[k + 4].direction, TransferDirection::Load);
    EXPECT_EQ(transfers[k + 4].hostPage, transfers[k].hostPage);
    EXPECT_EQ(transfers[k + 4].devicePage, stats.batch.pageTable.indices[k]);
  }
  f.expectNothingLeaked();
}

TEST(HostTierScheduler, AFailedLoadComputesThePromptInstead) {
  TierFixture f;
  cacheAPromptInTheTier(f);
  f.tier->setFaultHook([](HostTier::Operation operation) {
    return operation == HostTier::Operation::Transfer
               ? Status::error(ErrorCode::Internal, "copy failed")
               : Status();
  });
  StepStats stats = f.runUntilFinished(2);
  EXPECT_EQ(stats.prefillTokens, 20);
  EXPECT_EQ(f.scheduler->totals().hostLoadedTokens, 0);
  for (const PageTransfer &transfer : stats.batch.pageTransfers)
    EXPECT_EQ(transfer.direction, TransferDirection::Offload);
  EXPECT_EQ(stats.batch.pageTable.indices.size(), 5u);
  f.tier->setFaultHook(nullptr);
  f.expectNothingLeaked();
}

// A load that needs room evicts like any allocation, and counts it: the
// pool holds another prompt's 5 pages and has 3 free; loading 4 pages
// evicts one, the new page another.
TEST(HostTierScheduler, EvictionsToLoadAreCounted) {
  TierFixture f;
  cacheAPromptInTheTier(f);
  ASSERT_TRUE(f.scheduler->abort(2).ok());
  ASSERT_TRUE(f.scheduler->add(requestOf(3, tokensFrom(500, 21))).ok());
  f.runUntilFinished(3);
  ASSERT_EQ(f.cache->totalSize(), 20);
  ASSERT_EQ(f.pool->numFreePages(), 3);
  ASSERT_EQ(f.scheduler->totals().evictedTokens, 0);
  std::vector<Token> prompt = tokensFrom(1, 16);
  prompt.insert(prompt.end(), {100, 101, 102, 103});
  ASSERT_TRUE(f.scheduler->add(requestOf(4, prompt)).ok());
  StepStats stats = f.runUntilFinished(4);
  EXPECT_EQ(stats.prefillTokens, 4);
  EXPECT_EQ(f.scheduler->totals().hostLoadedTokens, 16);
  EXPECT_EQ(f.scheduler->totals().evictedTokens, 8);
  f.expectNothingLeaked();
}

// The cache's transfers have one reader: between two schedulers over it,
// its direct user. What that user took is gone; what it left goes to the
// next scheduler's first step, ahead of the loads that read it, for an
// engine with caches of its own would otherwise load back unwritten pages.
TEST(HostTierScheduler, TransfersNobodyTookGoToTheNextSchedulersFirstStep) {
  for (bool userTakes : {false, true}) {
    SCOPED_TRACE(userTakes ? "the user takes them" : "nobody takes them");
    TierFixture f;
    ASSERT_TRUE(f.scheduler->add(requestOf(1, tokensFrom(1, 17))).ok());
    f.runUntilFinished(1);
    f.scheduler.reset();
    ASSERT_EQ(f.cache->evict(INT64_MAX), 16);
    ASSERT_EQ(f.cache->numTransfers(), 4u);
    std::vector<PageTransfer> taken;
    if (userTakes)
      taken = f.cache->takeTransfers();
    f.scheduler =
        std::make_unique<Scheduler>(SchedulerConfig(), *f.pool, *f.cache);
    std::vector<Token> prompt = tokensFrom(1, 16);
    prompt.insert(prompt.end(), {100, 101, 102, 103});
    ASSERT_TRUE(f.scheduler->add(requestOf(2, prompt)).ok());
    StepStats stats = f.runUntilFinished(2);
    EXPECT_EQ(f.scheduler->totals().hostLoadedTokens, 16);
    const std::vector<PageTransfer> &transfers = stats.batch.pageTransfers;
    ASSERT_EQ(transfers.size(), userTakes ? 4u : 8u);
    std::vector<PageTransfer> offloads =
        userTakes ? taken
                  : std::vector<PageTransfer>(transfers.begin(),
                                              transfers.begin() + 4);
    for (size_t k = 0; k < 4; ++k) {
      const PageTransfer &load = transfers[transfers.size() - 4 + k];
      EXPECT_EQ(offloads[k].direction, TransferDirection::Offload);
      EXPECT_EQ(load.direction, TransferDirection::Load);
      EXPECT_EQ(load.hostPage, offloads[k].hostPage);
    }
    EXPECT_EQ(f.cache->numTransfers(), 0u);
    f.expectNothingLeaked();
  }
}
