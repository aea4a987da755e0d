//===- Simulator.cpp - trace-driven serving simulation --------------------===//

#include "sim/Simulator.h"

#include "sim/SyntheticModel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace attnc {

const char *toString(ArrivalMode mode) {
  return mode == ArrivalMode::Offline ? "offline" : "online";
}

double passSeconds(const StepStats &step, int64_t pageSize) {
  double transferredTokens =
      static_cast<double>(step.batch.pageTransfers.size()) *
      static_cast<double>(pageSize);
  return kPassSeconds +
         kPrefillTokenSeconds * static_cast<double>(step.prefillTokens) +
         kDecodeSeconds * static_cast<double>(step.decodeTokens) +
         kHostTransferTokenSeconds * transferredTokens;
}

Distribution summarize(std::vector<double> values) {
  Distribution result;
  if (values.empty())
    return result;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double value : values)
    sum += value;
  result.mean = sum / static_cast<double>(values.size());
  // The nearest-rank percentile: the ceil(p/100 * n)-th smallest.
  auto percentile = [&](double percent) {
    size_t rank = static_cast<size_t>(
        std::ceil(percent / 100.0 * static_cast<double>(values.size())));
    return values[std::max<size_t>(rank, 1) - 1];
  };
  result.p50 = percentile(50);
  result.p99 = percentile(99);
  return result;
}

namespace {

Status invalid(const std::string &message) {
  return Status::error(ErrorCode::InvalidArgument, message);
}

Status validate(const Workload &workload, const SimOptions &options) {
  if (options.pageSize < 1 || options.pageSize > limits::kMaxPageSize)
    return invalid("page size must be in [1, " +
                   std::to_string(limits::kMaxPageSize) + "], got " +
                   std::to_string(options.pageSize));
  if (options.cacheTokens < options.pageSize ||
      options.cacheTokens > kMaxCacheTokens)
    return invalid("cache size must be in [page size " +
                   std::to_string(options.pageSize) + ", " +
                   std::to_string(kMaxCacheTokens) + "] tokens, got " +
                   std::to_string(options.cacheTokens));
  if (options.hostTokens != 0 && (options.hostTokens < options.pageSize ||
                                  options.hostTokens > kMaxCacheTokens))
    return invalid("host tier size must be 0 (none) or in [page size " +
                   std::to_string(options.pageSize) + ", " +
                   std::to_string(kMaxCacheTokens) + "] tokens, got " +
                   std::to_string(options.hostTokens));
  if (Status status = checkConfig(options.scheduler); !status.ok())
    return status;
  std::unordered_set<RequestId> ids;
  for (const TracedRequest &request : workload.requests) {
    std::string name = "request " + std::to_string(request.id);
    // A NaN time never compares <= now: the simulation would wait forever.
    if (!std::isfinite(request.arrival) || request.arrival < 0)
      return invalid(name + ": arrival must be finite and non-negative");
    if (!std::isfinite(request.thinkTime) || request.thinkTime < 0)
      return invalid(name + ": think time must be finite and non-negative");
    if (request.prompt.empty())
      return invalid(name + ": the prompt is empty");
    if (request.outputLen < 1 || request.outputLen > kMaxTraceOutputLen)
      return invalid(name + ": output length must be in [1, " +
                     std::to_string(kMaxTraceOutputLen) + "], got " +
                     std::to_string(request.outputLen));
    if (request.maxTokens < request.outputLen ||
        request.maxTokens > kMaxTraceOutputLen)
      return invalid(name + ": max_tokens must be in [output length " +
                     std::to_string(request.outputLen) + ", " +
                     std::to_string(kMaxTraceOutputLen) + "], got " +
                     std::to_string(request.maxTokens));
    if (!ids.insert(request.id).second)
      return invalid(name + " appears twice");
  }
  return Status();
}

} // namespace

int64_t longestRequest(const Workload &workload) {
  int64_t longest = 0;
  for (const TracedRequest &request : workload.requests)
    longest = std::max(longest, static_cast<int64_t>(request.prompt.size()) +
                                    request.maxTokens);
  return longest;
}

double optimalHitRate(const Workload &workload, int64_t pageSize) {
  // A request reads from the cache the leading pages of its prompt that
  // some request computed before it, at most `matchable` (the last prompt
  // token is always computed). A page reachable only within matchable
  // parts is computed by the first request that needs it; one that some
  // request computes beyond its own matchable part (a prompt's last whole
  // page, an output) is free to all the others if that request goes first.
  // Serving requests by ascending matchable length puts every such
  // provider before every request that matches the page (a page past
  // provider t's matchable part lies deeper than it, and requests that
  // match it have more matchable pages), so this count is reached by that
  // order and no order computes less.
  std::unordered_set<uint64_t> matched, provided;
  int64_t promptTokens = 0, alwaysComputed = 0;
  for (const TracedRequest &request : workload.requests) {
    int64_t length = static_cast<int64_t>(request.prompt.size());
    promptTokens += length;
    int64_t matchable = (length - 1) / pageSize;
    alwaysComputed += length - matchable * pageSize;
    std::vector<uint64_t> pages = pagePrefixHashes(
        computedSequence(request), pageSize, -1, request.cacheNamespace);
    for (size_t page = 0; page < pages.size(); ++page)
      (int64_t(page) < matchable ? matched : provided).insert(pages[page]);
  }
  int64_t firstComputed = 0;
  for (uint64_t page : matched)
    firstComputed += provided.count(page) ? 0 : 1;
  int64_t mustCompute = alwaysComputed + firstComputed * pageSize;
  return promptTokens ? 1.0 - double(mustCompute) / double(promptTokens) : 0;
}

StatusOr<SimResult> simulate(const Workload &workload,
                             const SimOptions &options) {
  if (Status status = validate(workload, options); !status.ok())
    return status;
  PoolConfig poolConfig;
  poolConfig.pageSize = options.pageSize;
  poolConfig.numPages = options.cacheTokens / options.pageSize;
  poolConfig.memory = PoolMemory::AccountingOnly;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(poolConfig);
  if (!pool.ok())
    return pool.status();
  std::unique_ptr<HostTier> tier;
  std::unique_ptr<RadixCache> cache;
  if (options.hostTokens > 0) {
    StatusOr<std::unique_ptr<HostTier>> made =
        HostTier::create(**pool, options.hostTokens / options.pageSize);
    if (!made.ok())
      return made.status();
    tier = std::move(*made);
    StatusOr<std::unique_ptr<RadixCache>> withTier =
        RadixCache::withHostTier(**pool, *tier);
    if (!withTier.ok())
      return withTier.status();
    cache = std::move(*withTier);
  } else {
    cache = std::make_unique<RadixCache>(**pool);
  }
  Scheduler scheduler(options.scheduler, **pool, *cache);

  // Releases ordered by time, then id.
  using Release = std::pair<double, RequestId>;
  std::priority_queue<Release, std::vector<Release>, std::greater<Release>>
      releases;
  std::unordered_map<RequestId, std::vector<RequestId>> followers;
  std::unordered_map<RequestId, const TracedRequest *> byId;
  SyntheticModel model;
  // Offline, every request is queued at time 0, follow-ups included, as a
  // trace replay does: a follow-up's prompt quotes its predecessor's answer
  // before it is generated (the scheduler waits while what is generated
  // matches). Online, a follow-up is queued once its predecessor has
  // finished and its think time has passed.
  for (const TracedRequest &request : workload.requests) {
    byId[request.id] = &request;
    if (options.arrival == ArrivalMode::Offline)
      releases.push({0.0, request.id});
    else if (request.after)
      followers[*request.after].push_back(request.id);
    else
      releases.push({request.arrival, request.id});
  }

  SimResult result;
  result.workload = workload.name;
  result.policy = toString(options.scheduler.policy);
  result.arrival = toString(options.arrival);
  result.cacheTokens = poolConfig.numPages * poolConfig.pageSize;
  result.cacheHoldsLongest = result.cacheTokens >= longestRequest(workload);
  result.requests = static_cast<int64_t>(workload.requests.size());
  result.hostTokens = tier ? tier->numPages() * options.pageSize : 0;

  double now = 0, busySeconds = 0, utilisation = 0;
  double firstRelease = releases.empty() ? 0 : releases.top().first;
  int64_t finished = 0;
  std::unordered_map<RequestId, double> releasedAt, firstTokenAt;
  std::vector<double> ttft, tpot;
  while (finished < result.requests) {
    while (!releases.empty() && releases.top().first <= now) {
      const TracedRequest &released = *byId.at(releases.top().second);
      if (Status status = scheduler.add(released); !status.ok())
        return status;
      model.add(released);
      releasedAt[releases.top().second] = releases.top().first;
      releases.pop();
    }
    if (scheduler.idle()) {
      if (releases.empty())
        return Status::error(ErrorCode::Internal,
                             "requests wait on requests that never run");
      now = releases.top().first;
      continue;
    }
    StatusOr<SimulatedStep> simulated = model.step(scheduler);
    if (!simulated.ok())
      return simulated.status();
    const StepStats &step = simulated->stats;
    if (step.prefillTokens == 0 && step.decodeTokens == 0 &&
        simulated->finished.empty())
      return Status::error(ErrorCode::Internal,
                           "the scheduler stalled with " +
                               std::to_string(scheduler.numWaiting()) +
                               " requests waiting");
    double seconds = passSeconds(step, options.pageSize);
    for (const PageTransfer &transfer : step.batch.pageTransfers)
      if (transfer.direction == TransferDirection::Offload)
        result.offloadedTokens += options.pageSize;
    int64_t listed = step.batch.pageTable.indptr.empty()
                         ? 0
                         : step.batch.pageTable.indptr.back();
    result.pagesListed += listed;
    if (step.batch.cascade.empty()) {
      result.pagesRead += listed;
    } else {
      for (const CascadeLevel &level : step.batch.cascade)
        result.pagesRead += level.kvIndptr.back();
    }
    utilisation +=
        seconds * double((*pool)->numUsedPages()) / double((*pool)->numPages());
    busySeconds += seconds;
    now += seconds;
    ++result.steps;
    // The pass that yields a request's first output token ends its TTFT
    // (a preempted request's recomputation yields a later one).
    for (RequestId id : step.batch.samplers)
      if (model.sampled(id) == 1 && !firstTokenAt.count(id)) {
        firstTokenAt[id] = now;
        ttft.push_back(now - releasedAt.at(id));
      }
    for (RequestId id : simulated->finished) {
      const TracedRequest &request = *byId.at(id);
      if (request.outputLen > 1)
        tpot.push_back((now - firstTokenAt.at(id)) /
                       double(request.outputLen - 1));
      ++finished;
      for (RequestId follower : followers[id])
        releases.push({now + byId.at(follower)->thinkTime, follower});
    }
  }

  const SchedulerTotals &totals = scheduler.totals();
  result.promptTokens = totals.promptTokens;
  result.hitRate = totals.promptTokens
                       ? double(totals.cachedTokens) / totals.promptTokens
                       : 0;
  result.optimalHitRate = optimalHitRate(workload, options.pageSize);
  result.poolUtilisation = busySeconds > 0 ? utilisation / busySeconds : 0;
  result.evictedTokens = totals.evictedTokens;
  result.preemptions = totals.preemptions;
  result.recomputedTokens = totals.recomputedTokens;
  result.hostLoadedTokens = totals.hostLoadedTokens;
  result.seconds = now;
  result.makespan = now - firstRelease;
  result.ttft = summarize(std::move(ttft));
  result.tpot = summarize(std::move(tpot));
  return result;
}

namespace {

/// `text` as a JSON string: a trace's path names the workload.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", unsigned(c));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(const char *format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

} // namespace

std::string toJson(const SimResult &r) {
  auto integer = [](int64_t value) { return std::to_string(value); };
  // Times in seconds of model time, to the microsecond.
  auto time = [](double value) { return number("%.6f", value); };
  auto ratio = [](double value) { return number("%.4f", value); };
  std::string out = "{";
  auto field = [&](const char *key, const std::string &value) {
    if (out.size() > 1)
      out += ", ";
    out += "\"";
    out += key;
    out += "\": " + value;
  };
  field("workload", jsonString(r.workload));
  field("policy", jsonString(r.policy));
  field("arrival", jsonString(r.arrival));
  field("cache_tokens", integer(r.cacheTokens));
  field("cache_holds_longest", r.cacheHoldsLongest ? "true" : "false");
  field("requests", integer(r.requests));
  field("prompt_tokens", integer(r.promptTokens));
  field("hit_rate", ratio(r.hitRate));
  field("optimal_hit_rate", ratio(r.optimalHitRate));
  field("pool_utilisation", ratio(r.poolUtilisation));
  field("evictions", integer(r.evictedTokens));
  field("steps", integer(r.steps));
  field("seconds", time(r.seconds));
  field("makespan", time(r.makespan));
  field("ttft_mean", time(r.ttft.mean));
  field("ttft_p50", time(r.ttft.p50));
  field("ttft_p99", time(r.ttft.p99));
  field("tpot_mean", time(r.tpot.mean));
  field("tpot_p50", time(r.tpot.p50));
  field("tpot_p99", time(r.tpot.p99));
  field("preemptions", integer(r.preemptions));
  field("recomputed_tokens", integer(r.recomputedTokens));
  field("host_tokens", integer(r.hostTokens));
  field("host_loaded_tokens", integer(r.hostLoadedTokens));
  field("offloaded_tokens", integer(r.offloadedTokens));
  field("kv_pages_listed", integer(r.pagesListed));
  field("kv_pages_read", integer(r.pagesRead));
  return out + "}";
}

} // namespace attnc
