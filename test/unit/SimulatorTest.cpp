//===- SimulatorTest.cpp - the serving simulator --------------------------===//

#include "sim/Simulator.h"

#include <gtest/gtest.h>

using namespace attnc;

namespace {

SimResult run(const std::string &name, Policy policy, int64_t cacheTokens,
              ArrivalMode mode = ArrivalMode::Offline, uint64_t seed = 1) {
  StatusOr<Workload> workload =
      makeWorkload(name, seed, mode == ArrivalMode::Online ? 10.0 : 0.0);
  EXPECT_TRUE(workload.ok());
  SimOptions options;
  options.scheduler.policy = policy;
  options.cacheTokens = cacheTokens;
  options.arrival = mode;
  StatusOr<SimResult> result = simulate(*workload, options);
  EXPECT_TRUE(result.ok()) << result.status().toString();
  return *result;
}

int64_t pressure(const std::string &name) {
  return 2 * longestRequest(*makeWorkload(name, 1, 0.0));
}

} // namespace

TEST(Simulator, IsDeterministicForASeed) {
  SimResult a = run("branching", Policy::LongestPrefixMatch, 4096,
                    ArrivalMode::Online, 5);
  SimResult b = run("branching", Policy::LongestPrefixMatch, 4096,
                    ArrivalMode::Online, 5);
  EXPECT_EQ(toJson(a), toJson(b));
  SimResult c = run("branching", Policy::LongestPrefixMatch, 4096,
                    ArrivalMode::Online, 6);
  EXPECT_NE(toJson(a), toJson(c));
}

TEST(Simulator, RejectsUnknownWorkloads) {
  EXPECT_EQ(makeWorkload("chat", 1, 0).status().code(),
            ErrorCode::InvalidArgument);
}

TEST(Simulator, NoPolicyBeatsTheBound) {
  for (const std::string &name : workloadNames())
    for (Policy policy :
         {Policy::FCFS, Policy::LongestPrefixMatch, Policy::DFSWeight})
      for (ArrivalMode mode : {ArrivalMode::Offline, ArrivalMode::Online}) {
        SimResult r = run(name, policy, pressure(name), mode);
        EXPECT_LE(r.hitRate, r.optimalHitRate + 1e-9)
            << name << " " << toString(policy) << " " << toString(mode);
        EXPECT_GT(r.hitRate, 0) << name;
      }
}

TEST(Simulator, AmpleCacheReachesTheBoundWithoutEvicting) {
  for (const std::string &name : workloadNames()) {
    SimResult r = run(name, Policy::FCFS, 1 << 22);
    EXPECT_NEAR(r.hitRate, r.optimalHitRate, 1e-9) << name;
    EXPECT_EQ(r.evictedTokens, 0) << name;
  }
}

// The longest-prefix-first = DFS-order result: offline, with a cache that
// holds the longest request, LPM stays within 5% of the bound.
TEST(Simulator, LongestPrefixMatchIsNearOptimalOffline) {
  for (const std::string &name : workloadNames()) {
    SimResult r = run(name, Policy::LongestPrefixMatch, pressure(name));
    EXPECT_TRUE(r.cacheHoldsLongest);
    EXPECT_GE(r.hitRate, 0.95 * r.optimalHitRate) << name;
  }
}

// Arrivals over time make FCFS start branches whose parents were evicted;
// offline, it still evicts more than LPM.
TEST(Simulator, FCFSIsWorseOnBranchingUnderPressure) {
  int64_t cache = pressure("branching");
  for (ArrivalMode mode : {ArrivalMode::Online, ArrivalMode::Offline}) {
    SimResult fcfs = run("branching", Policy::FCFS, cache, mode);
    SimResult lpm = run("branching", Policy::LongestPrefixMatch, cache, mode);
    EXPECT_LT(fcfs.hitRate + (mode == ArrivalMode::Online ? 0.05 : 0.01),
              lpm.hitRate)
        << toString(mode);
    EXPECT_GT(fcfs.evictedTokens, lpm.evictedTokens) << toString(mode);
  }
}

TEST(Simulator, ReportsRequestsThatCannotFit) {
  StatusOr<Workload> workload = makeWorkload("few-shot", 1, 0.0);
  SimOptions options;
  options.cacheTokens = 1024;
  StatusOr<SimResult> result = simulate(*workload, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::OutOfMemory);
}
