//===- CascadePlannerTest.cpp - shared-prefix levels ----------------------===//

#include "sched/CascadePlanner.h"
#include "TestPools.h"
#include "sim/SyntheticModel.h"

#include <gtest/gtest.h>

#include <map>

using namespace attnc;

namespace {

std::vector<Token> tokens(std::initializer_list<std::pair<Token, int>> runs) {
  std::vector<Token> out;
  for (auto [token, count] : runs)
    out.insert(out.end(), count, token);
  return out;
}

} // namespace

// Four decoding requests: all share a system prompt, two of them also a
// document. The plan reads the system prompt once for all four, the
// document once for two, and each request's own pages last.
TEST(CascadePlanner, GroupsSharedPrefixesIntoLevels) {
  auto pool = makeAccountingPool(256, 4);
  RadixCache cache(*pool);
  SchedulerConfig sched;
  sched.inFlightShareThreshold = 1 << 20; // admit all four at once
  Scheduler scheduler(sched, *pool, cache);
  SyntheticModel model;

  std::vector<std::vector<Token>> prompts = {
      tokens({{1, 16}, {2, 8}, {3, 5}}), tokens({{1, 16}, {2, 8}, {4, 6}}),
      tokens({{1, 16}, {5, 9}}), tokens({{1, 16}, {6, 7}})};
  // Warm the cache with the shared prefixes, then start the batch.
  for (size_t i = 0; i < prompts.size(); ++i) {
    TracedRequest warm;
    warm.id = 100 + static_cast<RequestId>(i);
    warm.prompt = prompts[i];
    warm.outputLen = warm.maxTokens = 1;
    ASSERT_TRUE(scheduler.add(warm).ok());
    model.add(warm);
  }
  while (!scheduler.idle())
    ASSERT_TRUE(model.step(scheduler).ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    TracedRequest request;
    request.id = static_cast<RequestId>(i);
    request.prompt = prompts[i];
    request.prompt.push_back(99);
    request.outputLen = request.maxTokens = 50;
    ASSERT_TRUE(scheduler.add(request).ok());
    model.add(request);
  }
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(model.step(scheduler).ok());
  ASSERT_EQ(scheduler.running().size(), 4u);

  CascadePlan plan = planCascade(cache, scheduler.running());
  ASSERT_EQ(plan.levels.size(), 3u);
  ASSERT_EQ(plan.levels[0].size(), 1u);
  EXPECT_EQ(plan.levels[0][0].requests, (std::vector<RequestId>{0, 1, 2, 3}));
  EXPECT_EQ(plan.levels[0][0].pages.size(), 4u); // 16 tokens
  ASSERT_EQ(plan.levels[1].size(), 1u);
  EXPECT_EQ(plan.levels[1][0].requests, (std::vector<RequestId>{0, 1}));
  EXPECT_EQ(plan.levels[1][0].pages.size(), 2u); // 8 tokens
  EXPECT_EQ(plan.levels[2].size(), 4u);

  // Each request's groups, level by level, give back its pages in order.
  std::map<RequestId, std::vector<PageId>> rebuilt;
  for (const auto &level : plan.levels)
    for (const CascadeGroup &group : level) {
      if (&level != &plan.levels.back())
        EXPECT_GE(group.requests.size(), 2u);
      for (RequestId id : group.requests)
        rebuilt[id].insert(rebuilt[id].end(), group.pages.begin(),
                           group.pages.end());
    }
  for (const RunningRequest &running : scheduler.running())
    EXPECT_EQ(rebuilt[running.request.id], running.pages)
        << "request " << running.request.id;
}
