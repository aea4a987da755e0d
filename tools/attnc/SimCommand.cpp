//===- SimCommand.cpp - attnc sim -----------------------------------------===//

#include "Commands.h"

#include "sim/Simulator.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>

namespace attnc {

namespace {

/// Numeric flags are kept as text and converted by parseFlags: CLI11's
/// conversions accept "nan" and "inf", wrap "-1" into an unsigned seed and
/// exit with their own codes, and a value out of range must never fall back
/// to a default.
struct SimArgs {
  std::string workload;
  std::string trace;
  std::vector<std::string> policies;
  std::string cacheTokensText;
  std::string pageSizeText = "16";
  std::string seedText = "1";
  std::string arrival = "offline";
  std::string rateText = "10";
  std::string agingText = "0";
  std::string ratioText;
  std::string maxTokensText = std::to_string(kDefaultTraceMaxTokens);
  std::string hostTokensText = "0";
  bool json = false;
  bool all = false;
  bool cascade = false;
  std::string sharersText = std::to_string(SchedulerConfig().cascadeMinSharers);
  std::string sharedTokensText =
      std::to_string(SchedulerConfig().cascadeMinSharedTokens);
  CLI::Option *cacheTokensOption = nullptr;

  /// Set by parseFlags; 0 cache tokens picks the sizes from the workload.
  int64_t cacheTokens = 0;
  int64_t pageSize = 16;
  uint64_t seed = 1;
  double rate = 10;
  int64_t agingSteps = 0;
  int64_t cascadeMinSharers = 0, cascadeMinSharedTokens = 0;
  /// Negative: the scheduler's own (SGLang's) ratios.
  double newTokenRatio = -1;
  /// max_tokens of trace requests that give none.
  int64_t defaultMaxTokens = kDefaultTraceMaxTokens;
  /// 0: no host tier.
  int64_t hostTokens = 0;
};

/// All of `text` as a decimal integer in [lo, hi]: strtoll alone would
/// skip spaces, take a '+' and stop at "1e3" or "16x".
bool parseInteger(const std::string &text, int64_t lo, int64_t hi,
                  int64_t &out) {
  size_t digits = !text.empty() && text[0] == '-' ? 1 : 0;
  if (digits == text.size() ||
      text.find_first_not_of("0123456789", digits) != std::string::npos)
    return false;
  errno = 0;
  long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < lo || value > hi)
    return false;
  out = value;
  return true;
}

bool parseUnsigned(const std::string &text, uint64_t &out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return false;
  out = value;
  return true;
}

/// All of `text` as a finite number in [lo, hi]; NaN fails every
/// comparison, so it is refused by name.
bool parseReal(const std::string &text, double lo, double hi, double &out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return false;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value) ||
      value < lo || value > hi)
    return false;
  out = value;
  return true;
}

std::string format(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

/// Converts and checks every numeric flag; prints why and returns false on
/// the first bad one.
bool parseFlags(SimArgs &args) {
  auto bad = [](const char *flag, const std::string &expected,
                const std::string &got) {
    std::fprintf(stderr, "attnc sim: %s must be %s, got '%s'\n", flag,
                 expected.c_str(), got.c_str());
    return false;
  };
  std::string pageRange =
      "an integer in [1, " + std::to_string(limits::kMaxPageSize) + "]";
  if (!parseInteger(args.pageSizeText, 1, limits::kMaxPageSize, args.pageSize))
    return bad("--page-size", pageRange, args.pageSizeText);
  if (args.cacheTokensOption->count()) {
    std::string range = "an integer in [" + std::to_string(args.pageSize) +
                        ", " + std::to_string(kMaxCacheTokens) +
                        "] (at least one page of --page-size " +
                        std::to_string(args.pageSize) + ")";
    if (!parseInteger(args.cacheTokensText, args.pageSize, kMaxCacheTokens,
                      args.cacheTokens))
      return bad("--cache-tokens", range, args.cacheTokensText);
  }
  if (!parseInteger(args.hostTokensText, 0, kMaxCacheTokens, args.hostTokens) ||
      (args.hostTokens != 0 && args.hostTokens < args.pageSize))
    return bad("--host-tokens",
               "0 (no host tier) or an integer in [" +
                   std::to_string(args.pageSize) + ", " +
                   std::to_string(kMaxCacheTokens) +
                   "] (at least one page of --page-size " +
                   std::to_string(args.pageSize) + ")",
               args.hostTokensText);
  if (!parseUnsigned(args.seedText, args.seed))
    return bad("--seed",
               "an integer in [0, " +
                   std::to_string(std::numeric_limits<uint64_t>::max()) + "]",
               args.seedText);
  if (!parseReal(args.rateText, kMinArrivalRate, kMaxArrivalRate, args.rate))
    return bad("--rate",
               "a number of arrivals per second in [" +
                   format(kMinArrivalRate) + ", " + format(kMaxArrivalRate) +
                   "]",
               args.rateText);
  if (!parseInteger(args.agingText, 0, int64_t(1) << 40, args.agingSteps))
    return bad("--aging-steps", "an integer in [0, 2^40]", args.agingText);
  constexpr int64_t kMaxCascadeSetting = (int64_t(1) << 31) - 1;
  if (!parseInteger(args.sharersText, 1, kMaxCascadeSetting,
                    args.cascadeMinSharers))
    return bad("--cascade-min-sharers", "an integer in [1, 2^31)",
               args.sharersText);
  if (!parseInteger(args.sharedTokensText, 1, kMaxCascadeSetting,
                    args.cascadeMinSharedTokens))
    return bad("--cascade-min-tokens", "an integer in [1, 2^31)",
               args.sharedTokensText);
  if (!args.ratioText.empty() &&
      !parseReal(args.ratioText, 0, 1, args.newTokenRatio))
    return bad("--new-token-ratio", "a number in [0, 1]", args.ratioText);
  if (!parseInteger(args.maxTokensText, 1, kMaxTraceOutputLen,
                    args.defaultMaxTokens))
    return bad("--default-max-tokens",
               "an integer in [1, " + std::to_string(kMaxTraceOutputLen) + "]",
               args.maxTokensText);
  return true;
}

const std::vector<Policy> kPolicies = {Policy::FCFS, Policy::LongestPrefixMatch,
                                       Policy::DFSWeight};

/// The two cache sizes of --all: one that never needs to evict, and one
/// under memory pressure that still holds twice the longest request.
std::vector<int64_t> defaultCacheSizes(const Workload &workload,
                                       int64_t pageSize) {
  int64_t total = 0;
  for (const TracedRequest &request : workload.requests)
    total += static_cast<int64_t>(request.prompt.size()) + request.maxTokens;
  auto roundUp = [&](int64_t tokens) {
    return (tokens + pageSize - 1) / pageSize * pageSize;
  };
  return {roundUp(total + 2 * longestRequest(workload)),
          roundUp(2 * longestRequest(workload))};
}

void printTable(const std::vector<SimResult> &results) {
  const SimResult &first = results.front();
  std::printf("workload %s, %s arrivals, %lld requests, cache %lld tokens "
              "(holds the longest request: %s), host tier %lld tokens\n",
              first.workload.c_str(), first.arrival.c_str(),
              static_cast<long long>(first.requests),
              static_cast<long long>(first.cacheTokens),
              first.cacheHoldsLongest ? "yes" : "no",
              static_cast<long long>(first.hostTokens));
  // Times are seconds of model time (docs/SIMULATOR.md); TPOT in ms.
  std::printf("  %-11s %8s %8s %8s %9s %10s %11s %9s %26s %23s\n", "policy",
              "hit rate", "optimal", "pool use", "evicted", "from host",
              "preemptions", "makespan", "TTFT s (mean/p50/p99)",
              "TPOT ms (mean/p50/p99)");
  for (const SimResult &r : results)
    std::printf("  %-11s %8.4f %8.4f %8.3f %9lld %10lld %11lld %8.3fs "
                "%8.3f/%8.3f/%8.3f %7.2f/%7.2f/%7.2f\n",
                r.policy.c_str(), r.hitRate, r.optimalHitRate,
                r.poolUtilisation, static_cast<long long>(r.evictedTokens),
                static_cast<long long>(r.hostLoadedTokens),
                static_cast<long long>(r.preemptions), r.makespan, r.ttft.mean,
                r.ttft.p50, r.ttft.p99, 1e3 * r.tpot.mean, 1e3 * r.tpot.p50,
                1e3 * r.tpot.p99);
  for (const SimResult &r : results)
    if (r.pagesRead != r.pagesListed)
      std::printf("  %-11s cascade: %.1f%% of the KV pages the steps' page "
                  "tables list read once for several requests\n",
                  r.policy.c_str(),
                  100.0 * double(r.pagesListed - r.pagesRead) /
                      double(r.pagesListed));
}

int run(SimArgs &args) {
  if (!parseFlags(args))
    return 2;
  std::vector<std::string> workloads;
  if (args.all)
    workloads = workloadNames();
  else if (!args.workload.empty()) {
    const std::vector<std::string> &names = workloadNames();
    if (std::find(names.begin(), names.end(), args.workload) == names.end()) {
      std::fprintf(stderr,
                   "attnc sim: --workload is few-shot, multi-turn, branching "
                   "or agents, got '%s'\n",
                   args.workload.c_str());
      return 2;
    }
    workloads = {args.workload};
  } else if (args.trace.empty()) {
    std::fprintf(stderr, "attnc sim: give --workload NAME, --trace FILE or "
                         "--all\n");
    return 2;
  }

  std::vector<Policy> policies;
  for (const std::string &name : args.policies) {
    StatusOr<Policy> policy = parsePolicy(name);
    if (!policy.ok()) {
      std::fprintf(stderr, "attnc sim: %s\n",
                   policy.status().message().c_str());
      return 2;
    }
    policies.push_back(*policy);
  }
  if (policies.empty()) // a replayed log: the scheduler's own default, LPM
    policies = args.trace.empty()
                   ? kPolicies
                   : std::vector<Policy>{SchedulerConfig().policy};

  std::vector<ArrivalMode> modes;
  if (args.all)
    modes = {ArrivalMode::Offline, ArrivalMode::Online};
  else if (args.arrival == "offline" || args.arrival == "online")
    modes = {args.arrival == "offline" ? ArrivalMode::Offline
                                       : ArrivalMode::Online};
  else {
    std::fprintf(stderr,
                 "attnc sim: --arrival is offline or online, got "
                 "'%s'\n",
                 args.arrival.c_str());
    return 2;
  }

  auto load = [&](const std::string &name,
                  ArrivalMode mode) -> StatusOr<Workload> {
    if (name.empty())
      return readTrace(args.trace, args.defaultMaxTokens);
    return makeWorkload(name, args.seed,
                        mode == ArrivalMode::Online ? args.rate : 0.0);
  };
  if (workloads.empty())
    workloads = {""};

  for (const std::string &name : workloads) {
    for (ArrivalMode mode : modes) {
      StatusOr<Workload> workload = load(name, mode);
      if (!workload.ok()) {
        std::fprintf(stderr, "attnc sim: %s\n",
                     workload.status().toString().c_str());
        return 1;
      }
      std::vector<int64_t> sizes =
          args.cacheTokens > 0
              ? std::vector<int64_t>{args.cacheTokens}
              : (args.all ? defaultCacheSizes(*workload, args.pageSize)
                          : std::vector<int64_t>{defaultCacheSizes(
                                *workload, args.pageSize)[1]});
      for (int64_t size : sizes) {
        std::vector<SimResult> results;
        for (Policy policy : policies) {
          SimOptions options;
          options.scheduler.policy = policy;
          options.scheduler.agingSteps = args.agingSteps;
          if (args.newTokenRatio >= 0)
            options.scheduler.initialNewTokenRatio =
                options.scheduler.minNewTokenRatio = args.newTokenRatio;
          options.cacheTokens = size;
          options.pageSize = args.pageSize;
          options.arrival = mode;
          options.hostTokens = args.hostTokens;
          options.scheduler.cascade = args.cascade;
          options.scheduler.cascadeMinSharers = args.cascadeMinSharers;
          options.scheduler.cascadeMinSharedTokens =
              args.cascadeMinSharedTokens;
          StatusOr<SimResult> result = simulate(*workload, options);
          if (!result.ok()) {
            std::fprintf(stderr, "attnc sim: %s\n",
                         result.status().toString().c_str());
            return 1;
          }
          if (args.json)
            std::printf("%s\n", toJson(*result).c_str());
          results.push_back(std::move(*result));
        }
        if (!args.json)
          printTable(results);
      }
    }
  }
  return 0;
}

} // namespace

void addSimCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<SimArgs>();
  CLI::App *sim = app.add_subcommand(
      "sim", "Simulate serving a workload: prefix-cache hit rate per "
             "scheduling policy beside the optimal bound, makespan, time "
             "to first token and time per output token");
  CLI::Option *workload =
      sim->add_option("--workload", args->workload,
                      "few-shot, multi-turn, branching or agents");
  CLI::Option *trace =
      sim->add_option("--trace", args->trace,
                      "replay a JSON-lines trace: {\"id\", \"arrival\", "
                      "\"prompt\": [token ids], \"output_len\", "
                      "\"max_tokens\", \"priority\", \"namespace\"} per "
                      "line")
          ->excludes(workload);
  sim->add_option("--policy", args->policies,
                  "fcfs, lpm or dfs-weight (repeatable; default: all, lpm with "
                  "--trace)");
  args->cacheTokensOption =
      sim->add_option("--cache-tokens", args->cacheTokensText,
                      "KV cache size in tokens, from --page-size to " +
                          std::to_string(kMaxCacheTokens) +
                          " (default: twice the longest request)")
          ->type_name("INT");
  sim->add_option("--page-size", args->pageSizeText,
                  "tokens per KV page, 1 to " +
                      std::to_string(limits::kMaxPageSize) + " (default: 16)")
      ->type_name("INT");
  sim->add_option("--seed", args->seedText,
                  "seed of the synthetic workloads (default: 1)")
      ->type_name("UINT");
  sim->add_option("--arrival", args->arrival,
                  "offline (all queued at the start) or online");
  sim->add_option("--rate", args->rateText,
                  "online arrivals per second of independent requests, " +
                      format(kMinArrivalRate) + " to " +
                      format(kMaxArrivalRate) + " (default: 10)")
      ->type_name("FLOAT");
  sim->add_option("--aging-steps", args->agingText,
                  "a request waiting this many steps goes first, oldest "
                  "first (default: 0, never)")
      ->type_name("INT");
  sim->add_option("--new-token-ratio", args->ratioText,
                  "admission reserves this fraction of max_tokens, in [0, 1] "
                  "(default: 0.7 falling to 0.1, back to 0.7 on preemption)")
      ->type_name("FLOAT");
  sim->add_option("--default-max-tokens", args->maxTokensText,
                  "max_tokens of trace requests that give none, 1 to " +
                      std::to_string(kMaxTraceOutputLen) +
                      " (default: " + std::to_string(kDefaultTraceMaxTokens) +
                      "; raised to output_len when that is longer)")
      ->type_name("INT");
  sim->add_option("--host-tokens", args->hostTokensText,
                  "a host tier of this many tokens under the cache, which "
                  "eviction moves pages to and admission loads them back "
                  "from, from --page-size to " +
                      std::to_string(kMaxCacheTokens) + " (default: 0, none)")
      ->type_name("INT");
  sim->add_flag("--cascade", args->cascade,
                "plan cascade levels every step (the scheduler's defaults "
                "for which shared prefixes get one) and report the KV pages "
                "they read once for several requests");
  sim->add_option("--cascade-min-sharers", args->sharersText,
                  "requests a shared prefix needs for a cascade level of its "
                  "own (default: the scheduler's, " +
                      args->sharersText + ")")
      ->type_name("INT");
  sim->add_option("--cascade-min-tokens", args->sharedTokensText,
                  "tokens it needs (default: the scheduler's, " +
                      args->sharedTokensText + ")")
      ->type_name("INT");
  sim->add_flag("--json", args->json,
                "one JSON object per line (hit rate, makespan, TTFT and TPOT "
                "mean/p50/p99 in seconds of model time, ...)");
  sim->add_flag("--all", args->all,
                "every workload, policy, two cache sizes (ample, under "
                "pressure) and both arrival modes")
      ->excludes(workload)
      ->excludes(trace);
  sim->callback([args, &exitCode] { exitCode = run(*args); });
}

} // namespace attnc
