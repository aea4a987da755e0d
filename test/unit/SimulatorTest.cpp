//===- SimulatorTest.cpp - the serving simulator --------------------------===//

#include "sim/Simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace attnc;

namespace {

SimResult run(const std::string &name, Policy policy, int64_t cacheTokens,
              ArrivalMode mode = ArrivalMode::Offline, uint64_t seed = 1,
              int64_t inFlightShareThreshold = 32) {
  StatusOr<Workload> workload =
      makeWorkload(name, seed, mode == ArrivalMode::Online ? 10.0 : 0.0);
  EXPECT_TRUE(workload.ok());
  SimOptions options;
  options.scheduler.policy = policy;
  options.cacheTokens = cacheTokens;
  options.arrival = mode;
  options.scheduler.inFlightShareThreshold = inFlightShareThreshold;
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

// With room for everything, and requests waiting for any page of KV in
// flight (a branch's first page can hold the parent's last output token,
// which only the first branch admitted computes), FCFS computes each page
// once.
TEST(Simulator, AmpleCacheReachesTheBoundWithoutEvicting) {
  for (const std::string &name : workloadNames()) {
    SimResult r = run(name, Policy::FCFS, 1 << 22, ArrivalMode::Offline, 1,
                      /*inFlightShareThreshold=*/1);
    EXPECT_NEAR(r.hitRate, r.optimalHitRate, 1e-9) << name;
    EXPECT_EQ(r.evictedTokens, 0) << name;
  }
}

// The longest-prefix-first = DFS-order result: offline, LPM reaches the
// bound with an ample cache, and under pressure (a cache of twice the
// longest request) stays within 5% of it but on conversations, whose next
// turns it cannot know of before their answers exist: there it keeps 85%.
TEST(Simulator, LongestPrefixMatchIsNearOptimalOffline) {
  for (const std::string &name : workloadNames()) {
    SimResult ample = run(name, Policy::LongestPrefixMatch, 1 << 22);
    EXPECT_NEAR(ample.hitRate, ample.optimalHitRate, 1e-3) << name;
    SimResult r = run(name, Policy::LongestPrefixMatch, pressure(name));
    EXPECT_TRUE(r.cacheHoldsLongest);
    EXPECT_GE(r.hitRate,
              (name == "multi-turn" ? 0.85 : 0.95) * r.optimalHitRate)
        << name;
  }
}

// Arrivals over time make FCFS start branches whose parents were evicted;
// offline, it still evicts more than LPM. The cache holds twice the
// longest prompt and answer: the working set's scale, and more than the
// longest prompt and max_tokens (the scheduler needs that much).
TEST(Simulator, FCFSIsWorseOnBranchingUnderPressure) {
  StatusOr<Workload> workload = makeWorkload("branching", 1, 0.0);
  ASSERT_TRUE(workload.ok());
  int64_t longest = 0;
  for (const TracedRequest &request : workload->requests)
    longest = std::max<int64_t>(longest, int64_t(request.prompt.size()) +
                                             request.outputLen);
  int64_t cache = 2 * longest;
  for (ArrivalMode mode : {ArrivalMode::Online, ArrivalMode::Offline}) {
    SimResult fcfs = run("branching", Policy::FCFS, cache, mode);
    SimResult lpm = run("branching", Policy::LongestPrefixMatch, cache, mode);
    EXPECT_TRUE(lpm.cacheHoldsLongest);
    EXPECT_LT(fcfs.hitRate + (mode == ArrivalMode::Online ? 0.03 : 0.01),
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

namespace {

Workload twoRequests() {
  Workload workload;
  workload.name = "two";
  for (RequestId id : {0, 1}) {
    TracedRequest request;
    request.id = id;
    request.arrival = 0.5 * id;
    request.prompt = {1, 2, 3, static_cast<Token>(10 + id)};
    request.outputLen = request.maxTokens = 2;
    workload.requests.push_back(request);
  }
  return workload;
}

SimOptions onlineOptions() {
  SimOptions options;
  options.cacheTokens = 256;
  options.arrival = ArrivalMode::Online;
  return options;
}

std::string simError(const Workload &workload, const SimOptions &options) {
  StatusOr<SimResult> result = simulate(workload, options);
  if (result.ok())
    return "simulated";
  EXPECT_EQ(result.status().code(), ErrorCode::InvalidArgument);
  return result.status().message();
}

} // namespace

// A NaN arrival never compared <= now: the online loop waited forever.
TEST(Simulator, RejectsNonFiniteTimesInsteadOfHanging) {
  ASSERT_TRUE(simulate(twoRequests(), onlineOptions()).ok());
  for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL, -1.0}) {
    Workload workload = twoRequests();
    workload.requests[1].arrival = bad;
    EXPECT_EQ(simError(workload, onlineOptions()),
              "request 1: arrival must be finite and non-negative")
        << bad;
    workload = twoRequests();
    workload.requests[1].after = 0;
    workload.requests[1].thinkTime = bad;
    EXPECT_EQ(simError(workload, onlineOptions()),
              "request 1: think time must be finite and non-negative")
        << bad;
  }
}

TEST(Simulator, RejectsBadRequests) {
  Workload workload = twoRequests();
  workload.requests[0].prompt.clear();
  EXPECT_EQ(simError(workload, onlineOptions()),
            "request 0: the prompt is empty");
  for (int64_t bad : {int64_t(0), int64_t(-3), kMaxTraceOutputLen + 1}) {
    workload = twoRequests();
    workload.requests[0].outputLen = bad;
    EXPECT_EQ(simError(workload, onlineOptions()),
              "request 0: output length must be in [1, 1048576], got " +
                  std::to_string(bad));
  }
  workload = twoRequests();
  workload.requests[1].id = 0;
  EXPECT_EQ(simError(workload, onlineOptions()), "request 0 appears twice");
}

// A zero page size divided by zero; a cache under one page or past what the
// accounting pool should allocate is an error, not a crash.
TEST(Simulator, RejectsBadOptions) {
  for (int64_t pageSize :
       {int64_t(0), int64_t(-1), int64_t(limits::kMaxPageSize + 1)}) {
    SimOptions options = onlineOptions();
    options.pageSize = pageSize;
    EXPECT_EQ(simError(twoRequests(), options),
              "page size must be in [1, 256], got " + std::to_string(pageSize));
  }
  for (int64_t cache :
       {int64_t(-5), int64_t(0), int64_t(15), kMaxCacheTokens + 1, INT64_MAX}) {
    SimOptions options = onlineOptions();
    options.cacheTokens = cache;
    EXPECT_EQ(simError(twoRequests(), options),
              "cache size must be in [page size 16, 67108864] tokens, got " +
                  std::to_string(cache));
  }
  for (int64_t host :
       {int64_t(-1), int64_t(15), kMaxCacheTokens + 1, INT64_MAX}) {
    SimOptions options = onlineOptions();
    options.hostTokens = host;
    EXPECT_EQ(simError(twoRequests(), options),
              "host tier size must be 0 (none) or in [page size 16, "
              "67108864] tokens, got " +
                  std::to_string(host));
  }
  SimOptions options = onlineOptions();
  options.scheduler.tokenBudget = 0;
  EXPECT_EQ(simError(twoRequests(), options),
            "scheduler token budget must be at least 1, got 0");
}

TEST(Simulator, RejectsBadArrivalRates) {
  for (double rate : {std::nan(""), HUGE_VAL, -1.0, 1e-300, 1e-4, 2e6}) {
    StatusOr<Workload> workload = makeWorkload("few-shot", 1, rate);
    ASSERT_FALSE(workload.ok()) << rate;
    EXPECT_EQ(workload.status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(workload.status().message().rfind(
                  "arrivals per second must be 0 (offline) or in [0.001, "
                  "1e+06], got ",
                  0),
              0u)
        << workload.status().message();
  }
  for (double rate : {0.0, kMinArrivalRate, kMaxArrivalRate})
    EXPECT_TRUE(makeWorkload("branching", 1, rate).ok()) << rate;
}

// One request of 100 prompt tokens and 5 output tokens: its prompt's pass
// (4 ms + 25 us a token) yields the first token, then four passes of one
// decode each (4 ms + 50 us) the rest.
TEST(Simulator, ReportsTimeToFirstTokenAndPerToken) {
  std::string prompt;
  for (int i = 0; i < 100; ++i)
    prompt += (i ? ", " : "") + std::to_string(i + 1);
  StatusOr<Workload> trace = parseTrace(
      "{\"arrival\": 0, \"prompt\": [" + prompt + "], \"output_len\": 5}", "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  SimOptions options;
  options.cacheTokens = 8192;
  StatusOr<SimResult> r = simulate(*trace, options);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_NEAR(r->ttft.p50, kPassSeconds + 100 * kPrefillTokenSeconds, 1e-12);
  EXPECT_NEAR(r->ttft.p99, r->ttft.p50, 1e-12);
  EXPECT_NEAR(r->ttft.mean, r->ttft.p50, 1e-12);
  EXPECT_NEAR(r->tpot.p50, kPassSeconds + kDecodeSeconds, 1e-12);
  EXPECT_NEAR(r->seconds, r->ttft.p50 + 4 * r->tpot.p50, 1e-12);
  EXPECT_NEAR(r->makespan, r->seconds, 1e-12);
}

// Two requests online, derived pass by pass from the cost model. A (20
// prompt tokens, 3 output) arrives at 0.25 s, B (12 prompt tokens, 4
// output, no page shared with A) 1 ms later, while A's prompt runs:
//   pass 1 (from 0.25): A's prompt                 -> A's first token
//   pass 2: A decodes, B's prompt                  -> B's first token
//   pass 3: A and B decode                         -> A's last token
//   pass 4, 5: B decodes                           -> B's last token
TEST(Simulator, MakespanTtftAndTpotFollowThePasses) {
  const double a = 0.25, b = 0.251;
  std::string text = "{\"arrival\": " + std::to_string(a) + ", \"prompt\": [";
  for (int t = 1; t <= 20; ++t)
    text += std::to_string(t) + (t < 20 ? ", " : "");
  text += "], \"output_len\": 3}\n{\"arrival\": " + std::to_string(b) +
          ", \"prompt\": [";
  for (int t = 101; t <= 112; ++t)
    text += std::to_string(t) + (t < 112 ? ", " : "");
  text += "], \"output_len\": 4}\n";
  StatusOr<Workload> trace = parseTrace(text, "two");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  SimOptions options;
  options.cacheTokens = 16384;
  options.arrival = ArrivalMode::Online;
  StatusOr<SimResult> r = simulate(*trace, options);
  ASSERT_TRUE(r.ok()) << r.status().toString();

  double pass1 = a + kPassSeconds + 20 * kPrefillTokenSeconds;
  double pass2 =
      pass1 + kPassSeconds + 12 * kPrefillTokenSeconds + kDecodeSeconds;
  double pass3 = pass2 + kPassSeconds + 2 * kDecodeSeconds;
  double pass4 = pass3 + kPassSeconds + kDecodeSeconds;
  double pass5 = pass4 + kPassSeconds + kDecodeSeconds;
  EXPECT_EQ(r->steps, 5);
  EXPECT_NEAR(r->seconds, pass5, 1e-12);
  // From the first release, not from 0.
  EXPECT_NEAR(r->makespan, pass5 - a, 1e-12);

  double ttftA = pass1 - a, ttftB = pass2 - b;
  ASSERT_LT(ttftA, ttftB);
  EXPECT_NEAR(r->ttft.mean, (ttftA + ttftB) / 2, 1e-12);
  // Nearest rank of two: p50 is the first, p99 the second.
  EXPECT_NEAR(r->ttft.p50, ttftA, 1e-12);
  EXPECT_NEAR(r->ttft.p99, ttftB, 1e-12);

  double tpotA = (pass3 - pass1) / (3 - 1), tpotB = (pass5 - pass2) / (4 - 1);
  ASSERT_LT(tpotB, tpotA);
  EXPECT_NEAR(r->tpot.mean, (tpotA + tpotB) / 2, 1e-12);
  EXPECT_NEAR(r->tpot.p50, tpotB, 1e-12);
  EXPECT_NEAR(r->tpot.p99, tpotA, 1e-12);

  // And in the JSON, to the microsecond.
  std::string json = toJson(*r);
  char expected[64];
  std::snprintf(expected, sizeof(expected), "\"makespan\": %.6f", pass5 - a);
  EXPECT_NE(json.find(expected), std::string::npos) << json;
  for (const char *key : {"ttft_mean", "ttft_p50", "ttft_p99", "tpot_mean",
                          "tpot_p50", "tpot_p99"})
    EXPECT_NE(json.find(std::string("\"") + key + "\": "), std::string::npos)
        << key;
}

TEST(Simulator, SummarizesByNearestRank) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i)
    values.push_back(i);
  Distribution d = summarize(values);
  EXPECT_DOUBLE_EQ(d.mean, 50.5);
  EXPECT_DOUBLE_EQ(d.p50, 50);
  EXPECT_DOUBLE_EQ(d.p99, 99);
  values.push_back(1000);
  d = summarize(values);
  EXPECT_DOUBLE_EQ(d.p50, 51);  // ceil(0.5 * 101) = 51st smallest
  EXPECT_DOUBLE_EQ(d.p99, 100); // ceil(0.99 * 101) = 100th
  d = summarize({});
  EXPECT_EQ(d.mean + d.p50 + d.p99, 0);
}

// The workloads set their limits as applications do, above their answers:
// the scheduler cannot read the answer's length off max_tokens.
TEST(Simulator, WorkloadsSetLimitsAboveTheirAnswers) {
  for (const std::string &name : workloadNames()) {
    StatusOr<Workload> workload = makeWorkload(name, 1, 0.0);
    ASSERT_TRUE(workload.ok());
    for (const TracedRequest &request : workload->requests)
      ASSERT_GT(request.maxTokens, request.outputLen) << name;
  }
}

// The bound is over every order, not the arrival order: a prompt ending at
// a page boundary computes that page itself, so a longer prompt through it
// that goes after reads it, but one that goes first cannot give the shorter
// its own last page for free.
TEST(Simulator, TheBoundIsOverEveryOrder) {
  Workload workload;
  workload.name = "two";
  TracedRequest longer, shorter;
  longer.id = 0;
  for (Token t = 1; t <= 33; ++t)
    longer.prompt.push_back(t);
  shorter.id = 1;
  shorter.prompt.assign(longer.prompt.begin(), longer.prompt.begin() + 32);
  workload.requests = {longer, shorter};
  // In arrival order: 33 + 16 tokens computed; shorter first: 32 + 1.
  EXPECT_DOUBLE_EQ(optimalHitRate(workload, 16), 1.0 - 33.0 / 65.0);
  std::swap(workload.requests[0], workload.requests[1]);
  EXPECT_DOUBLE_EQ(optimalHitRate(workload, 16), 1.0 - 33.0 / 65.0);
}

// Multi-turn conversations arriving online, a pool of twice the longest
// request: each turn's prefix is evicted before the next turn comes. A
// host tier keeps it, the next turn loads it back, and the hit rate
// reaches the bound; the transfers are charged to the passes.
TEST(Simulator, AHostTierKeepsWhatThePoolEvicts) {
  StatusOr<Workload> workload = makeWorkload("multi-turn", 1, 10.0);
  ASSERT_TRUE(workload.ok());
  SimOptions options;
  options.scheduler.policy = Policy::LongestPrefixMatch;
  options.cacheTokens = pressure("multi-turn");
  options.arrival = ArrivalMode::Online;
  StatusOr<SimResult> without = simulate(*workload, options);
  options.hostTokens = 1 << 20;
  StatusOr<SimResult> with = simulate(*workload, options);
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_EQ(without->hostTokens, 0);
  EXPECT_EQ(without->hostLoadedTokens + without->offloadedTokens, 0);
  EXPECT_EQ(with->hostTokens, 1 << 20);
  EXPECT_GT(with->hostLoadedTokens, 0);
  EXPECT_GE(with->offloadedTokens, with->hostLoadedTokens);
  EXPECT_GT(with->hitRate, without->hitRate + 0.1);
  EXPECT_LE(with->hitRate, with->optimalHitRate);
  EXPECT_LT(with->ttft.mean, without->ttft.mean);
}

TEST(Simulator, ChargesEachTransferItsTokens) {
  StepStats step;
  double bare = passSeconds(step, 16);
  step.batch.pageTransfers = {{0, 0, TransferDirection::Offload},
                              {0, 1, TransferDirection::Load}};
  EXPECT_NEAR(passSeconds(step, 16) - bare, 2 * 16 * kHostTransferTokenSeconds,
              1e-15);
}
