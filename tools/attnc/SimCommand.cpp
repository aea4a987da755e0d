//===- SimCommand.cpp - attnc sim -----------------------------------------===//

#include "Commands.h"

#include "sim/Simulator.h"

#include <cstdio>
#include <memory>

namespace attnc {

namespace {

struct SimArgs {
  std::string workload;
  std::string trace;
  std::vector<std::string> policies;
  int64_t cacheTokens = 0;
  int64_t pageSize = 16;
  uint64_t seed = 1;
  std::string arrival = "offline";
  double rate = 10;
  bool json = false;
  bool all = false;
};

const std::vector<Policy> kPolicies = {Policy::FCFS, Policy::LongestPrefixMatch,
                                       Policy::DFSWeight};

/// The two cache sizes of --all: one that never needs to evict, and one
/// under memory pressure that still holds twice the longest request.
std::vector<int64_t> defaultCacheSizes(const Workload &workload,
                                       int64_t pageSize) {
  int64_t total = 0;
  for (const Request &request : workload.requests)
    total += static_cast<int64_t>(request.prompt.size()) + request.outputLen;
  auto roundUp = [&](int64_t tokens) {
    return (tokens + pageSize - 1) / pageSize * pageSize;
  };
  return {roundUp(total + 2 * longestRequest(workload)),
          roundUp(2 * longestRequest(workload))};
}

void printTable(const std::vector<SimResult> &results) {
  const SimResult &first = results.front();
  std::printf("workload %s, %s arrivals, %lld requests, cache %lld tokens "
              "(holds the longest request: %s)\n",
              first.workload.c_str(), first.arrival.c_str(),
              static_cast<long long>(first.requests),
              static_cast<long long>(first.cacheTokens),
              first.cacheHoldsLongest ? "yes" : "no");
  std::printf("  %-11s %9s %9s %9s %15s %10s\n", "policy", "hit rate",
              "optimal", "pool use", "evicted tokens", "sim time");
  for (const SimResult &r : results)
    std::printf("  %-11s %9.4f %9.4f %9.3f %15lld %9.2fs\n", r.policy.c_str(),
                r.hitRate, r.optimalHitRate, r.poolUtilisation,
                static_cast<long long>(r.evictedTokens), r.seconds);
}

int run(const SimArgs &args) {
  std::vector<std::string> workloads;
  if (args.all)
    workloads = workloadNames();
  else if (!args.workload.empty())
    workloads = {args.workload};
  else if (args.trace.empty()) {
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
  if (policies.empty())
    policies = kPolicies;

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
      return readTrace(args.trace);
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
          options.cacheTokens = size;
          options.pageSize = args.pageSize;
          options.arrival = mode;
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
             "scheduling policy beside the optimal bound");
  CLI::Option *workload =
      sim->add_option("--workload", args->workload,
                      "few-shot, multi-turn, branching or agents");
  CLI::Option *trace =
      sim->add_option("--trace", args->trace,
                      "replay a JSON-lines trace: {\"id\", \"arrival\", "
                      "\"prompt\": [token ids], \"output_len\"} per line")
          ->excludes(workload);
  sim->add_option("--policy", args->policies,
                  "fcfs, lpm or dfs-weight (repeatable; default: all)");
  sim->add_option("--cache-tokens", args->cacheTokens,
                  "KV cache size in tokens (default: twice the longest "
                  "request)");
  sim->add_option("--page-size", args->pageSize, "tokens per KV page")
      ->check(CLI::Range(1, 256));
  sim->add_option("--seed", args->seed, "seed of the synthetic workloads");
  sim->add_option("--arrival", args->arrival,
                  "offline (all queued at the start) or online");
  sim->add_option("--rate", args->rate,
                  "online arrivals per second of independent requests");
  sim->add_flag("--json", args->json, "one JSON object per line");
  sim->add_flag("--all", args->all,
                "every workload, policy, two cache sizes (ample, under "
                "pressure) and both arrival modes")
      ->excludes(workload)
      ->excludes(trace);
  sim->callback([args, &exitCode] { exitCode = run(*args); });
}

} // namespace attnc
