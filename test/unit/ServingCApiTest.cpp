//===- ServingCApiTest.cpp - the serving runtime through libattnc.so ------===//
//
// The pool, radix cache and scheduler handles of attnc_c.h: a C scheduler
// driven in lockstep with the C++ Scheduler on the same requests and
// samples (every array of every step must agree), host-pool appends read
// back through the cache addresses, lifetimes, and every error path.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc_c.h"

#include "kv/PagedKVPool.h"
#include "radix/RadixCache.h"
#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

std::string lastError() { return attnc_last_error(); }

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

#define EXPECT_ERROR(call, code, part)                                         \
  do {                                                                         \
    attnc_status status_ = (call);                                             \
    EXPECT_EQ(status_, code) << #call << ": " << lastError();                  \
    EXPECT_TRUE(contains(lastError(), part))                                   \
        << #call << ": expected \"" << (part) << "\" in \"" << lastError()     \
        << "\"";                                                               \
  } while (0)

attnc_kv_pool_config accountingConfig(int64_t pages, int64_t pageSize) {
  attnc_kv_pool_config config;
  attnc_kv_pool_config_init(&config);
  config.num_pages = pages;
  config.page_size = pageSize;
  config.memory = ATTNC_KV_ACCOUNTING;
  return config;
}

/// A pool, a cache over it and a scheduler over both, destroyed in reverse.
struct Stack {
  attnc_kv_pool pool = nullptr;
  attnc_radix_cache cache = nullptr;
  attnc_scheduler scheduler = nullptr;

  explicit Stack(int64_t pages, int64_t pageSize = 4,
                 const attnc_scheduler_config *given = nullptr) {
    attnc_kv_pool_config poolConfig = accountingConfig(pages, pageSize);
    EXPECT_EQ(attnc_kv_pool_create(&poolConfig, &pool), ATTNC_OK)
        << lastError();
    EXPECT_EQ(attnc_radix_cache_create(pool, &cache), ATTNC_OK) << lastError();
    attnc_scheduler_config config;
    attnc_scheduler_config_init(&config);
    if (given)
      config = *given;
    EXPECT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler),
              ATTNC_OK)
        << lastError();
  }
  ~Stack() {
    attnc_scheduler_destroy(scheduler);
    attnc_radix_cache_destroy(cache);
    attnc_kv_pool_destroy(pool);
  }
};

std::vector<int32_t> range(int32_t from, int count) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < count; ++i)
    tokens.push_back(from + i);
  return tokens;
}

std::vector<int32_t> concat(std::vector<int32_t> a,
                            const std::vector<int32_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

attnc_status add(attnc_scheduler scheduler, int64_t id,
                 const std::vector<int32_t> &prompt, int64_t maxTokens,
                 int32_t priority = 0, uint64_t space = 0, int32_t n = 1) {
  attnc_request request;
  attnc_request_init(&request);
  request.id = id;
  request.prompt = prompt.data();
  request.prompt_len = int64_t(prompt.size());
  request.max_tokens = maxTokens;
  request.priority = priority;
  request.cache_namespace = space;
  request.n = n;
  return attnc_scheduler_add(scheduler, &request);
}

/// A step's arrays read through attnc_step_get_info, as the runtime's types.
attnc::StepStats readStep(attnc_step step) {
  attnc_step_info info;
  EXPECT_EQ(attnc_step_get_info(step, &info), ATTNC_OK) << lastError();
  auto copy = [](auto *data, int64_t count) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(data)>>;
    EXPECT_EQ(data == nullptr, count == 0) << "NULL exactly when empty";
    return data ? std::vector<T>(data, data + count) : std::vector<T>();
  };
  attnc::StepStats stats;
  attnc::EngineBatch &batch = stats.batch;
  int64_t requests = info.num_requests;
  batch.requests = copy(info.requests, requests);
  batch.branches = copy(info.branches, requests);
  batch.numDecodes = info.num_decodes;
  batch.qoIndptr = copy(info.qo_indptr, requests + 1);
  batch.tokens = copy(info.tokens, info.num_tokens);
  batch.tokenFromSample = copy(info.token_from_sample, info.num_tokens);
  batch.positions = copy(info.positions, info.num_tokens);
  batch.slotMapping = copy(info.slot_mapping, info.num_tokens);
  batch.pageTable.indptr = copy(info.page_indptr, requests + 1);
  batch.pageTable.indices = copy(info.page_indices, info.num_page_indices);
  batch.pageTable.lastPageLen = copy(info.last_page_len, requests);
  batch.samplers = copy(info.samplers, info.num_samplers);
  batch.samplerBranches = copy(info.sampler_branches, info.num_samplers);
  batch.sampleRows = copy(info.sample_rows, info.num_samplers);
  batch.numDrafts = copy(info.num_drafts, requests);
  // Cascade levels: each array concatenated level after level.
  std::vector<int32_t> entries =
      copy(info.cascade_level_entries, info.num_cascade_levels);
  std::vector<int32_t> qo =
      copy(info.cascade_qo_indptr, info.num_cascade_indptr);
  std::vector<int32_t> kv =
      copy(info.cascade_kv_indptr, info.num_cascade_indptr);
  std::vector<int32_t> last =
      copy(info.cascade_kv_last_page_len, info.num_cascade_entries);
  std::vector<int32_t> pages =
      copy(info.cascade_kv_indices, info.num_cascade_kv_indices);
  size_t indptrAt = 0, entryAt = 0, pageAt = 0;
  for (int32_t count : entries) {
    attnc::CascadeLevel level;
    auto take = [](const std::vector<int32_t> &from, size_t &at, size_t n) {
      EXPECT_LE(at + n, from.size());
      n = std::min(n, from.size() - std::min(at, from.size()));
      std::vector<int32_t> part(from.begin() + ptrdiff_t(at),
                                from.begin() + ptrdiff_t(at + n));
      at += n;
      return part;
    };
    size_t before = indptrAt;
    level.qoIndptr = take(qo, indptrAt, size_t(count) + 1);
    level.kvIndptr = take(kv, before, size_t(count) + 1);
    level.kvLastPageLen = take(last, entryAt, size_t(count));
    level.kvIndices =
        take(pages, pageAt,
             level.kvIndptr.empty() ? 0 : size_t(level.kvIndptr.back()));
    batch.cascade.push_back(std::move(level));
  }
  EXPECT_EQ(indptrAt, qo.size());
  EXPECT_EQ(entryAt, last.size());
  EXPECT_EQ(pageAt, pages.size());
  stats.admitted = copy(info.admitted, info.num_admitted);
  stats.preempted = copy(info.preempted, info.num_preempted);
  stats.prefillTokens = info.prefill_tokens;
  stats.decodeTokens = info.decode_tokens;
  std::vector<int32_t> pairs = copy(info.page_copies, 2 * info.num_page_copies);
  for (size_t i = 0; i + 1 < pairs.size(); i += 2)
    batch.pageCopies.push_back({pairs[i], pairs[i + 1]});
  std::vector<int32_t> triples =
      copy(info.page_transfers, 3 * info.num_page_transfers);
  for (size_t i = 0; i + 2 < triples.size(); i += 3) {
    EXPECT_TRUE(triples[i + 2] == ATTNC_TRANSFER_OFFLOAD ||
                triples[i + 2] == ATTNC_TRANSFER_LOAD)
        << triples[i + 2];
    batch.pageTransfers.push_back({triples[i], triples[i + 1],
                                   triples[i + 2] == ATTNC_TRANSFER_LOAD
                                       ? attnc::TransferDirection::Load
                                       : attnc::TransferDirection::Offload});
  }
  // The counts agree with the arrays they size.
  EXPECT_EQ(batch.qoIndptr.back(), info.num_tokens);
  EXPECT_EQ(batch.pageTable.indptr.back(), info.num_page_indices);
  EXPECT_EQ(info.prefill_tokens + info.decode_tokens, info.num_tokens);
  return stats;
}

/// Steps expectSameStep compared with cascade levels (a test's evidence that
/// its workload reached them).
int64_t stepsWithCascadeLevels = 0;

void expectSameStep(const attnc::StepStats &c, const attnc::StepStats &cpp) {
  stepsWithCascadeLevels += !cpp.batch.cascade.empty();
  const attnc::EngineBatch &a = c.batch, &b = cpp.batch;
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.branches, b.branches);
  EXPECT_EQ(a.numDecodes, b.numDecodes);
  EXPECT_EQ(a.qoIndptr, b.qoIndptr);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.tokenFromSample, b.tokenFromSample);
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_EQ(a.slotMapping, b.slotMapping);
  EXPECT_EQ(a.pageTable.indptr, b.pageTable.indptr);
  EXPECT_EQ(a.pageTable.indices, b.pageTable.indices);
  EXPECT_EQ(a.pageTable.lastPageLen, b.pageTable.lastPageLen);
  EXPECT_EQ(a.samplers, b.samplers);
  EXPECT_EQ(a.samplerBranches, b.samplerBranches);
  EXPECT_EQ(a.sampleRows, b.sampleRows);
  EXPECT_EQ(a.numDrafts, b.numDrafts);
  EXPECT_EQ(a.pageCopies, b.pageCopies);
  EXPECT_EQ(a.pageTransfers, b.pageTransfers);
  ASSERT_EQ(a.cascade.size(), b.cascade.size());
  for (size_t l = 0; l < a.cascade.size(); ++l) {
    EXPECT_EQ(a.cascade[l].qoIndptr, b.cascade[l].qoIndptr) << "level " << l;
    EXPECT_EQ(a.cascade[l].kvIndptr, b.cascade[l].kvIndptr) << "level " << l;
    EXPECT_EQ(a.cascade[l].kvIndices, b.cascade[l].kvIndices) << "level " << l;
    EXPECT_EQ(a.cascade[l].kvLastPageLen, b.cascade[l].kvLastPageLen)
        << "level " << l;
  }
  EXPECT_EQ(c.admitted, cpp.admitted);
  EXPECT_EQ(c.preempted, cpp.preempted);
  EXPECT_EQ(c.prefillTokens, cpp.prefillTokens);
  EXPECT_EQ(c.decodeTokens, cpp.decodeTokens);
}

/// Samples as attnc_scheduler_commit_arrays takes them.
struct SampleArrays {
  std::vector<int64_t> requests;
  std::vector<int32_t> branches, tokens, stops;
  explicit SampleArrays(const std::vector<attnc_sample> &samples) {
    for (const attnc_sample &s : samples) {
      requests.push_back(s.request);
      branches.push_back(s.branch);
      tokens.push_back(s.token);
      stops.push_back(s.stop);
    }
  }
  const int32_t *branchesOrNull() const {
    bool all0 = std::all_of(branches.begin(), branches.end(),
                            [](int32_t b) { return b == 0; });
    return all0 ? nullptr : branches.data();
  }
  const int32_t *stopsOrNull() const {
    bool none = std::all_of(stops.begin(), stops.end(),
                            [](int32_t s) { return s == 0; });
    return none ? nullptr : stops.data();
  }
};

/// A request of the lockstep workload and the answer its model gives.
struct Traced {
  int64_t id;
  std::vector<int32_t> prompt;
  int64_t maxTokens, outputLen;
  int32_t priority = 0;
  uint64_t space = 0;
  int32_t n = 1;
};

/// The stand-in model: request `id`'s token at output position `n` of a
/// branch, distinct from every prompt token.
int32_t sampledToken(int64_t id, int64_t n, int32_t branch = 0) {
  return int32_t(1000000 + id * 1000 + n + 100000 * branch);
}

} // namespace

TEST(ServingCApi, DefaultsAndNamesComeFromTheRuntime) {
  // The serving runtime came with version 6; the library speaks the header's.
  EXPECT_GE(ATTNC_C_API_VERSION, 6);
  EXPECT_EQ(attnc_api_version(), ATTNC_C_API_VERSION);
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  attnc::SchedulerConfig defaults;
  EXPECT_EQ(int(config.policy), int(defaults.policy));
  EXPECT_EQ(config.token_budget, defaults.tokenBudget);
  EXPECT_EQ(config.max_running, defaults.maxRunning);
  EXPECT_EQ(config.in_flight_share_threshold, defaults.inFlightShareThreshold);
  EXPECT_EQ(config.protect_waiting_prefixes,
            int(defaults.protectWaitingPrefixes));
  EXPECT_EQ(config.aging_steps, defaults.agingSteps);
  EXPECT_EQ(config.initial_new_token_ratio, defaults.initialNewTokenRatio);
  EXPECT_EQ(config.min_new_token_ratio, defaults.minNewTokenRatio);
  EXPECT_EQ(config.new_token_ratio_decay, defaults.newTokenRatioDecay);
  EXPECT_EQ(config.clip_max_new_tokens, defaults.clipMaxNewTokens);
  EXPECT_EQ(config.dfs_weight_window, defaults.dfsWeightWindow);
  EXPECT_EQ(config.cascade, int(defaults.cascade));
  EXPECT_EQ(config.cascade_min_sharers, defaults.cascadeMinSharers);
  EXPECT_EQ(config.cascade_min_shared_tokens, defaults.cascadeMinSharedTokens);

  attnc_kv_pool_config pool;
  attnc_kv_pool_config_init(&pool);
  attnc::PoolConfig poolDefaults;
  EXPECT_EQ(pool.num_pages, 0);
  EXPECT_EQ(pool.page_size, poolDefaults.pageSize);
  EXPECT_EQ(pool.head_dim, poolDefaults.headDim);
  EXPECT_EQ(pool.memory, ATTNC_KV_HOST);
  EXPECT_EQ(pool.cache_dir, nullptr);

  attnc_request request;
  std::memset(&request, 0x5a, sizeof request);
  attnc_request_init(&request);
  EXPECT_EQ(request.max_tokens, 1);
  EXPECT_EQ(request.prompt, nullptr);
  EXPECT_EQ(request.cache_namespace, 0u);

  EXPECT_STREQ(attnc_policy_name(ATTNC_POLICY_FCFS), "fcfs");
  EXPECT_STREQ(attnc_policy_name(ATTNC_POLICY_LPM), "lpm");
  EXPECT_STREQ(attnc_policy_name(ATTNC_POLICY_DFS_WEIGHT), "dfs-weight");
  EXPECT_STREQ(attnc_policy_name(3), "");
  EXPECT_STREQ(attnc_policy_name(-1), "");
  EXPECT_STREQ(attnc_kv_memory_name(ATTNC_KV_HOST), "host");
  EXPECT_STREQ(attnc_kv_memory_name(ATTNC_KV_DEVICE), "device");
  EXPECT_STREQ(attnc_kv_memory_name(ATTNC_KV_ACCOUNTING), "accounting");
  EXPECT_STREQ(attnc_kv_memory_name(3), "");
  // The init functions take NULL like destroy does.
  attnc_scheduler_config_init(nullptr);
  attnc_kv_pool_config_init(nullptr);
  attnc_request_init(nullptr);
}

namespace {

/// Serves `requests` through a C scheduler and a C++ Scheduler of the same
/// configuration in lockstep, with the same samples, aborting `abortAt`
/// (request id -> step) in both between a step and its commit; checks every
/// step's arrays, the finished requests, the totals and the pools. Returns
/// the preemptions, the cached prompt tokens and the aborts that found
/// their request.
void lockstep(const std::vector<Traced> &requests,
              const attnc_scheduler_config &cConfig,
              const attnc::SchedulerConfig &config, int64_t pages,
              int64_t pageSize, const std::map<int64_t, int> &abortAt,
              int64_t *preemptions, int64_t *cachedTokens,
              int64_t *abortsDone) {
  Stack c(pages, pageSize, &cConfig);
  attnc::PoolConfig poolConfig;
  poolConfig.numPages = pages;
  poolConfig.pageSize = pageSize;
  poolConfig.memory = attnc::PoolMemory::AccountingOnly;
  auto pool = std::move(*attnc::PagedKVPool::create(poolConfig));
  auto cache = std::make_unique<attnc::RadixCache>(*pool);
  auto cpp = std::make_unique<attnc::Scheduler>(config, *pool, *cache);

  std::map<int64_t, const Traced *> byId;
  for (const Traced &r : requests) {
    byId[r.id] = &r;
    ASSERT_EQ(
        add(c.scheduler, r.id, r.prompt, r.maxTokens, r.priority, r.space, r.n),
        ATTNC_OK)
        << lastError();
    attnc::Request request;
    request.id = r.id;
    request.prompt = r.prompt;
    request.maxTokens = r.maxTokens;
    request.priority = r.priority;
    request.cacheNamespace = r.space;
    request.n = r.n;
    ASSERT_TRUE(cpp->add(request).ok());
  }
  std::map<std::pair<int64_t, int32_t>, int64_t> sampled;
  std::vector<int64_t> finishedC, finishedCpp, aborted;
  int step = 0;
  for (; step < 2000 && attnc_scheduler_idle(c.scheduler) == 0; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    attnc_step handle = nullptr;
    ASSERT_EQ(attnc_scheduler_step(c.scheduler, &handle), ATTNC_OK)
        << lastError();
    attnc::StepStats ours = readStep(handle);
    ASSERT_EQ(attnc_step_destroy(handle), ATTNC_OK);
    attnc::StatusOr<attnc::StepStats> theirs = cpp->step();
    ASSERT_TRUE(theirs.ok()) << theirs.status().toString();
    expectSameStep(ours, *theirs);
    if (::testing::Test::HasFailure())
      return;
    // Every sampler's row is the last token it feeds.
    const attnc::EngineBatch &batch = ours.batch;
    // (branches a fork makes sample from their first branch's row).
    for (size_t k = 0; k < batch.samplers.size(); ++k) {
      auto rowOf = [&](int32_t branch) -> int64_t {
        for (size_t i = 0; i < batch.requests.size(); ++i)
          if (batch.requests[i] == batch.samplers[k] &&
              batch.branches[i] == branch)
            return batch.qoIndptr[i + 1] - 1;
        return -1;
      };
      int64_t row = rowOf(batch.samplerBranches[k]);
      if (row < 0)
        row = rowOf(0);
      ASSERT_GE(row, 0);
      EXPECT_EQ(batch.sampleRows[k], row);
    }

    std::vector<attnc_sample> samples;
    std::vector<attnc::Sample> cppSamples;
    for (size_t k = 0; k < batch.samplers.size(); ++k) {
      int64_t id = batch.samplers[k];
      int32_t branch = batch.samplerBranches[k];
      const Traced &r = *byId.at(id);
      int64_t n = sampled[{id, branch}]++;
      attnc_sample sample{id, sampledToken(id, n, branch), n + 1 >= r.outputLen,
                          branch};
      samples.push_back(sample);
      attnc::Sample cppSample;
      cppSample.request = id;
      cppSample.branch = branch;
      cppSample.token = sample.token;
      cppSample.stop = sample.stop == 1;
      cppSamples.push_back(cppSample);
    }
    for (auto [id, when] : abortAt)
      if (when == step) {
        attnc_status status = attnc_scheduler_abort(c.scheduler, id);
        attnc::Status cppStatus = cpp->abort(id);
        EXPECT_EQ(int(status), int(cppStatus.code())) << lastError();
        if (status == ATTNC_OK)
          aborted.push_back(id);
      }
    std::vector<int64_t> finished(samples.size() + 1, -1);
    int64_t numFinished = -1;
    // Every other step commits the same samples as arrays, leaving out
    // (NULL) the stops and branches when none stops and all are 0.
    if (step % 2 == 0) {
      ASSERT_EQ(attnc_scheduler_commit(c.scheduler, samples.data(),
                                       int64_t(samples.size()), finished.data(),
                                       &numFinished),
                ATTNC_OK)
          << lastError();
    } else {
      SampleArrays arrays(samples);
      ASSERT_EQ(attnc_scheduler_commit_arrays(
                    c.scheduler, int64_t(samples.size()),
                    arrays.requests.data(), arrays.branchesOrNull(),
                    arrays.tokens.data(), arrays.stopsOrNull(), finished.data(),
                    &numFinished),
                ATTNC_OK)
          << lastError();
    }
    attnc::StatusOr<std::vector<attnc::RequestId>> done =
        cpp->commit(cppSamples);
    ASSERT_TRUE(done.ok()) << done.status().toString();
    finished.resize(size_t(numFinished));
    EXPECT_EQ(finished, *done);
    finishedC.insert(finishedC.end(), finished.begin(), finished.end());
    finishedCpp.insert(finishedCpp.end(), done->begin(), done->end());

    attnc_scheduler_stats stats;
    ASSERT_EQ(attnc_scheduler_get_stats(c.scheduler, &stats), ATTNC_OK);
    EXPECT_EQ(stats.num_waiting, int64_t(cpp->numWaiting()));
    EXPECT_EQ(stats.num_running, int64_t(cpp->running().size()));
    EXPECT_EQ(attnc_kv_pool_num_free_pages(c.pool), pool->numFreePages());
    EXPECT_EQ(attnc_radix_cache_cached_tokens(c.cache), cache->totalSize());
    EXPECT_EQ(attnc_radix_cache_evictable_tokens(c.cache),
              cache->evictableSize());
  }
  EXPECT_EQ(attnc_scheduler_idle(c.scheduler), 1);
  EXPECT_TRUE(cpp->idle());
  EXPECT_EQ(finishedC, finishedCpp);
  // Every request not aborted finished once, having sampled its answer.
  std::vector<int64_t> expected;
  for (const Traced &r : requests)
    if (std::find(aborted.begin(), aborted.end(), r.id) == aborted.end()) {
      expected.push_back(r.id);
      for (int32_t branch = 0; branch < r.n; ++branch)
        EXPECT_EQ((sampled[{r.id, branch}]), std::min(r.outputLen, r.maxTokens))
            << "request " << r.id << " branch " << branch;
    }
  std::sort(finishedC.begin(), finishedC.end());
  EXPECT_EQ(finishedC, expected);

  attnc_scheduler_stats stats;
  ASSERT_EQ(attnc_scheduler_get_stats(c.scheduler, &stats), ATTNC_OK);
  const attnc::SchedulerTotals &totals = cpp->totals();
  EXPECT_EQ(stats.prompt_tokens, totals.promptTokens);
  EXPECT_EQ(stats.cached_tokens, totals.cachedTokens);
  EXPECT_EQ(stats.computed_prefill_tokens, totals.computedPrefillTokens);
  EXPECT_EQ(stats.recomputed_tokens, totals.recomputedTokens);
  EXPECT_EQ(stats.evicted_tokens, totals.evictedTokens);
  EXPECT_EQ(stats.preemptions, totals.preemptions);
  EXPECT_EQ(stats.finished, int64_t(expected.size()));
  EXPECT_EQ(stats.num_waiting, 0);
  EXPECT_EQ(stats.num_running, 0);
  *preemptions = stats.preemptions;
  *cachedTokens = stats.cached_tokens;
  *abortsDone = int64_t(aborted.size());
}

/// Requests sharing two prefixes (one also in another namespace), with
/// priorities, answers shorter than their max_tokens and a long prompt
/// that a small token budget chunks.
std::vector<Traced> lockstepWorkload() {
  std::vector<int32_t> system = range(1, 10), other = range(100, 7);
  std::vector<Traced> requests;
  for (int64_t id = 0; id < 12; ++id) {
    Traced r;
    r.id = 10 + 3 * id; // ids need not be dense
    r.prompt = concat(id % 3 == 2 ? other : system,
                      range(int32_t(200 + 10 * id), int(1 + id % 5)));
    r.outputLen = 2 + (id * 7) % 9;
    // Some stop before their answer's end, at max_tokens.
    r.maxTokens = r.outputLen + (id % 4 == 0 ? 3 : id % 4 == 1 ? -1 : 0);
    r.priority = id % 5 == 4 ? 2 : 0;
    r.space = id == 7 ? 9 : 0;
    r.n = id == 5 ? 2 : 1;
    requests.push_back(r);
  }
  Traced longPrompt{99, concat(system, range(500, 30)), 4, 4, 1, 0};
  requests.push_back(longPrompt);
  return requests;
}

} // namespace

TEST(ServingCApi, StepsMatchTheRuntimeSchedulerUnderEveryPolicy) {
  for (attnc_policy policy :
       {ATTNC_POLICY_FCFS, ATTNC_POLICY_LPM, ATTNC_POLICY_DFS_WEIGHT}) {
    SCOPED_TRACE(attnc_policy_name(policy));
    attnc_scheduler_config c;
    attnc_scheduler_config_init(&c);
    c.policy = policy;
    c.token_budget = 16;
    c.max_running = 6;
    c.in_flight_share_threshold = 8;
    c.aging_steps = 4;
    c.protect_waiting_prefixes = 0;
    c.initial_new_token_ratio = 0.5;
    c.min_new_token_ratio = 0.05;
    c.new_token_ratio_decay = 0.05;
    attnc::SchedulerConfig config;
    config.policy = attnc::Policy(policy);
    config.tokenBudget = 16;
    config.maxRunning = 6;
    config.inFlightShareThreshold = 8;
    config.agingSteps = 4;
    config.protectWaitingPrefixes = false;
    config.initialNewTokenRatio = 0.5;
    config.minNewTokenRatio = 0.05;
    config.newTokenRatioDecay = 0.05;
    int64_t preemptions = 0, cached = 0, aborts = 0;
    // Request 13 is aborted early, 25 (ten tokens long) mid-answer.
    lockstep(lockstepWorkload(), c, config, /*pages=*/24, /*pageSize=*/4,
             {{13, 1}, {25, 6}}, &preemptions, &cached, &aborts);
    EXPECT_GT(cached, 0) << "the workload shares prefixes";
    EXPECT_EQ(aborts, 2) << "each abort found its request queued or running";
  }
}

TEST(ServingCApi, PreemptionsMatchTheRuntimeScheduler) {
  // No output reserved at admission and a small pool: decodes run out of
  // pages and preempt.
  attnc_scheduler_config c;
  attnc_scheduler_config_init(&c);
  c.initial_new_token_ratio = 0;
  c.min_new_token_ratio = 0;
  c.protect_waiting_prefixes = 0;
  attnc::SchedulerConfig config;
  config.initialNewTokenRatio = 0;
  config.minNewTokenRatio = 0;
  config.protectWaitingPrefixes = false;
  for (int64_t pages : {12, 14, 20}) {
    SCOPED_TRACE(std::to_string(pages) + " pages");
    int64_t preemptions = 0, cached = 0, aborts = 0;
    lockstep(lockstepWorkload(), c, config, pages, /*pageSize=*/4, {},
             &preemptions, &cached, &aborts);
    EXPECT_GT(preemptions, 0) << "the pool is small enough to preempt";
  }
}

// Random configurations, pools and workloads (shared prefixes, namespaces,
// priorities, aborts): whatever a field of the C config or request does,
// the C scheduler must do the same as the C++ one given the same values.
TEST(ServingCApi, RandomConfigurationsMatchTheRuntimeScheduler) {
  std::mt19937 rng(20240611);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo + int64_t(rng() % uint64_t(hi - lo + 1));
  };
  int64_t preemptionsSeen = 0, cachedSeen = 0, abortsSeen = 0;
  stepsWithCascadeLevels = 0;
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    attnc_scheduler_config c;
    attnc_scheduler_config_init(&c);
    c.policy = attnc_policy(uniform(0, 2));
    c.token_budget = uniform(1, 48);
    c.max_running = uniform(1, 8);
    c.in_flight_share_threshold = uniform(1, 16);
    c.protect_waiting_prefixes = int(uniform(0, 1));
    c.aging_steps = uniform(0, 6);
    c.initial_new_token_ratio = double(uniform(0, 10)) / 10;
    c.min_new_token_ratio =
        c.initial_new_token_ratio * double(uniform(0, 10)) / 10;
    c.new_token_ratio_decay = double(uniform(0, 20)) / 100;
    c.clip_max_new_tokens = uniform(1, 16);
    c.dfs_weight_window = uniform(0, 4);
    c.cascade = int(uniform(0, 1));
    c.cascade_min_sharers = uniform(1, 4);
    c.cascade_min_shared_tokens = uniform(1, 12);
    attnc::SchedulerConfig config;
    config.policy = attnc::Policy(c.policy);
    config.tokenBudget = c.token_budget;
    config.maxRunning = c.max_running;
    config.inFlightShareThreshold = c.in_flight_share_threshold;
    config.protectWaitingPrefixes = c.protect_waiting_prefixes == 1;
    config.agingSteps = c.aging_steps;
    config.initialNewTokenRatio = c.initial_new_token_ratio;
    config.minNewTokenRatio = c.min_new_token_ratio;
    config.newTokenRatioDecay = c.new_token_ratio_decay;
    config.clipMaxNewTokens = c.clip_max_new_tokens;
    config.dfsWeightWindow = c.dfs_weight_window;
    config.cascade = c.cascade == 1;
    config.cascadeMinSharers = c.cascade_min_sharers;
    config.cascadeMinSharedTokens = c.cascade_min_shared_tokens;

    int64_t pageSize = int64_t(1) << uniform(0, 3);
    std::vector<std::vector<int32_t>> prefixes = {
        range(1, int(uniform(1, 20))), range(300, int(uniform(1, 20)))};
    std::vector<Traced> requests;
    int64_t longest = 0;
    std::map<int64_t, int> abortAt;
    for (int64_t id = 0, n = uniform(4, 16); id < n; ++id) {
      Traced r;
      r.id = id;
      r.prompt = concat(prefixes[size_t(uniform(0, 1))],
                        range(int32_t(1000 + 20 * id), int(uniform(1, 12))));
      r.outputLen = uniform(1, 12);
      r.maxTokens = std::max<int64_t>(1, r.outputLen + uniform(-2, 2));
      r.priority = int32_t(uniform(-1, 1));
      r.space = uint64_t(uniform(0, 3) == 0 ? 1 : 0);
      r.n = int32_t(std::min<int64_t>(uniform(0, 3) == 0 ? uniform(2, 3) : 1,
                                      c.max_running));
      // What the scheduler asks of the pool for the prompt and each
      // branch's answer.
      int64_t answerPages = (r.maxTokens + pageSize - 1) / pageSize + 1;
      longest = std::max(longest, int64_t(r.prompt.size()) + r.maxTokens +
                                      (r.n - 1) * answerPages * pageSize);
      if (uniform(0, 5) == 0)
        abortAt[id] = int(uniform(0, 10));
      requests.push_back(r);
    }
    int64_t pages = (longest + pageSize - 1) / pageSize + uniform(0, 30);
    int64_t preemptions = 0, cached = 0, aborts = 0;
    lockstep(requests, c, config, pages, pageSize, abortAt, &preemptions,
             &cached, &aborts);
    if (::testing::Test::HasFailure())
      return;
    preemptionsSeen += preemptions;
    cachedSeen += cached;
    abortsSeen += aborts;
  }
  // The rounds reached what they are there for.
  EXPECT_GT(preemptionsSeen, 0);
  EXPECT_GT(cachedSeen, 0);
  EXPECT_GT(abortsSeen, 0);
  EXPECT_GT(stepsWithCascadeLevels, 0) << "no step shared a prefix";
}

TEST(ServingCApi, HostPoolAppendsAtTheSlotsInBothPageOrders) {
  for (attnc_page_order order : {ATTNC_NHD, ATTNC_HND}) {
    SCOPED_TRACE(attnc_page_order_name(order));
    const int64_t pages = 3, pageSize = 4, heads = 2, dim = 8;
    attnc_kv_pool_config config;
    attnc_kv_pool_config_init(&config);
    config.num_pages = pages;
    config.page_size = pageSize;
    config.num_kv_heads = heads;
    config.head_dim = dim;
    config.dtype = ATTNC_F32;
    config.page_order = order;
    attnc_kv_pool pool = nullptr;
    ASSERT_EQ(attnc_kv_pool_create(&config, &pool), ATTNC_OK) << lastError();
    auto *keyCache = reinterpret_cast<float *>(attnc_kv_pool_key_cache(pool));
    auto *valueCache =
        reinterpret_cast<float *>(attnc_kv_pool_value_cache(pool));
    ASSERT_NE(keyCache, nullptr);
    ASSERT_NE(valueCache, nullptr);
    size_t elements = size_t(pages * pageSize * heads * dim);
    std::fill(keyCache, keyCache + elements, -1.0f);
    std::fill(valueCache, valueCache + elements, -1.0f);

    // Three tokens, rows padded to a stride of 20 elements (16 used).
    const int64_t stride = 20, tokens = 3;
    std::vector<float> keys(size_t(tokens * stride)),
        values(size_t(tokens * stride));
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t e = 0; e < heads * dim; ++e) {
        keys[size_t(t * stride + e)] = float(100 * t + e);
        values[size_t(t * stride + e)] = float(-100 * t - e - 1);
      }
    std::vector<int64_t> slots = {5, -1, 11}; // token 1 is skipped
    ASSERT_EQ(attnc_kv_pool_append_slots(
                  pool, reinterpret_cast<uint64_t>(keys.data()),
                  reinterpret_cast<uint64_t>(values.data()), stride, stride,
                  reinterpret_cast<uint64_t>(slots.data()), tokens, nullptr),
              ATTNC_OK)
        << lastError();
    auto at = [&](int64_t slot, int64_t head) {
      int64_t page = slot / pageSize, inPage = slot % pageSize;
      int64_t row = order == ATTNC_NHD
                        ? (page * pageSize + inPage) * heads + head
                        : (page * heads + head) * pageSize + inPage;
      return size_t(row * dim);
    };
    for (int64_t t : {0, 2})
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t d = 0; d < dim; ++d) {
          size_t e = size_t(t * stride + h * dim + d);
          EXPECT_EQ(keyCache[at(slots[size_t(t)], h) + size_t(d)], keys[e]);
          EXPECT_EQ(valueCache[at(slots[size_t(t)], h) + size_t(d)], values[e]);
        }
    size_t written = 0;
    for (size_t e = 0; e < elements; ++e)
      written += keyCache[e] != -1.0f;
    EXPECT_EQ(written, size_t(2 * heads * dim)) << "only the two slots";

    // A slot past the pool is refused before anything is written.
    std::vector<int64_t> past = {0, pages * pageSize};
    EXPECT_ERROR(attnc_kv_pool_append_slots(
                     pool, reinterpret_cast<uint64_t>(keys.data()),
                     reinterpret_cast<uint64_t>(values.data()), stride, stride,
                     reinterpret_cast<uint64_t>(past.data()), 2, nullptr),
                 ATTNC_INVALID_ARGUMENT, "slot 12 of token 1 is past the pool");
    EXPECT_EQ(keyCache[at(0, 0)], -1.0f);
    EXPECT_ERROR(attnc_kv_pool_append_slots(
                     pool, reinterpret_cast<uint64_t>(keys.data()),
                     reinterpret_cast<uint64_t>(values.data()), 8, stride,
                     reinterpret_cast<uint64_t>(slots.data()), 1, nullptr),
                 ATTNC_INVALID_ARGUMENT,
                 "token strides must hold a token's 16");
    EXPECT_ERROR(
        attnc_kv_pool_append_slots(pool, 0, 0, stride, stride, 0, 1, nullptr),
        ATTNC_INVALID_ARGUMENT, "needs keys, values and slots");
    EXPECT_ERROR(
        attnc_kv_pool_append_slots(pool, 0, 0, stride, stride, 0, -1, nullptr),
        ATTNC_INVALID_ARGUMENT, "cannot append -1 tokens");
    EXPECT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
  }
}

TEST(ServingCApi, AnAccountingPoolHasNoCachesToWrite) {
  attnc_kv_pool_config config = accountingConfig(8, 16);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&config, &pool), ATTNC_OK) << lastError();
  EXPECT_EQ(attnc_kv_pool_num_pages(pool), 8);
  EXPECT_EQ(attnc_kv_pool_page_size(pool), 16);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(pool), 8);
  EXPECT_EQ(attnc_kv_pool_key_cache(pool), 0u);
  EXPECT_EQ(attnc_kv_pool_value_cache(pool), 0u);
  int64_t slot = 0;
  float row[128] = {};
  EXPECT_ERROR(
      attnc_kv_pool_append_slots(pool, reinterpret_cast<uint64_t>(row),
                                 reinterpret_cast<uint64_t>(row), 128, 128,
                                 reinterpret_cast<uint64_t>(&slot), 1, nullptr),
      ATTNC_INVALID_ARGUMENT, "this pool keeps only accounts");
  attnc_kv_pool_destroy(pool);
}

TEST(ServingCApi, ADevicePoolNeedsAGpu) {
  attnc_kv_pool_config config;
  attnc_kv_pool_config_init(&config);
  config.num_pages = 4;
  config.num_kv_heads = 2;
  config.head_dim = 64;
  config.memory = ATTNC_KV_DEVICE;
  config.cache_dir = "-";
  attnc_kv_pool pool = nullptr;
  attnc_status status = attnc_kv_pool_create(&config, &pool);
  if (status == ATTNC_OK) {
    EXPECT_NE(attnc_kv_pool_key_cache(pool), 0u);
    EXPECT_GT(attnc_kv_pool_value_cache(pool), attnc_kv_pool_key_cache(pool));
    EXPECT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
    return;
  }
  // Without a GPU (or its driver, or NVRTC): an error with its reason.
  EXPECT_EQ(pool, nullptr);
  EXPECT_TRUE(status == ATTNC_NO_DEVICE || status == ATTNC_CUDA_ERROR ||
              status == ATTNC_COMPILE_ERROR)
      << attnc_status_name(status) << ": " << lastError();
  EXPECT_FALSE(lastError().empty());
}

TEST(ServingCApi, PoolConfigIsChecked) {
  struct Case {
    const char *what;
    void (*change)(attnc_kv_pool_config &);
    attnc_status status;
    const char *message;
  };
  const Case cases[] = {
      {"no pages", [](attnc_kv_pool_config &c) { c.num_pages = 0; },
       ATTNC_INVALID_ARGUMENT,
       "a pool needs between 1 and 2^31-1 pages, got 0"},
      {"page size 0", [](attnc_kv_pool_config &c) { c.page_size = 0; },
       ATTNC_INVALID_ARGUMENT, "page size must be between 1 and 256, got 0"},
      {"no heads", [](attnc_kv_pool_config &c) { c.num_kv_heads = 0; },
       ATTNC_INVALID_ARGUMENT, "head count and head dim must be in"},
      {"i32 elements", [](attnc_kv_pool_config &c) { c.dtype = ATTNC_I32; },
       ATTNC_INVALID_ARGUMENT,
       "a KV pool's dtype must be bf16, f16, f32, f8E4M3FN or f8E5M2, got i32"},
      {"dtype 99",
       [](attnc_kv_pool_config &c) { c.dtype = static_cast<attnc_dtype>(99); },
       ATTNC_INVALID_ARGUMENT, "got unknown dtype 99"},
      {"page order 5",
       [](attnc_kv_pool_config &c) {
         c.page_order = static_cast<attnc_page_order>(5);
       },
       ATTNC_INVALID_ARGUMENT, "unknown page order 5"},
      {"memory -1",
       [](attnc_kv_pool_config &c) {
         c.memory = static_cast<attnc_kv_memory>(-1);
       },
       ATTNC_INVALID_ARGUMENT, "unknown KV pool memory -1"},
      {"no layers", [](attnc_kv_pool_config &c) { c.num_layers = 0; },
       ATTNC_INVALID_ARGUMENT,
       "a pool holds between 1 and 65535 layers, got 0"},
      {"65536 layers", [](attnc_kv_pool_config &c) { c.num_layers = 65536; },
       ATTNC_INVALID_ARGUMENT,
       "a pool holds between 1 and 65535 layers, got 65536"},
      // Within the limits, but more host memory than any machine has.
      {"too large",
       [](attnc_kv_pool_config &c) {
         c.num_pages = INT32_MAX;
         c.page_size = 256;
         c.num_kv_heads = 1024;
         c.head_dim = 1024;
         c.dtype = ATTNC_F32;
         c.memory = ATTNC_KV_HOST;
       },
       ATTNC_OUT_OF_MEMORY, "cannot allocate"},
  };
  for (const Case &c : cases) {
    attnc_kv_pool_config config = accountingConfig(4, 16);
    c.change(config);
    attnc_kv_pool pool = nullptr;
    EXPECT_EQ(attnc_kv_pool_create(&config, &pool), c.status) << c.what;
    EXPECT_TRUE(contains(lastError(), c.message))
        << c.what << ": got \"" << lastError() << "\"";
    EXPECT_EQ(pool, nullptr) << c.what;
  }
  attnc_kv_pool pool = nullptr;
  EXPECT_ERROR(attnc_kv_pool_create(nullptr, &pool), ATTNC_INVALID_ARGUMENT,
               "config and out must not be null");
  attnc_kv_pool_config config = accountingConfig(4, 16);
  EXPECT_ERROR(attnc_kv_pool_create(&config, nullptr), ATTNC_INVALID_ARGUMENT,
               "config and out must not be null");
}

TEST(ServingCApi, SchedulerConfigIsChecked) {
  struct Case {
    const char *what;
    void (*change)(attnc_scheduler_config &);
    const char *message;
  };
  const Case cases[] = {
      {"policy 3",
       [](attnc_scheduler_config &c) {
         c.policy = static_cast<attnc_policy>(3);
       },
       "unknown policy 3: expected fcfs, lpm or dfs-weight"},
      {"budget 0", [](attnc_scheduler_config &c) { c.token_budget = 0; },
       "scheduler token budget must be at least 1, got 0"},
      {"no running", [](attnc_scheduler_config &c) { c.max_running = -2; },
       "scheduler running limit must be at least 1, got -2"},
      {"threshold 0",
       [](attnc_scheduler_config &c) { c.in_flight_share_threshold = 0; },
       "scheduler in-flight share threshold must be in [1, 2147483647], "
       "got 0"},
      {"threshold 2^40",
       [](attnc_scheduler_config &c) {
         c.in_flight_share_threshold = int64_t(1) << 40;
       },
       "scheduler in-flight share threshold must be in [1, 2147483647], "
       "got 1099511627776"},
      {"protect 2",
       [](attnc_scheduler_config &c) { c.protect_waiting_prefixes = 2; },
       "protect_waiting_prefixes must be 0 or 1, got 2"},
      {"aging -1", [](attnc_scheduler_config &c) { c.aging_steps = -1; },
       "scheduler aging steps must be 0 (never) or more, got -1"},
      {"ratio above 1",
       [](attnc_scheduler_config &c) { c.initial_new_token_ratio = 1.5; },
       "scheduler initial new-token ratio must be in [0, 1], got 1.5"},
      {"min above initial",
       [](attnc_scheduler_config &c) {
         c.initial_new_token_ratio = 0.2;
         c.min_new_token_ratio = 0.3;
       },
       "scheduler minimum new-token ratio must be in [0, initial ratio], got "
       "0.3"},
      {"NaN ratio",
       [](attnc_scheduler_config &c) { c.min_new_token_ratio = NAN; },
       "scheduler minimum new-token ratio must be in [0, initial ratio]"},
      {"negative decay",
       [](attnc_scheduler_config &c) { c.new_token_ratio_decay = -0.5; },
       "scheduler new-token ratio decay must be in [0, 1]"},
      {"infinite decay",
       [](attnc_scheduler_config &c) { c.new_token_ratio_decay = INFINITY; },
       "scheduler new-token ratio decay must be in [0, 1]"},
      {"clip 0", [](attnc_scheduler_config &c) { c.clip_max_new_tokens = 0; },
       "scheduler max_tokens clip must be at least 1, got 0"},
      {"speculative -1",
       [](attnc_scheduler_config &c) { c.speculative_tokens = -1; },
       "scheduler speculative tokens must be in [0 (off), 2147483647], got "
       "-1"},
      {"cascade 2", [](attnc_scheduler_config &c) { c.cascade = 2; },
       "cascade must be 0 or 1, got 2"},
      {"sharers 0",
       [](attnc_scheduler_config &c) { c.cascade_min_sharers = 0; },
       "scheduler cascade sharers must be in [1, 2147483647], got 0"},
      {"shared tokens 0",
       [](attnc_scheduler_config &c) { c.cascade_min_shared_tokens = 0; },
       "scheduler cascade shared tokens must be in [1, 2147483647], got 0"},
      {"window -1", [](attnc_scheduler_config &c) { c.dfs_weight_window = -1; },
       "scheduler DFS-weight window must be 0 (the whole queue) or more, got "
       "-1"},
  };
  attnc_kv_pool_config poolConfig = accountingConfig(16, 4);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&poolConfig, &pool), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  ASSERT_EQ(attnc_radix_cache_create(pool, &cache), ATTNC_OK);
  for (const Case &c : cases) {
    attnc_scheduler_config config;
    attnc_scheduler_config_init(&config);
    c.change(config);
    attnc_scheduler scheduler = nullptr;
    EXPECT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler),
              ATTNC_INVALID_ARGUMENT)
        << c.what;
    EXPECT_TRUE(contains(lastError(), c.message))
        << c.what << ": got \"" << lastError() << "\"";
    EXPECT_EQ(scheduler, nullptr);
  }
  // None of the refused configs left the cache served.
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  attnc_scheduler scheduler = nullptr;
  EXPECT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler), ATTNC_OK)
      << lastError();
  EXPECT_ERROR(attnc_scheduler_create(nullptr, pool, cache, &scheduler),
               ATTNC_INVALID_ARGUMENT, "config and out must not be null");
  attnc_scheduler_destroy(scheduler);
  attnc_radix_cache_destroy(cache);
  attnc_kv_pool_destroy(pool);
}

TEST(ServingCApi, ACacheServesOneSchedulerOfItsOwnPool) {
  attnc_kv_pool_config config = accountingConfig(16, 4);
  attnc_kv_pool pool = nullptr, other = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&config, &pool), ATTNC_OK);
  ASSERT_EQ(attnc_kv_pool_create(&config, &other), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  ASSERT_EQ(attnc_radix_cache_create(pool, &cache), ATTNC_OK);
  attnc_scheduler_config sched;
  attnc_scheduler_config_init(&sched);
  attnc_scheduler first = nullptr, second = nullptr;
  EXPECT_ERROR(attnc_scheduler_create(&sched, other, cache, &first),
               ATTNC_INVALID_ARGUMENT,
               "cache is a cache over another attnc_kv_pool than pool");
  ASSERT_EQ(attnc_scheduler_create(&sched, pool, cache, &first), ATTNC_OK);
  EXPECT_ERROR(attnc_scheduler_create(&sched, pool, cache, &second),
               ATTNC_INVALID_ARGUMENT, "cache already serves a live");
  EXPECT_EQ(second, nullptr);
  // Once the first is gone, the cache may serve another.
  ASSERT_EQ(attnc_scheduler_destroy(first), ATTNC_OK);
  EXPECT_EQ(attnc_scheduler_create(&sched, pool, cache, &second), ATTNC_OK)
      << lastError();
  attnc_scheduler_destroy(second);
  attnc_radix_cache_destroy(cache);
  attnc_kv_pool_destroy(other);
  attnc_kv_pool_destroy(pool);
}

TEST(ServingCApi, RequestsAreChecked) {
  Stack s(/*pages=*/8, /*pageSize=*/4);
  std::vector<int32_t> prompt = range(1, 6);
  ASSERT_EQ(add(s.scheduler, 7, prompt, 3), ATTNC_OK) << lastError();
  EXPECT_ERROR(add(s.scheduler, 7, range(50, 3), 2), ATTNC_INVALID_ARGUMENT,
               "request 7 is queued or running already");
  EXPECT_ERROR(add(s.scheduler, 8, {}, 2), ATTNC_INVALID_ARGUMENT,
               "request 8 needs a prompt and max_tokens of at least 1");
  EXPECT_ERROR(add(s.scheduler, 9, prompt, 0), ATTNC_INVALID_ARGUMENT,
               "request 9 needs a prompt and max_tokens of at least 1");
  // 30 + 3 tokens need 9 pages of 4; the pool has 8.
  EXPECT_ERROR(add(s.scheduler, 10, range(1, 30), 3), ATTNC_OUT_OF_MEMORY,
               "request 10 needs");
  EXPECT_ERROR(add(s.scheduler, 11, prompt, INT64_MAX), ATTNC_INVALID_ARGUMENT,
               "request 11: prompt (6 tokens) and max_tokens "
               "(9223372036854775807) exceed 2147483647 positions");
  attnc_request request;
  attnc_request_init(&request);
  request.id = 12;
  request.prompt_len = 4; // and no prompt
  EXPECT_ERROR(attnc_scheduler_add(s.scheduler, &request),
               ATTNC_INVALID_ARGUMENT,
               "request 12: prompt must be an array of prompt_len");
  request.prompt = prompt.data();
  request.prompt_len = -1;
  EXPECT_ERROR(attnc_scheduler_add(s.scheduler, &request),
               ATTNC_INVALID_ARGUMENT, "(non-negative) token ids, got -1");
  EXPECT_ERROR(attnc_scheduler_add(s.scheduler, nullptr),
               ATTNC_INVALID_ARGUMENT, "request must not be null");
  attnc_scheduler_stats stats;
  ASSERT_EQ(attnc_scheduler_get_stats(s.scheduler, &stats), ATTNC_OK);
  EXPECT_EQ(stats.num_waiting, 1) << "only request 7 was queued";
}

TEST(ServingCApi, CommitTakesExactlyTheLastStepsSamples) {
  Stack s(/*pages=*/16, /*pageSize=*/4);
  ASSERT_EQ(add(s.scheduler, 1, range(1, 5), 4), ATTNC_OK);
  ASSERT_EQ(add(s.scheduler, 2, range(40, 6), 4), ATTNC_OK);
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK) << lastError();
  attnc_step_info info;
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  ASSERT_EQ(info.num_samplers, 2);
  EXPECT_EQ(info.samplers[0], 1);
  EXPECT_EQ(info.samplers[1], 2);
  EXPECT_EQ(info.num_decodes, 0);
  EXPECT_EQ(info.num_admitted, 2);
  EXPECT_EQ(info.num_preempted, 0);
  EXPECT_EQ(info.preempted, nullptr);

  attnc_sample samples[2] = {{1, 500, 0}, {2, 501, 0}};
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, samples, 1, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT, "the last step has 2 samplers, got 1");
  attnc_sample swapped[2] = {samples[1], samples[0]};
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, swapped, 2, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT,
      "sample 0 is for request 2, the step's sampler 0 is request 1");
  attnc_sample badStop[2] = {samples[0], {2, 501, 2}};
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, badStop, 2, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT, "samples[1].stop must be 0 or 1, got 2");
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, nullptr, 2, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT, "samples must be an array of");
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, samples, -1, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT, "(non-negative) samples, got -1");

  // Request 2 stops here; its id comes back.
  samples[1].stop = 1;
  int64_t finished[2] = {-1, -1}, numFinished = -1;
  ASSERT_EQ(
      attnc_scheduler_commit(s.scheduler, samples, 2, finished, &numFinished),
      ATTNC_OK)
      << lastError();
  EXPECT_EQ(numFinished, 1);
  EXPECT_EQ(finished[0], 2);
  // The step's arrays outlive the commit and the next step.
  attnc_step next = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &next), ATTNC_OK) << lastError();
  EXPECT_EQ(info.samplers[1], 2);
  ASSERT_EQ(attnc_step_get_info(next, &info), ATTNC_OK);
  EXPECT_EQ(info.num_decodes, 1);
  EXPECT_EQ(info.requests[0], 1);
  EXPECT_EQ(info.tokens[0], 500) << "the decode feeds the sampled token";
  EXPECT_EQ(info.positions[0], 5);
  EXPECT_EQ(attnc_step_destroy(step), ATTNC_OK);
  EXPECT_EQ(attnc_step_destroy(next), ATTNC_OK);
  // A commit with no place for the finished ids is fine too.
  attnc_sample last = {1, 502, 1};
  EXPECT_EQ(attnc_scheduler_commit(s.scheduler, &last, 1, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  EXPECT_EQ(attnc_scheduler_idle(s.scheduler), 1);
}

TEST(ServingCApi, AbortingWhatIsNotThereIsNotFound) {
  Stack s(/*pages=*/16, /*pageSize=*/4);
  ASSERT_EQ(add(s.scheduler, 3, range(1, 5), 2), ATTNC_OK);
  EXPECT_ERROR(attnc_scheduler_abort(s.scheduler, 4), ATTNC_NOT_FOUND,
               "request 4 is neither queued nor running");
  EXPECT_EQ(attnc_scheduler_abort(s.scheduler, 3), ATTNC_OK) << lastError();
  EXPECT_ERROR(attnc_scheduler_abort(s.scheduler, 3), ATTNC_NOT_FOUND,
               "request 3 is neither queued nor running");
  EXPECT_EQ(attnc_scheduler_idle(s.scheduler), 1);
}

TEST(ServingCApi, MatchPrefixReturnsTheCachedPages) {
  Stack s(/*pages=*/16, /*pageSize=*/4);
  std::vector<int32_t> prompt = range(1, 10);
  ASSERT_EQ(add(s.scheduler, 1, prompt, 1), ATTNC_OK);
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
  attnc_step_info info;
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  std::vector<int32_t> requestPages(info.page_indices,
                                    info.page_indices + info.num_page_indices);
  attnc_sample sample = {1, 77, 1};
  ASSERT_EQ(attnc_scheduler_commit(s.scheduler, &sample, 1, nullptr, nullptr),
            ATTNC_OK);
  attnc_step_destroy(step);
  // The finished request's 10 computed tokens: two whole pages cached.
  EXPECT_EQ(attnc_radix_cache_cached_tokens(s.cache), 8);
  EXPECT_EQ(attnc_radix_cache_evictable_tokens(s.cache), 8);

  std::vector<int32_t> query = concat(range(1, 9), range(900, 3));
  int64_t matched = -1, count = 0;
  ASSERT_EQ(attnc_radix_cache_match_prefix(s.cache, query.data(),
                                           int64_t(query.size()), 0, &matched,
                                           nullptr, &count),
            ATTNC_OK)
      << lastError();
  EXPECT_EQ(matched, 8);
  EXPECT_EQ(count, 2);
  std::vector<int32_t> pages(1, -1);
  count = 1;
  EXPECT_ERROR(attnc_radix_cache_match_prefix(s.cache, query.data(),
                                              int64_t(query.size()), 0,
                                              &matched, pages.data(), &count),
               ATTNC_INVALID_ARGUMENT,
               "pages holds 1 entries, the match has 2");
  EXPECT_EQ(count, 2);
  pages.assign(size_t(query.size()) / 4, -1);
  count = int64_t(pages.size());
  ASSERT_EQ(attnc_radix_cache_match_prefix(s.cache, query.data(),
                                           int64_t(query.size()), 0, &matched,
                                           pages.data(), &count),
            ATTNC_OK);
  ASSERT_EQ(count, 2);
  EXPECT_EQ(
      std::vector<int32_t>(pages.begin(), pages.begin() + 2),
      std::vector<int32_t>(requestPages.begin(), requestPages.begin() + 2))
      << "the pages the request computed them in";
  // Another namespace shares nothing.
  ASSERT_EQ(attnc_radix_cache_match_prefix(s.cache, query.data(),
                                           int64_t(query.size()), 5, &matched,
                                           nullptr, &count),
            ATTNC_OK);
  EXPECT_EQ(matched, 0);
  EXPECT_EQ(count, 0);
  EXPECT_ERROR(attnc_radix_cache_match_prefix(s.cache, nullptr, 3, 0, &matched,
                                              nullptr, &count),
               ATTNC_INVALID_ARGUMENT, "tokens must be an array of num_tokens");
  EXPECT_ERROR(attnc_radix_cache_match_prefix(s.cache, query.data(), 3, 0,
                                              nullptr, nullptr, &count),
               ATTNC_INVALID_ARGUMENT,
               "matched_tokens and num_pages must not be null");
  count = -1;
  EXPECT_ERROR(attnc_radix_cache_match_prefix(s.cache, query.data(), 3, 0,
                                              &matched, pages.data(), &count),
               ATTNC_INVALID_ARGUMENT, "must not be negative, got -1");

  int64_t evicted = -1;
  EXPECT_ERROR(attnc_radix_cache_evict(s.cache, -4, &evicted),
               ATTNC_INVALID_ARGUMENT, "cannot evict -4 tokens");
  ASSERT_EQ(attnc_radix_cache_evict(s.cache, 1, &evicted), ATTNC_OK);
  EXPECT_EQ(evicted, 4) << "one page goes, from the leaf's tail";
  EXPECT_EQ(attnc_radix_cache_cached_tokens(s.cache), 4);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(s.pool), 15);
  ASSERT_EQ(attnc_radix_cache_match_prefix(s.cache, query.data(),
                                           int64_t(query.size()), 0, &matched,
                                           nullptr, &count),
            ATTNC_OK);
  EXPECT_EQ(matched, 4) << "what is left of the leaf still hits";
  ASSERT_EQ(attnc_radix_cache_evict(s.cache, 100, &evicted), ATTNC_OK);
  EXPECT_EQ(evicted, 4);
  EXPECT_EQ(attnc_radix_cache_cached_tokens(s.cache), 0);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(s.pool), 16);
}

TEST(ServingCApi, HandlesMayBeDestroyedInAnyOrder) {
  // The pool's handle goes first: the cache and scheduler keep it alive.
  attnc_kv_pool_config config = accountingConfig(16, 4);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&config, &pool), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  ASSERT_EQ(attnc_radix_cache_create(pool, &cache), ATTNC_OK);
  attnc_scheduler_config sched;
  attnc_scheduler_config_init(&sched);
  attnc_scheduler scheduler = nullptr;
  ASSERT_EQ(attnc_scheduler_create(&sched, pool, cache, &scheduler), ATTNC_OK);
  ASSERT_EQ(add(scheduler, 1, range(1, 9), 3), ATTNC_OK);
  ASSERT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(pool), 0);
  EXPECT_TRUE(contains(lastError(), "pool is not a live attnc_kv_pool"));
  ASSERT_EQ(attnc_radix_cache_destroy(cache), ATTNC_OK);
  EXPECT_EQ(attnc_radix_cache_cached_tokens(cache), 0);
  EXPECT_TRUE(contains(lastError(), "cache is not a live attnc_radix_cache"));
  // The scheduler still serves its request over both.
  int64_t tokensSampled = 0;
  for (int i = 0; i < 20 && attnc_scheduler_idle(scheduler) == 0; ++i) {
    attnc_step step = nullptr;
    ASSERT_EQ(attnc_scheduler_step(scheduler, &step), ATTNC_OK) << lastError();
    attnc_step_info info;
    ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
    std::vector<attnc_sample> samples;
    for (int64_t k = 0; k < info.num_samplers; ++k)
      samples.push_back({info.samplers[k], int32_t(300 + tokensSampled++), 0});
    ASSERT_EQ(attnc_scheduler_commit(scheduler, samples.data(),
                                     int64_t(samples.size()), nullptr, nullptr),
              ATTNC_OK)
        << lastError();
    attnc_step_destroy(step);
  }
  EXPECT_EQ(attnc_scheduler_idle(scheduler), 1);
  EXPECT_EQ(tokensSampled, 3) << "max_tokens";
  EXPECT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
}

TEST(ServingCApi, DestroyingASchedulerReleasesWhatItsRequestsHold) {
  attnc_kv_pool_config config = accountingConfig(16, 4);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&config, &pool), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  ASSERT_EQ(attnc_radix_cache_create(pool, &cache), ATTNC_OK);
  attnc_scheduler_config sched;
  attnc_scheduler_config_init(&sched);
  attnc_scheduler scheduler = nullptr;
  ASSERT_EQ(attnc_scheduler_create(&sched, pool, cache, &scheduler), ATTNC_OK);
  ASSERT_EQ(add(scheduler, 1, range(1, 13), 8), ATTNC_OK);
  ASSERT_EQ(add(scheduler, 2, range(100, 6), 8), ATTNC_OK);
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(scheduler, &step), ATTNC_OK);
  attnc_step_destroy(step);
  // Mid-step (samples not committed): both requests hold pages; nothing
  // is cached before the step has run (commit).
  EXPECT_LT(attnc_kv_pool_num_free_pages(pool), 16 - 4);
  EXPECT_EQ(attnc_radix_cache_cached_tokens(cache), 0);
  ASSERT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(pool), 16);
  // After a commit, the computed whole pages of request 1's prompt (12 of
  // its 13 tokens) stay in the cache, evictable, once the scheduler goes.
  ASSERT_EQ(attnc_scheduler_create(&sched, pool, cache, &scheduler), ATTNC_OK);
  ASSERT_EQ(add(scheduler, 1, range(1, 13), 8), ATTNC_OK);
  ASSERT_EQ(attnc_scheduler_step(scheduler, &step), ATTNC_OK);
  attnc_step_destroy(step);
  attnc_sample samples[1] = {{1, 7, 0, 0}};
  ASSERT_EQ(attnc_scheduler_commit(scheduler, samples, 1, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  EXPECT_EQ(attnc_radix_cache_cached_tokens(cache), 12);
  EXPECT_EQ(attnc_radix_cache_evictable_tokens(cache), 0);
  ASSERT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
  EXPECT_EQ(attnc_radix_cache_evictable_tokens(cache), 12);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(pool), 16 - 3);
  ASSERT_EQ(attnc_radix_cache_destroy(cache), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(pool), 16);
  ASSERT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
}

TEST(ServingCApi, BadHandlesAreErrorsNotCrashes) {
  Stack s(/*pages=*/8, /*pageSize=*/4);
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
  int local = 0;
  auto fakePool = reinterpret_cast<attnc_kv_pool>(&local);
  auto fakeCache = reinterpret_cast<attnc_radix_cache>(&local);
  auto fakeScheduler = reinterpret_cast<attnc_scheduler>(&local);
  auto fakeStep = reinterpret_cast<attnc_step>(&local);
  // A live handle of one type is no handle of another.
  auto poolAsCache = reinterpret_cast<attnc_radix_cache>(s.pool);
  auto cacheAsPool = reinterpret_cast<attnc_kv_pool>(s.cache);
  auto schedulerAsStep = reinterpret_cast<attnc_step>(s.scheduler);
  auto stepAsScheduler = reinterpret_cast<attnc_scheduler>(step);

  for (attnc_kv_pool pool : {fakePool, cacheAsPool}) {
    EXPECT_ERROR(attnc_kv_pool_destroy(pool), ATTNC_INVALID_ARGUMENT,
                 "pool is not a live attnc_kv_pool");
    EXPECT_EQ(attnc_kv_pool_num_pages(pool), 0);
    EXPECT_EQ(attnc_kv_pool_page_size(pool), 0);
    EXPECT_EQ(attnc_kv_pool_num_free_pages(pool), 0);
    EXPECT_EQ(attnc_kv_pool_key_cache(pool), 0u);
    EXPECT_EQ(attnc_kv_pool_value_cache(pool), 0u);
    EXPECT_ERROR(attnc_kv_pool_append_slots(pool, 0, 0, 0, 0, 0, 0, nullptr),
                 ATTNC_INVALID_ARGUMENT, "pool is not a live attnc_kv_pool");
    attnc_radix_cache cache = nullptr;
    EXPECT_ERROR(attnc_radix_cache_create(pool, &cache), ATTNC_INVALID_ARGUMENT,
                 "pool is not a live attnc_kv_pool");
    attnc_scheduler_config config;
    attnc_scheduler_config_init(&config);
    attnc_scheduler scheduler = nullptr;
    EXPECT_ERROR(attnc_scheduler_create(&config, pool, s.cache, &scheduler),
                 ATTNC_INVALID_ARGUMENT, "pool is not a live attnc_kv_pool");
  }
  for (attnc_radix_cache cache : {fakeCache, poolAsCache}) {
    EXPECT_ERROR(attnc_radix_cache_destroy(cache), ATTNC_INVALID_ARGUMENT,
                 "cache is not a live attnc_radix_cache");
    EXPECT_EQ(attnc_radix_cache_cached_tokens(cache), 0);
    EXPECT_EQ(attnc_radix_cache_evictable_tokens(cache), 0);
    int64_t matched = 0, count = 0;
    int32_t token = 1;
    EXPECT_ERROR(attnc_radix_cache_match_prefix(cache, &token, 1, 0, &matched,
                                                nullptr, &count),
                 ATTNC_INVALID_ARGUMENT,
                 "cache is not a live attnc_radix_cache");
    EXPECT_ERROR(attnc_radix_cache_evict(cache, 1, nullptr),
                 ATTNC_INVALID_ARGUMENT,
                 "cache is not a live attnc_radix_cache");
    attnc_scheduler_config config;
    attnc_scheduler_config_init(&config);
    attnc_scheduler scheduler = nullptr;
    EXPECT_ERROR(attnc_scheduler_create(&config, s.pool, cache, &scheduler),
                 ATTNC_INVALID_ARGUMENT,
                 "cache is not a live attnc_radix_cache");
  }
  for (attnc_scheduler scheduler : {fakeScheduler, stepAsScheduler}) {
    EXPECT_ERROR(attnc_scheduler_destroy(scheduler), ATTNC_INVALID_ARGUMENT,
                 "scheduler is not a live attnc_scheduler");
    std::vector<int32_t> prompt = range(1, 3);
    EXPECT_ERROR(add(scheduler, 1, prompt, 1), ATTNC_INVALID_ARGUMENT,
                 "scheduler is not a live attnc_scheduler");
    attnc_step made = nullptr;
    EXPECT_ERROR(attnc_scheduler_step(scheduler, &made), ATTNC_INVALID_ARGUMENT,
                 "scheduler is not a live attnc_scheduler");
    EXPECT_EQ(made, nullptr);
    EXPECT_ERROR(
        attnc_scheduler_commit(scheduler, nullptr, 0, nullptr, nullptr),
        ATTNC_INVALID_ARGUMENT, "scheduler is not a live attnc_scheduler");
    EXPECT_ERROR(attnc_scheduler_abort(scheduler, 1), ATTNC_INVALID_ARGUMENT,
                 "scheduler is not a live attnc_scheduler");
    EXPECT_EQ(attnc_scheduler_idle(scheduler), -1);
    attnc_scheduler_stats stats;
    EXPECT_ERROR(attnc_scheduler_get_stats(scheduler, &stats),
                 ATTNC_INVALID_ARGUMENT,
                 "scheduler is not a live attnc_scheduler");
  }
  for (attnc_step bad : {fakeStep, schedulerAsStep}) {
    attnc_step_info info;
    EXPECT_ERROR(attnc_step_get_info(bad, &info), ATTNC_INVALID_ARGUMENT,
                 "step is not a live attnc_step");
    EXPECT_ERROR(attnc_step_destroy(bad), ATTNC_INVALID_ARGUMENT,
                 "step is not a live attnc_step");
  }
  EXPECT_EQ(local, 0) << "nothing wrote through a made-up handle";

  // NULL: destroying it does nothing; anything else names the argument.
  EXPECT_EQ(attnc_kv_pool_destroy(nullptr), ATTNC_OK);
  EXPECT_EQ(attnc_radix_cache_destroy(nullptr), ATTNC_OK);
  EXPECT_EQ(attnc_scheduler_destroy(nullptr), ATTNC_OK);
  EXPECT_EQ(attnc_step_destroy(nullptr), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_num_pages(nullptr), 0);
  EXPECT_EQ(lastError(), "pool is null");
  EXPECT_EQ(attnc_radix_cache_cached_tokens(nullptr), 0);
  EXPECT_EQ(lastError(), "cache is null");
  EXPECT_EQ(attnc_scheduler_idle(nullptr), -1);
  EXPECT_EQ(lastError(), "scheduler is null");
  attnc_step_info info;
  EXPECT_ERROR(attnc_step_get_info(nullptr, &info), ATTNC_INVALID_ARGUMENT,
               "step is null");
  EXPECT_ERROR(attnc_step_get_info(step, nullptr), ATTNC_INVALID_ARGUMENT,
               "out must not be null");
  EXPECT_ERROR(attnc_scheduler_step(s.scheduler, nullptr),
               ATTNC_INVALID_ARGUMENT, "out must not be null");
  EXPECT_ERROR(attnc_scheduler_get_stats(s.scheduler, nullptr),
               ATTNC_INVALID_ARGUMENT, "out must not be null");
  EXPECT_ERROR(attnc_radix_cache_create(s.pool, nullptr),
               ATTNC_INVALID_ARGUMENT, "out must not be null");

  // Destroyed handles stay dead; new ones never take their values.
  ASSERT_EQ(attnc_step_destroy(step), ATTNC_OK);
  EXPECT_ERROR(attnc_step_destroy(step), ATTNC_INVALID_ARGUMENT,
               "step is not a live attnc_step");
  EXPECT_ERROR(attnc_step_get_info(step, &info), ATTNC_INVALID_ARGUMENT,
               "step is not a live attnc_step");
  attnc_sample none[1] = {};
  ASSERT_EQ(attnc_scheduler_commit(s.scheduler, none, 0, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  attnc_step fresh = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &fresh), ATTNC_OK);
  EXPECT_NE(fresh, step);
  attnc_step_destroy(fresh);
  attnc_scheduler dead = s.scheduler;
  ASSERT_EQ(attnc_scheduler_destroy(dead), ATTNC_OK);
  s.scheduler = nullptr;
  EXPECT_EQ(attnc_scheduler_idle(dead), -1);
  EXPECT_TRUE(contains(lastError(), "scheduler is not a live attnc_scheduler"));
  EXPECT_ERROR(attnc_scheduler_destroy(dead), ATTNC_INVALID_ARGUMENT,
               "scheduler is not a live attnc_scheduler");
}

TEST(ServingCApi, CallsFromSeveralThreadsAreSerialized) {
  Stack s(/*pages=*/32, /*pageSize=*/4);
  for (int64_t id = 0; id < 16; ++id)
    ASSERT_EQ(add(s.scheduler, id,
                  concat(range(1, 8), range(int32_t(50 * id), 5)), 4),
              ATTNC_OK);
  std::atomic<bool> done{false};
  std::atomic<int64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      std::vector<int32_t> query = range(1, 12);
      while (!done) {
        int64_t matched = 0, count = 0;
        EXPECT_EQ(attnc_radix_cache_match_prefix(s.cache, query.data(), 12, 0,
                                                 &matched, nullptr, &count),
                  ATTNC_OK);
        attnc_scheduler_stats stats;
        EXPECT_EQ(attnc_scheduler_get_stats(s.scheduler, &stats), ATTNC_OK);
        EXPECT_LE(attnc_kv_pool_num_free_pages(s.pool), 32);
        ++reads;
      }
    });
  // The readers are running before the scheduler starts.
  while (reads < 3)
    std::this_thread::yield();
  std::map<int64_t, int> sampled;
  for (int i = 0; i < 500 && attnc_scheduler_idle(s.scheduler) == 0; ++i) {
    attnc_step step = nullptr;
    ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
    attnc_step_info info;
    ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
    std::vector<attnc_sample> samples;
    for (int64_t k = 0; k < info.num_samplers; ++k) {
      int64_t id = info.samplers[k];
      samples.push_back({id, sampledToken(id, sampled[id]++), 0});
    }
    ASSERT_EQ(attnc_scheduler_commit(s.scheduler, samples.data(),
                                     int64_t(samples.size()), nullptr, nullptr),
              ATTNC_OK);
    attnc_step_destroy(step);
  }
  done = true;
  for (std::thread &reader : readers)
    reader.join();
  EXPECT_EQ(attnc_scheduler_idle(s.scheduler), 1);
  for (int64_t id = 0; id < 16; ++id)
    EXPECT_EQ(sampled[id], 4);
}

// Counts are checked against what the library knows before an array is
// read that far: each call below hands a short array and a count far past
// it, which a copy first would read out of bounds (ASan's catch).
TEST(ServingCApi, CountsAreCheckedBeforeArraysAreRead) {
  Stack s(/*pages=*/8, /*pageSize=*/4);
  std::vector<int32_t> four = range(1, 4);
  attnc_request request;
  attnc_request_init(&request);
  request.id = 1;
  request.prompt = four.data();
  request.prompt_len = int64_t(1) << 31;
  EXPECT_ERROR(attnc_scheduler_add(s.scheduler, &request),
               ATTNC_INVALID_ARGUMENT,
               "request 1: prompt (2147483648 tokens) and max_tokens (1) "
               "exceed 2147483647 positions");
  // Within int32 positions but past the pool: the same OutOfMemory add
  // gives, before the copy.
  request.prompt_len = 100;
  EXPECT_ERROR(attnc_scheduler_add(s.scheduler, &request), ATTNC_OUT_OF_MEMORY,
               "request 1 needs 26 pages of KV cache (prompt, and max_tokens "
               "for each of its 1 samples), the pool holds 8");
  request.prompt_len = 4;
  request.n = 1 << 20;
  EXPECT_ERROR(attnc_scheduler_add(s.scheduler, &request),
               ATTNC_INVALID_ARGUMENT, "n must be in [1, 256]");
  request.n = 1;
  ASSERT_EQ(attnc_scheduler_add(s.scheduler, &request), ATTNC_OK)
      << lastError();

  // commit reads no more samples than the step awaits.
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
  attnc_sample samples[2] = {{1, 9, 1, 0}, {1, 9, 1, 0}};
  EXPECT_ERROR(attnc_scheduler_commit(s.scheduler, samples, int64_t(1) << 40,
                                      nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "the last step has 1 samplers, got 1099511627776 samples");
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, samples, 2, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT, "the last step has 1 samplers, got 2 samples");
  // Refused commits changed nothing: the right one goes through.
  int64_t finished[1] = {-1}, numFinished = 0;
  ASSERT_EQ(
      attnc_scheduler_commit(s.scheduler, samples, 1, finished, &numFinished),
      ATTNC_OK)
      << lastError();
  EXPECT_EQ(numFinished, 1);
  EXPECT_EQ(finished[0], 1);
  attnc_step_destroy(step);
  EXPECT_EQ(attnc_radix_cache_cached_tokens(s.cache), 4);

  // match_prefix reads tokens only as far as the tree matches: the first
  // page matches, the second does not, and nothing past it is read.
  std::vector<int32_t> query = concat(range(1, 4), range(900, 4));
  int64_t matched = -1, count = -1;
  ASSERT_EQ(attnc_radix_cache_match_prefix(s.cache, query.data(),
                                           int64_t(1) << 40, 0, &matched,
                                           nullptr, &count),
            ATTNC_OK)
      << lastError();
  EXPECT_EQ(matched, 4);
  EXPECT_EQ(count, 1);

  // Appends are rows of one step, counted in int32.
  EXPECT_ERROR(attnc_kv_pool_append_slots(s.pool, 16, 16, 128, 128, 16,
                                          int64_t(1) << 31, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "tokens must be at most 2147483647 (a step's int32 qo_indptr), "
               "got 2147483648");
}

// A commit refused for its samples leaves the C scheduler in step with a
// C++ one that never saw it.
TEST(ServingCApi, ARefusedCommitChangesNothing) {
  Stack s(/*pages=*/16, /*pageSize=*/4);
  auto pool = attnc::PagedKVPool::create([] {
    attnc::PoolConfig config;
    config.numPages = 16;
    config.pageSize = 4;
    config.memory = attnc::PoolMemory::AccountingOnly;
    return config;
  }());
  ASSERT_TRUE(pool.ok());
  attnc::RadixCache cache(**pool);
  attnc::Scheduler twin(attnc::SchedulerConfig{}, **pool, cache);
  for (int64_t id = 1; id <= 2; ++id) {
    std::vector<int32_t> prompt = range(int32_t(10 * id), 6);
    ASSERT_EQ(add(s.scheduler, id, prompt, 3, 0, 0, id == 1 ? 2 : 1), ATTNC_OK)
        << lastError();
    attnc::Request request;
    request.id = id;
    request.prompt = prompt;
    request.maxTokens = 3;
    request.n = id == 1 ? 2 : 1;
    ASSERT_TRUE(twin.add(request).ok());
  }
  for (int round = 0; round < 3; ++round) {
    attnc_step step = nullptr;
    ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
    attnc::StepStats got = readStep(step);
    attnc::StatusOr<attnc::StepStats> want = twin.step();
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(got.batch.requests, want->batch.requests);
    EXPECT_EQ(got.batch.slotMapping, want->batch.slotMapping);
    EXPECT_EQ(got.batch.pageTable.indices, want->batch.pageTable.indices);
    std::vector<attnc_sample> samples;
    std::vector<attnc::Sample> twinSamples;
    for (size_t k = 0; k < want->batch.samplers.size(); ++k) {
      int32_t token = int32_t(1000 + 10 * round + k);
      samples.push_back(
          {want->batch.samplers[k], token, 0, want->batch.samplerBranches[k]});
      twinSamples.push_back({want->batch.samplers[k],
                             want->batch.samplerBranches[k], token, false});
    }
    ASSERT_FALSE(samples.empty());
    // Too many, a bad flag at the end, a wrong branch: each refused whole.
    std::vector<attnc_sample> more = samples;
    more.push_back(samples.back());
    EXPECT_EQ(attnc_scheduler_commit(s.scheduler, more.data(),
                                     int64_t(more.size()), nullptr, nullptr),
              ATTNC_INVALID_ARGUMENT);
    std::vector<attnc_sample> badFlag = samples;
    badFlag.back().stop = 7;
    EXPECT_ERROR(attnc_scheduler_commit(s.scheduler, badFlag.data(),
                                        int64_t(badFlag.size()), nullptr,
                                        nullptr),
                 ATTNC_INVALID_ARGUMENT, "].stop must be 0 or 1, got 7");
    std::vector<attnc_sample> badBranch = samples;
    badBranch.back().branch += 5;
    EXPECT_EQ(attnc_scheduler_commit(s.scheduler, badBranch.data(),
                                     int64_t(badBranch.size()), nullptr,
                                     nullptr),
              ATTNC_INVALID_ARGUMENT);
    ASSERT_EQ(attnc_scheduler_commit(s.scheduler, samples.data(),
                                     int64_t(samples.size()), nullptr, nullptr),
              ATTNC_OK)
        << lastError();
    ASSERT_TRUE(twin.commit(twinSamples).ok());
    EXPECT_EQ(attnc_kv_pool_num_free_pages(s.pool), (*pool)->numFreePages());
    EXPECT_EQ(attnc_radix_cache_evictable_tokens(s.cache),
              cache.evictableSize());
    attnc_step_destroy(step);
  }
}

// A pool of layers through C: one layer by default, each layer's caches
// one after the other, appends into one layer, copies into every layer, and
// errors for a layer or page outside the pool.
TEST(ServingCApi, APoolOfLayersAppendsAndCopiesEveryLayer) {
  attnc_kv_pool_config config;
  attnc_kv_pool_config_init(&config);
  EXPECT_EQ(config.num_layers, 1);
  const int64_t pages = 4, pageSize = 2, heads = 1, dim = 4, layers = 3;
  config.num_pages = pages;
  config.page_size = pageSize;
  config.num_kv_heads = heads;
  config.head_dim = dim;
  config.dtype = ATTNC_F32;
  config.num_layers = layers;
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&config, &pool), ATTNC_OK) << lastError();
  EXPECT_EQ(attnc_kv_pool_num_layers(pool), layers);
  uint64_t keys0 = 0, values0 = 0;
  ASSERT_EQ(attnc_kv_pool_layer_caches(pool, 0, &keys0, &values0), ATTNC_OK);
  EXPECT_EQ(keys0, attnc_kv_pool_key_cache(pool));
  EXPECT_EQ(values0, attnc_kv_pool_value_cache(pool));
  std::vector<float *> keyCaches, valueCaches;
  for (int64_t layer = 0; layer < layers; ++layer) {
    uint64_t k = 0, v = 0;
    ASSERT_EQ(attnc_kv_pool_layer_caches(pool, layer, &k, &v), ATTNC_OK);
    EXPECT_GT(v, k);
    if (layer > 0)
      EXPECT_GT(k, reinterpret_cast<uint64_t>(valueCaches.back()));
    keyCaches.push_back(reinterpret_cast<float *>(k));
    valueCaches.push_back(reinterpret_cast<float *>(v));
  }
  EXPECT_ERROR(attnc_kv_pool_layer_caches(pool, 3, &keys0, nullptr),
               ATTNC_INVALID_ARGUMENT, "layer 3 is not in the pool's 3 layers");
  EXPECT_ERROR(attnc_kv_pool_layer_caches(pool, -1, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "layer -1 is not in the pool's 3 layers");

  // Layer l's token at slot 1 (page 0): values 10 l + e.
  int64_t slot = 1;
  auto address = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::vector<float> k(dim), v(dim);
    for (int64_t e = 0; e < dim; ++e) {
      k[size_t(e)] = float(10 * layer + e);
      v[size_t(e)] = -float(10 * layer + e);
    }
    ASSERT_EQ(attnc_kv_pool_append_layer_slots(pool, layer, address(k.data()),
                                               address(v.data()), dim, dim,
                                               address(&slot), 1, nullptr),
              ATTNC_OK)
        << lastError();
  }
  std::vector<float> row(dim, 7.0f);
  EXPECT_ERROR(attnc_kv_pool_append_layer_slots(pool, 3, address(row.data()),
                                                address(row.data()), dim, dim,
                                                address(&slot), 1, nullptr),
               ATTNC_INVALID_ARGUMENT, "layer 3 is not in the pool's 3 layers");
  EXPECT_ERROR(attnc_kv_pool_append_layer_slots(
                   pool, 0, address(row.data()), address(row.data()), dim, dim,
                   address(&slot), int64_t(1) << 40, nullptr),
               ATTNC_INVALID_ARGUMENT, "tokens must be at most 2147483647");
  // append_slots is layer 0's.
  int64_t slot2 = 2;
  ASSERT_EQ(attnc_kv_pool_append_slots(pool, address(row.data()),
                                       address(row.data()), dim, dim,
                                       address(&slot2), 1, nullptr),
            ATTNC_OK);
  EXPECT_EQ(keyCaches[0][2 * dim], 7.0f);
  EXPECT_EQ(keyCaches[1][2 * dim], 0.0f);

  // Page 0 over page 3, then page 3 over page 2, in every layer.
  ASSERT_EQ(attnc_kv_pool_set_stream(pool, nullptr), ATTNC_OK);
  int32_t copies[] = {0, 3, 3, 2};
  ASSERT_EQ(attnc_kv_pool_copy_pages(pool, copies, 2, nullptr), ATTNC_OK)
      << lastError();
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int64_t page : {3, 2})
      for (int64_t e = 0; e < dim; ++e) {
        size_t at = size_t((page * pageSize + 1) * dim + e);
        EXPECT_EQ(keyCaches[size_t(layer)][at], float(10 * layer + e));
        EXPECT_EQ(valueCaches[size_t(layer)][at], -float(10 * layer + e));
      }
  int32_t outside[] = {1, 2, 0, 4};
  keyCaches[1][2 * pageSize * dim] = 5.0f;
  EXPECT_ERROR(attnc_kv_pool_copy_pages(pool, outside, 2, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "copy 1 names page 4, which is not in the pool of 4 pages");
  EXPECT_EQ(keyCaches[1][2 * pageSize * dim], 5.0f) << "nothing copied";
  EXPECT_ERROR(attnc_kv_pool_copy_pages(pool, nullptr, 1, nullptr),
               ATTNC_INVALID_ARGUMENT, "copies must be an array");
  EXPECT_ERROR(attnc_kv_pool_copy_pages(pool, copies, -1, nullptr),
               ATTNC_INVALID_ARGUMENT, "copies must be an array");
  EXPECT_ERROR(attnc_kv_pool_copy_pages(pool, copies, 17, nullptr),
               ATTNC_INVALID_ARGUMENT, "num_copies must be at most 16");
  EXPECT_EQ(attnc_kv_pool_copy_pages(pool, nullptr, 0, nullptr), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);

  // A dead handle.
  EXPECT_EQ(attnc_kv_pool_num_layers(pool), 0);
  EXPECT_ERROR(attnc_kv_pool_layer_caches(pool, 0, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT, "attnc_kv_pool");
  EXPECT_ERROR(attnc_kv_pool_copy_pages(pool, copies, 1, nullptr),
               ATTNC_INVALID_ARGUMENT, "attnc_kv_pool");
  EXPECT_ERROR(attnc_kv_pool_set_stream(pool, nullptr), ATTNC_INVALID_ARGUMENT,
               "attnc_kv_pool");
  EXPECT_ERROR(
      attnc_kv_pool_append_layer_slots(pool, 0, 0, 0, dim, dim, 0, 0, nullptr),
      ATTNC_INVALID_ARGUMENT, "attnc_kv_pool");
}

// The step after a fork's commit lists its copies: the prompt's partial
// page over each new branch's own, as (source, destination) pairs; the
// step after that lists none.
TEST(ServingCApi, AStepListsTheForksPageCopies) {
  Stack c(32);
  ASSERT_EQ(add(c.scheduler, 9, range(1, 6), 3, 0, 0, /*n=*/3), ATTNC_OK)
      << lastError();
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(c.scheduler, &step), ATTNC_OK);
  attnc_step_info info;
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  EXPECT_EQ(info.num_page_copies, 0);
  EXPECT_EQ(info.page_copies, nullptr);
  ASSERT_EQ(info.num_samplers, 3);
  std::vector<attnc_sample> samples(3);
  for (int32_t b = 0; b < 3; ++b)
    samples[size_t(b)] = {9, 100 + b, 0, b};
  ASSERT_EQ(attnc_step_destroy(step), ATTNC_OK);
  ASSERT_EQ(
      attnc_scheduler_commit(c.scheduler, samples.data(), 3, nullptr, nullptr),
      ATTNC_OK)
      << lastError();
  ASSERT_EQ(attnc_scheduler_step(c.scheduler, &step), ATTNC_OK);
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  ASSERT_EQ(info.num_requests, 3);
  std::map<int32_t, int32_t> secondPage; // branch -> its page 1
  for (int64_t r = 0; r < 3; ++r)
    secondPage[info.branches[r]] = info.page_indices[info.page_indptr[r] + 1];
  ASSERT_EQ(info.num_page_copies, 2);
  std::vector<int32_t> pairs(info.page_copies, info.page_copies + 4);
  EXPECT_EQ(pairs, (std::vector<int32_t>{secondPage[0], secondPage[1],
                                         secondPage[0], secondPage[2]}));
  ASSERT_EQ(attnc_step_destroy(step), ATTNC_OK);
  for (int32_t b = 0; b < 3; ++b)
    samples[size_t(b)] = {9, 200 + b, 0, b};
  ASSERT_EQ(
      attnc_scheduler_commit(c.scheduler, samples.data(), 3, nullptr, nullptr),
      ATTNC_OK);
  ASSERT_EQ(attnc_scheduler_step(c.scheduler, &step), ATTNC_OK);
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  EXPECT_EQ(info.num_page_copies, 0) << "reported once";
  ASSERT_EQ(attnc_step_destroy(step), ATTNC_OK);
}

TEST(ServingCApi, CommitArraysTakesTheStepsOwnArraysAndChecksItsOwn) {
  Stack s(/*pages=*/16, /*pageSize=*/4);
  ASSERT_EQ(add(s.scheduler, 1, range(1, 5), 4), ATTNC_OK);
  ASSERT_EQ(add(s.scheduler, 2, range(40, 6), 4), ATTNC_OK);
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK) << lastError();
  attnc_step_info info;
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  ASSERT_EQ(info.num_samplers, 2);
  int64_t requests[2] = {1, 2};
  int32_t tokens[2] = {500, 501}, stops[2] = {0, 2}, branches[2] = {0, 1};
  EXPECT_ERROR(attnc_scheduler_commit_arrays(s.scheduler, -1, requests, nullptr,
                                             tokens, nullptr, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "num_samples must not be negative, got -1");
  EXPECT_ERROR(attnc_scheduler_commit_arrays(s.scheduler, 2, nullptr, nullptr,
                                             tokens, nullptr, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "requests must be an array of num_samples (2) entries, got "
               "null");
  EXPECT_ERROR(attnc_scheduler_commit_arrays(s.scheduler, 2, requests, nullptr,
                                             nullptr, nullptr, nullptr,
                                             nullptr),
               ATTNC_INVALID_ARGUMENT,
               "tokens must be an array of num_samples (2) entries, got null");
  EXPECT_ERROR(attnc_scheduler_commit_arrays(s.scheduler, 2, requests, nullptr,
                                             tokens, stops, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT, "stops[1] must be 0 or 1, got 2");
  // The scheduler's count bounds what is read, before any array.
  EXPECT_ERROR(attnc_scheduler_commit_arrays(s.scheduler, int64_t(1) << 40,
                                             requests, nullptr, tokens, nullptr,
                                             nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "the last step has 2 samplers, got 1099511627776 samples");
  EXPECT_ERROR(attnc_scheduler_commit_arrays(s.scheduler, 2, requests, branches,
                                             tokens, nullptr, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "sample 1 is for request 2 branch 1, the step's sampler 1 is "
               "request 2");
  EXPECT_ERROR(attnc_scheduler_commit_arrays(nullptr, 2, requests, nullptr,
                                             tokens, nullptr, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT, "scheduler is null");
  // Nothing refused changed anything: the step's own samplers and branches
  // commit, and request 2 stops.
  stops[1] = 1;
  int64_t finished[2] = {-1, -1}, numFinished = -1;
  ASSERT_EQ(attnc_scheduler_commit_arrays(
                s.scheduler, info.num_samplers, info.samplers,
                info.sampler_branches, tokens, stops, finished, &numFinished),
            ATTNC_OK)
      << lastError();
  EXPECT_EQ(numFinished, 1);
  EXPECT_EQ(finished[0], 2);
  attnc_step next = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &next), ATTNC_OK) << lastError();
  ASSERT_EQ(attnc_step_get_info(next, &info), ATTNC_OK);
  ASSERT_EQ(info.num_tokens, 1);
  EXPECT_EQ(info.tokens[0], 500) << "the decode feeds the committed token";
  ASSERT_NE(info.token_from_sample, nullptr);
  EXPECT_EQ(info.token_from_sample[0], -1) << "its token is in `tokens`";
  attnc_step_destroy(step);
  attnc_step_destroy(next);
}

TEST(ServingCApi, AStepOfNoSamplersCommitsNoArrays) {
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  config.token_budget = 2; // a prompt of 5 takes three steps
  Stack s(/*pages=*/16, /*pageSize=*/4, &config);
  ASSERT_EQ(add(s.scheduler, 1, range(1, 5), 2), ATTNC_OK);
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK) << lastError();
  attnc_step_info info;
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  EXPECT_EQ(info.num_samplers, 0);
  EXPECT_EQ(info.num_tokens, 2);
  EXPECT_EQ(attnc_scheduler_commit_arrays(s.scheduler, 0, nullptr, nullptr,
                                          nullptr, nullptr, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  attnc_step_destroy(step);
}

TEST(ServingCApi, ClipMaxNewTokensBoundsWhatAdmissionReserves) {
  // Eight prompts of a page asking for 200 tokens each: admission reserves
  // ~0.7 x 200 tokens of each unclipped (36 pages, one fits in 64) and
  // ~0.7 x 8 clipped to 8 (3 pages, all fit).
  auto admittedWithClip = [](int64_t clip) {
    attnc_scheduler_config config;
    attnc_scheduler_config_init(&config);
    if (clip)
      config.clip_max_new_tokens = clip;
    Stack s(/*pages=*/64, /*pageSize=*/4, &config);
    for (int64_t id = 0; id < 8; ++id)
      EXPECT_EQ(add(s.scheduler, id, range(int32_t(10 * id + 1), 4), 200),
                ATTNC_OK)
          << lastError();
    attnc_step step = nullptr;
    EXPECT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK)
        << lastError();
    attnc_step_info info;
    EXPECT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
    int64_t admitted = info.num_admitted;
    attnc_step_destroy(step);
    return admitted;
  };
  EXPECT_EQ(admittedWithClip(0), 1);
  EXPECT_EQ(admittedWithClip(8), 8);
}

TEST(ServingCApi, DfsWeightWindowReachesTheOrder) {
  // A cached prefix two waiting requests extend, and before them one that
  // shares nothing: DFS-weight over the whole queue admits the prefix's
  // first (deeper matches first); over a window of one request, the first
  // to arrive is all it orders.
  auto firstAdmitted = [](int64_t window) {
    attnc_scheduler_config config;
    attnc_scheduler_config_init(&config);
    config.policy = ATTNC_POLICY_DFS_WEIGHT;
    config.max_running = 1;
    config.dfs_weight_window = window;
    Stack s(/*pages=*/64, /*pageSize=*/4, &config);
    std::vector<int32_t> prefix = range(1, 8);
    EXPECT_EQ(add(s.scheduler, 0, concat(prefix, {900}), 1), ATTNC_OK);
    attnc_step step = nullptr;
    EXPECT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
    attnc_step_destroy(step);
    attnc_sample sample = {0, 7, 1, 0};
    EXPECT_EQ(attnc_scheduler_commit(s.scheduler, &sample, 1, nullptr, nullptr),
              ATTNC_OK)
        << lastError();
    EXPECT_EQ(attnc_radix_cache_cached_tokens(s.cache), 8);
    EXPECT_EQ(add(s.scheduler, 1, range(500, 6), 1), ATTNC_OK);
    EXPECT_EQ(add(s.scheduler, 2, concat(prefix, range(600, 3)), 1), ATTNC_OK);
    EXPECT_EQ(add(s.scheduler, 3, concat(prefix, range(700, 3)), 1), ATTNC_OK);
    EXPECT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK)
        << lastError();
    attnc_step_info info;
    EXPECT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
    int64_t first = info.num_admitted == 1 ? info.admitted[0] : -1;
    attnc_step_destroy(step);
    return first;
  };
  EXPECT_EQ(firstAdmitted(0), 2);
  EXPECT_EQ(firstAdmitted(1), 1);
}

// How many steps may await their samples, and which one a commit takes, are
// the scheduler's rules: the C API forwards them. A step formed over an
// uncommitted one names, for each decode, the sampler whose sample it feeds.
TEST(ServingCApi, OverlappedStepsFollowTheSchedulersRules) {
  Stack s(/*pages=*/16, /*pageSize=*/4);
  ASSERT_EQ(add(s.scheduler, 1, range(1, 5), 4), ATTNC_OK);
  ASSERT_EQ(add(s.scheduler, 2, range(40, 6), 4), ATTNC_OK);
  attnc_step first = nullptr, second = nullptr, third = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &first), ATTNC_OK) << lastError();
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &second), ATTNC_OK)
      << lastError();
  attnc_step_info info;
  ASSERT_EQ(attnc_step_get_info(second, &info), ATTNC_OK);
  ASSERT_EQ(info.num_decodes, 2);
  ASSERT_NE(info.token_from_sample, nullptr);
  for (int64_t row = 0; row < 2; ++row) {
    EXPECT_EQ(info.token_from_sample[row], row) << "first's sampler " << row;
    EXPECT_EQ(info.tokens[row], -1) << "a placeholder";
  }
  EXPECT_ERROR(attnc_scheduler_step(s.scheduler, &third),
               ATTNC_INVALID_ARGUMENT, "two steps await their samples");
  EXPECT_EQ(third, nullptr);
  attnc_sample samples[2] = {{1, 500, 0, 0}, {2, 501, 0, 0}};
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, samples, 1, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT,
      "the oldest of 2 uncommitted steps has 2 samplers, got 1 samples");
  ASSERT_EQ(attnc_scheduler_commit(s.scheduler, samples, 2, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  // The second step's samples, through its own arrays.
  int32_t tokens[2] = {502, 503};
  ASSERT_EQ(attnc_scheduler_commit_arrays(s.scheduler, info.num_samplers,
                                          info.samplers, info.sampler_branches,
                                          tokens, nullptr, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &third), ATTNC_OK) << lastError();
  ASSERT_EQ(attnc_step_get_info(third, &info), ATTNC_OK);
  ASSERT_EQ(info.num_tokens, 2);
  EXPECT_EQ(info.tokens[0], 502);
  EXPECT_EQ(info.token_from_sample[0], -1);
  attnc_step_destroy(first);
  attnc_step_destroy(second);
  attnc_step_destroy(third);
}

// A cache with a host tier: eviction offloads, the next admission of the
// same prefix loads it back, and the step lists both as triples, the
// stats the tokens loaded.
TEST(ServingCApi, AHostTierLoadsBackWhatEvictionOffloaded) {
  attnc_kv_pool_config poolConfig = accountingConfig(8, 4);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&poolConfig, &pool), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  ASSERT_EQ(attnc_radix_cache_create_with_host_tier(pool, 16, &cache), ATTNC_OK)
      << lastError();
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  attnc_scheduler scheduler = nullptr;
  ASSERT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler), ATTNC_OK);
  auto runOne = [&](int64_t id, const std::vector<int32_t> &prompt) {
    ASSERT_EQ(add(scheduler, id, prompt, 1), ATTNC_OK) << lastError();
    attnc_step step = nullptr;
    ASSERT_EQ(attnc_scheduler_step(scheduler, &step), ATTNC_OK);
    attnc_step_info info;
    ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
    attnc_sample sample = {id, 7, 0, 0};
    ASSERT_EQ(attnc_scheduler_commit(scheduler, &sample, 1, nullptr, nullptr),
              ATTNC_OK);
    if (id == 2) {
      // 4 offloads (the eviction below), then 4 loads of the same host
      // pages into the request's first 4 pages.
      ASSERT_EQ(info.num_page_transfers, 8);
      for (int64_t k = 0; k < 4; ++k) {
        const int32_t *offload = info.page_transfers + 3 * k;
        const int32_t *load = info.page_transfers + 3 * (k + 4);
        EXPECT_EQ(offload[2], ATTNC_TRANSFER_OFFLOAD);
        EXPECT_EQ(load[2], ATTNC_TRANSFER_LOAD);
        EXPECT_EQ(load[0], offload[0]);
        EXPECT_EQ(load[1], info.page_indices[k]);
      }
      EXPECT_EQ(info.prefill_tokens, 4);
    } else {
      EXPECT_EQ(info.num_page_transfers, 0);
      EXPECT_EQ(info.page_transfers, nullptr);
    }
    ASSERT_EQ(attnc_step_destroy(step), ATTNC_OK);
  };
  runOne(1, range(1, 17));
  int64_t evicted = 0;
  ASSERT_EQ(attnc_radix_cache_evict(cache, INT64_MAX, &evicted), ATTNC_OK);
  EXPECT_EQ(evicted, 16);
  EXPECT_EQ(attnc_radix_cache_host_tokens(cache), 16);
  EXPECT_EQ(attnc_radix_cache_cached_tokens(cache), 0);
  runOne(2, concat(range(1, 16), range(100, 4)));
  EXPECT_EQ(attnc_radix_cache_host_tokens(cache), 0);
  attnc_scheduler_stats stats;
  ASSERT_EQ(attnc_scheduler_get_stats(scheduler, &stats), ATTNC_OK);
  EXPECT_EQ(stats.host_loaded_tokens, 16);
  EXPECT_EQ(stats.cached_tokens, 16);
  EXPECT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
  EXPECT_EQ(attnc_radix_cache_destroy(cache), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
}

namespace {

/// Takes a cache's transfers as (host page, device page, direction)
/// triples, checking that the count asked first is what was taken.
std::vector<std::array<int32_t, 3>> takeTransfers(attnc_radix_cache cache) {
  int64_t count = -1;
  EXPECT_EQ(attnc_radix_cache_take_transfers(cache, nullptr, &count), ATTNC_OK)
      << lastError();
  std::vector<int32_t> flat(size_t(3 * count + 1), -1);
  int64_t taken = count;
  EXPECT_EQ(attnc_radix_cache_take_transfers(cache, flat.data(), &taken),
            ATTNC_OK)
      << lastError();
  EXPECT_EQ(taken, count);
  EXPECT_EQ(flat[size_t(3 * count)], -1) << "written past the transfers";
  std::vector<std::array<int32_t, 3>> triples;
  for (int64_t k = 0; k < taken; ++k)
    triples.push_back({flat[size_t(3 * k)], flat[size_t(3 * k + 1)],
                       flat[size_t(3 * k + 2)]});
  return triples;
}

int64_t pendingTransfers(attnc_radix_cache cache) {
  int64_t count = -1;
  EXPECT_EQ(attnc_radix_cache_take_transfers(cache, nullptr, &count), ATTNC_OK)
      << lastError();
  return count;
}

/// The triples of a step's page_transfers.
std::vector<std::array<int32_t, 3>> stepTransfers(const attnc_step_info &info) {
  std::vector<std::array<int32_t, 3>> triples;
  for (int64_t k = 0; k < info.num_page_transfers; ++k)
    triples.push_back({info.page_transfers[3 * k],
                       info.page_transfers[3 * k + 1],
                       info.page_transfers[3 * k + 2]});
  return triples;
}

/// Steps `scheduler` once with request `id` of `prompt` added, commits its
/// sample (finishing it) and returns the step's transfers.
std::vector<std::array<int32_t, 3>>
serveOne(attnc_scheduler scheduler, int64_t id,
         const std::vector<int32_t> &prompt) {
  EXPECT_EQ(add(scheduler, id, prompt, 1), ATTNC_OK) << lastError();
  attnc_step step = nullptr;
  EXPECT_EQ(attnc_scheduler_step(scheduler, &step), ATTNC_OK) << lastError();
  attnc_step_info info;
  EXPECT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  std::vector<std::array<int32_t, 3>> transfers = stepTransfers(info);
  attnc_sample sample = {id, 7, 0, 0};
  EXPECT_EQ(attnc_scheduler_commit(scheduler, &sample, 1, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  EXPECT_EQ(attnc_step_destroy(step), ATTNC_OK);
  return transfers;
}

} // namespace

// A cache no scheduler serves hands its tier's transfers to its user, who
// takes them; one a scheduler serves keeps them for its steps, and what no
// one took goes to the first step of the next scheduler over it.
TEST(ServingCApi, TheTransfersGoToWhoeverDrivesTheCache) {
  attnc_kv_pool_config poolConfig = accountingConfig(8, 4);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&poolConfig, &pool), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  ASSERT_EQ(attnc_radix_cache_create_with_host_tier(pool, 16, &cache),
            ATTNC_OK);
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  attnc_scheduler scheduler = nullptr;
  ASSERT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler), ATTNC_OK);
  EXPECT_TRUE(serveOne(scheduler, 1, range(1, 17)).empty());
  ASSERT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
  EXPECT_EQ(pendingTransfers(cache), 0);

  // Served by no one: the user evicts and takes the four offloads.
  int32_t pages[4];
  int64_t matched = 0, numPages = 4;
  ASSERT_EQ(attnc_radix_cache_match_prefix(cache, range(1, 16).data(), 16, 0,
                                           &matched, pages, &numPages),
            ATTNC_OK);
  ASSERT_EQ(numPages, 4);
  int64_t evicted = 0;
  ASSERT_EQ(attnc_radix_cache_evict(cache, INT64_MAX, &evicted), ATTNC_OK);
  EXPECT_EQ(evicted, 16);
  EXPECT_EQ(pendingTransfers(cache), 4);
  EXPECT_EQ(pendingTransfers(cache), 4) << "a count takes nothing";
  std::vector<std::array<int32_t, 3>> offloads = takeTransfers(cache);
  ASSERT_EQ(offloads.size(), 4u);
  std::set<int32_t> hostPages, devicePages;
  for (const std::array<int32_t, 3> &t : offloads) {
    EXPECT_EQ(t[2], ATTNC_TRANSFER_OFFLOAD);
    EXPECT_TRUE(t[0] >= 0 && t[0] < 16) << t[0];
    hostPages.insert(t[0]);
    devicePages.insert(t[1]);
  }
  EXPECT_EQ(hostPages.size(), 4u);
  EXPECT_EQ(devicePages, std::set<int32_t>(pages, pages + 4))
      << "the pages the prefix was in";
  EXPECT_EQ(pendingTransfers(cache), 0) << "taken, they are forgotten";
  EXPECT_TRUE(takeTransfers(cache).empty());

  // A scheduler over it again: its first step has only the loads of what
  // the user took, then a direct eviction is its steps' to take.
  ASSERT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler), ATTNC_OK);
  std::vector<std::array<int32_t, 3>> loads =
      serveOne(scheduler, 2, concat(range(1, 16), range(100, 4)));
  ASSERT_EQ(loads.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(loads[k][0], offloads[k][0]);
    EXPECT_EQ(loads[k][2], ATTNC_TRANSFER_LOAD);
  }
  ASSERT_EQ(attnc_radix_cache_evict(cache, 8, &evicted), ATTNC_OK);
  EXPECT_EQ(evicted, 8);
  EXPECT_EQ(pendingTransfers(cache), 2) << "counted while served";
  int32_t room[6];
  int64_t capacity = 2;
  EXPECT_ERROR(attnc_radix_cache_take_transfers(cache, room, &capacity),
               ATTNC_INVALID_ARGUMENT,
               "cache serves a live attnc_scheduler, whose steps take its "
               "transfers");
  std::vector<std::array<int32_t, 3>> next =
      serveOne(scheduler, 3, range(500, 5));
  ASSERT_EQ(next.size(), 2u) << "the eviction's offloads";
  for (const std::array<int32_t, 3> &t : next)
    EXPECT_EQ(t[2], ATTNC_TRANSFER_OFFLOAD);
  EXPECT_EQ(pendingTransfers(cache), 0);

  // Untaken when a scheduler starts serving the cache: its first step has
  // them, before anything it moves itself.
  ASSERT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
  ASSERT_EQ(attnc_radix_cache_evict(cache, INT64_MAX, &evicted), ATTNC_OK);
  int64_t untaken = pendingTransfers(cache);
  EXPECT_EQ(untaken * 4, evicted);
  ASSERT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler), ATTNC_OK);
  std::vector<std::array<int32_t, 3>> first =
      serveOne(scheduler, 4, range(900, 5));
  EXPECT_EQ(int64_t(first.size()), untaken);
  for (const std::array<int32_t, 3> &t : first)
    EXPECT_EQ(t[2], ATTNC_TRANSFER_OFFLOAD);
  EXPECT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
  EXPECT_EQ(attnc_radix_cache_destroy(cache), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
}

TEST(ServingCApi, TakeTransfersIsChecked) {
  attnc_kv_pool_config poolConfig = accountingConfig(8, 4);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&poolConfig, &pool), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  ASSERT_EQ(attnc_radix_cache_create_with_host_tier(pool, 16, &cache),
            ATTNC_OK);
  int32_t room[12];
  EXPECT_ERROR(attnc_radix_cache_take_transfers(cache, room, nullptr),
               ATTNC_INVALID_ARGUMENT, "num_transfers must not be null");
  EXPECT_ERROR(attnc_radix_cache_take_transfers(cache, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT, "num_transfers must not be null");
  int64_t capacity = -1;
  EXPECT_ERROR(attnc_radix_cache_take_transfers(cache, room, &capacity),
               ATTNC_INVALID_ARGUMENT,
               "num_transfers (the capacity of transfers) must not be "
               "negative, got -1");
  EXPECT_EQ(capacity, -1) << "refused before anything is written";
  // Without an array the capacity is not read.
  capacity = -1;
  EXPECT_EQ(attnc_radix_cache_take_transfers(cache, nullptr, &capacity),
            ATTNC_OK);
  EXPECT_EQ(capacity, 0);
  int local = 0;
  capacity = 4;
  EXPECT_ERROR(
      attnc_radix_cache_take_transfers(
          reinterpret_cast<attnc_radix_cache>(&local), room, &capacity),
      ATTNC_INVALID_ARGUMENT, "cache is not a live attnc_radix_cache");
  EXPECT_ERROR(
      attnc_radix_cache_take_transfers(
          reinterpret_cast<attnc_radix_cache>(pool), nullptr, &capacity),
      ATTNC_INVALID_ARGUMENT, "cache is not a live attnc_radix_cache");

  // Too small an array: the count is set, nothing is taken or written.
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  attnc_scheduler scheduler = nullptr;
  ASSERT_EQ(attnc_scheduler_create(&config, pool, cache, &scheduler), ATTNC_OK);
  serveOne(scheduler, 1, range(1, 17));
  ASSERT_EQ(attnc_scheduler_destroy(scheduler), ATTNC_OK);
  ASSERT_EQ(attnc_radix_cache_evict(cache, INT64_MAX, nullptr), ATTNC_OK);
  std::fill(std::begin(room), std::end(room), -1);
  capacity = 3;
  EXPECT_ERROR(attnc_radix_cache_take_transfers(cache, room, &capacity),
               ATTNC_INVALID_ARGUMENT,
               "transfers has room for 3 transfers, the cache has 4");
  EXPECT_EQ(capacity, 4);
  EXPECT_EQ(std::count(std::begin(room), std::end(room), -1), 12);
  EXPECT_EQ(takeTransfers(cache).size(), 4u);
  // Destroyed, its handle is no cache's.
  ASSERT_EQ(attnc_radix_cache_destroy(cache), ATTNC_OK);
  capacity = 4;
  EXPECT_ERROR(attnc_radix_cache_take_transfers(cache, room, &capacity),
               ATTNC_INVALID_ARGUMENT, "cache is not a live attnc_radix_cache");

  // Without a tier there are none.
  ASSERT_EQ(attnc_radix_cache_create(pool, &cache), ATTNC_OK);
  capacity = 0;
  EXPECT_EQ(attnc_radix_cache_take_transfers(cache, room, &capacity), ATTNC_OK);
  EXPECT_EQ(capacity, 0);
  EXPECT_EQ(attnc_radix_cache_destroy(cache), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
}

TEST(ServingCApi, AHostTierIsChecked) {
  attnc_kv_pool_config poolConfig = accountingConfig(8, 4);
  attnc_kv_pool pool = nullptr;
  ASSERT_EQ(attnc_kv_pool_create(&poolConfig, &pool), ATTNC_OK);
  attnc_radix_cache cache = nullptr;
  for (int64_t pages : {int64_t(0), int64_t(-1), int64_t(INT32_MAX) + 1})
    EXPECT_ERROR(attnc_radix_cache_create_with_host_tier(pool, pages, &cache),
                 ATTNC_INVALID_ARGUMENT,
                 "host_pages must be in [1, 2^31-1], got " +
                     std::to_string(pages));
  EXPECT_ERROR(attnc_radix_cache_create_with_host_tier(pool, 4, nullptr),
               ATTNC_INVALID_ARGUMENT, "out must not be null");
  int local = 0;
  EXPECT_ERROR(attnc_radix_cache_create_with_host_tier(
                   reinterpret_cast<attnc_kv_pool>(&local), 4, &cache),
               ATTNC_INVALID_ARGUMENT, "pool is not a live attnc_kv_pool");
  EXPECT_EQ(attnc_radix_cache_host_tokens(
                reinterpret_cast<attnc_radix_cache>(&local)),
            0);
  ASSERT_EQ(attnc_radix_cache_create(pool, &cache), ATTNC_OK);
  EXPECT_EQ(attnc_radix_cache_host_tokens(cache), 0) << "no tier";
  EXPECT_EQ(attnc_radix_cache_destroy(cache), ATTNC_OK);
  EXPECT_EQ(attnc_kv_pool_destroy(pool), ATTNC_OK);
}

namespace {

/// What a C-driven loop served: each request's accepted output, the steps
/// it took, the drafts it fed and had accepted, and the samples rejected.
struct SpeculativeServed {
  std::map<int64_t, std::vector<int32_t>> outputs;
  int64_t steps = 0, draftsFed = 0, draftsAccepted = 0, rejectedSamples = 0;
};

/// Serves requests 0..5 (prompts sharing a prefix, answers of 3..12 tokens
/// under max_tokens 10) through the C API synchronously with a greedy
/// stand-in target (sampledToken). With `drafts` > 0, each request that
/// sampled is proposed its true next `drafts` tokens (with `corrupt`,
/// those where (id + position) % 3 == 0 off by 7), and the loop verifies
/// greedily: a request's samples after the first that differs from the
/// draft the next row fed are rejected.
SpeculativeServed serveSpeculatively(int64_t drafts, bool corrupt) {
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  config.speculative_tokens = drafts;
  Stack s(64, 4, &config);
  SpeculativeServed served;
  const int64_t maxTokens = 10;
  std::map<int64_t, int64_t> outputLen;
  for (int64_t id = 0; id < 6; ++id) {
    outputLen[id] = 3 + (id * 5) % 10;
    EXPECT_EQ(add(s.scheduler, id,
                  concat(range(1, 6), range(int32_t(10 * id), 3)), maxTokens),
              ATTNC_OK)
        << lastError();
  }
  auto trueToken = [](int64_t id, int64_t n) { return sampledToken(id, n); };
  while (attnc_scheduler_idle(s.scheduler) == 0 && served.steps < 500) {
    ++served.steps;
    attnc_step step = nullptr;
    EXPECT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK)
        << lastError();
    attnc_step_info info;
    EXPECT_EQ(attnc_step_get_info(step, &info), ATTNC_OK) << lastError();
    // Each sampler's output position: a request's samplers are its rows'.
    std::vector<int64_t> requests, positionOf;
    std::vector<int32_t> tokens, stops, rejected, fedDraft;
    std::map<int64_t, int32_t> draftsOf;
    for (int64_t i = 0; i < info.num_requests; ++i) {
      int32_t d = info.num_drafts[i];
      draftsOf[info.requests[i]] = d;
      served.draftsFed += d;
    }
    std::map<int64_t, int64_t> row;
    for (int64_t k = 0; k < info.num_samplers; ++k) {
      int64_t id = info.samplers[k];
      int64_t j = row[id]++;
      int64_t n = int64_t(served.outputs[id].size()) + j;
      requests.push_back(id);
      tokens.push_back(trueToken(id, n));
      stops.push_back(n + 1 >= outputLen[id] ? 1 : 0);
      // The draft the next row fed, if any: rows j + 1 .. d feed drafts.
      int32_t d = draftsOf.count(id) ? draftsOf[id] : 0;
      int32_t sampleRow = info.sample_rows[k];
      fedDraft.push_back(j < d ? info.tokens[sampleRow + 1] : -1);
    }
    // Greedy verification: after the first sample that differs from the
    // next row's draft, the rest of the request's samples are rejected.
    std::map<int64_t, bool> rejecting;
    for (size_t k = 0; k < requests.size(); ++k) {
      int64_t id = requests[k];
      rejected.push_back(rejecting[id] ? 1 : 0);
      served.rejectedSamples += rejected.back();
      if (fedDraft[k] >= 0 && fedDraft[k] != tokens[k])
        rejecting[id] = true;
    }
    std::vector<int64_t> finished(requests.size() + 1);
    int64_t numFinished = 0;
    EXPECT_EQ(attnc_scheduler_commit_verdict_arrays(
                  s.scheduler, int64_t(requests.size()), requests.data(),
                  nullptr, tokens.data(), stops.data(), rejected.data(),
                  finished.data(), &numFinished),
              ATTNC_OK)
        << lastError();
    std::set<int64_t> done(finished.begin(), finished.begin() + numFinished);
    std::set<int64_t> stopped;
    for (size_t k = 0; k < requests.size(); ++k) {
      int64_t id = requests[k];
      if (rejected[k] || stopped.count(id))
        continue;
      if (fedDraft[k] >= 0 && fedDraft[k] == tokens[k] && !stops[k])
        ++served.draftsAccepted;
      served.outputs[id].push_back(tokens[k]);
      if (stops[k])
        stopped.insert(id);
    }
    EXPECT_EQ(attnc_step_destroy(step), ATTNC_OK);
    if (drafts == 0)
      continue;
    // Propose to every request that sampled and runs on.
    for (auto [id, unused] : row) {
      if (done.count(id))
        continue;
      int64_t n = int64_t(served.outputs[id].size());
      std::vector<int32_t> proposal;
      for (int64_t j = 0; j < drafts; ++j) {
        int32_t token = trueToken(id, n + j);
        if (corrupt && (id + n + j) % 3 == 0)
          token += 7;
        proposal.push_back(token);
      }
      EXPECT_EQ(attnc_scheduler_propose(s.scheduler, id, 0, proposal.data(),
                                        int64_t(proposal.size())),
                ATTNC_OK)
          << lastError();
    }
  }
  EXPECT_EQ(attnc_scheduler_idle(s.scheduler), 1);
  EXPECT_EQ(attnc_kv_pool_num_free_pages(s.pool) +
                attnc_radix_cache_evictable_tokens(s.cache) / 4,
            64)
      << "pages leaked";
  return served;
}

} // namespace

// A C loop proposing the true next tokens (some corrupted) and verifying
// greedily outputs what the plain C loop does, in fewer steps.
TEST(ServingCApi, SpeculativeDecodingGivesThePlainOutputs) {
  SpeculativeServed plain = serveSpeculatively(0, false);
  for (int64_t id = 0; id < 6; ++id)
    EXPECT_EQ(plain.outputs[id].size(),
              size_t(std::min<int64_t>(3 + (id * 5) % 10, 10)));
  EXPECT_EQ(plain.draftsFed, 0);
  for (bool corrupt : {false, true}) {
    SCOPED_TRACE(corrupt ? "corrupted drafts" : "true drafts");
    SpeculativeServed speculative = serveSpeculatively(4, corrupt);
    EXPECT_EQ(speculative.outputs, plain.outputs);
    EXPECT_GT(speculative.draftsFed, 0);
    EXPECT_GT(speculative.draftsAccepted, 0);
    EXPECT_LT(speculative.steps, plain.steps);
    if (corrupt)
      EXPECT_GT(speculative.rejectedSamples, 0);
    else
      EXPECT_EQ(speculative.rejectedSamples, 0) << "a true draft was rejected";
  }
}

// propose checks its count and pointer before reading the drafts, then
// leaves the rest to the scheduler; commit checks each verdict's encoding.
TEST(ServingCApi, ProposeAndVerdictsAreChecked) {
  attnc_scheduler_config config;
  attnc_scheduler_config_init(&config);
  config.speculative_tokens = 2;
  Stack s(16, 4, &config);
  ASSERT_EQ(add(s.scheduler, 0, range(100, 4), 20), ATTNC_OK) << lastError();
  int32_t drafts[] = {501, 502, 503};
  EXPECT_ERROR(attnc_scheduler_propose(s.scheduler, 0, 0, drafts, -1),
               ATTNC_INVALID_ARGUMENT,
               "request 0: drafts must be an array of num_drafts "
               "(non-negative) token ids, got -1");
  EXPECT_ERROR(attnc_scheduler_propose(s.scheduler, 0, 0, nullptr, 2),
               ATTNC_INVALID_ARGUMENT,
               "request 0: drafts must be an array of num_drafts "
               "(non-negative) token ids, got 2 and null");
  EXPECT_ERROR(attnc_scheduler_propose(s.scheduler, 0, 0, drafts, 1),
               ATTNC_NOT_FOUND, "request 0 is not running");
  EXPECT_ERROR(attnc_scheduler_propose(nullptr, 0, 0, drafts, 1),
               ATTNC_INVALID_ARGUMENT, "scheduler");
  attnc_step step = nullptr;
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
  ASSERT_EQ(attnc_step_destroy(step), ATTNC_OK);
  attnc_sample prefill{0, 500, 0, 0, 0};
  ASSERT_EQ(attnc_scheduler_commit(s.scheduler, &prefill, 1, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  EXPECT_ERROR(attnc_scheduler_propose(s.scheduler, 0, 0, drafts, 3),
               ATTNC_INVALID_ARGUMENT,
               "request 0 is given 3 drafts, a step verifies at most 2 "
               "(speculativeTokens)");
  // A count past the buffer is refused before anything is read.
  EXPECT_ERROR(
      attnc_scheduler_propose(s.scheduler, 0, 0, drafts, int64_t(1) << 60),
      ATTNC_INVALID_ARGUMENT,
      "request 0 is given 1152921504606846976 drafts, a step "
      "verifies at most 2 (speculativeTokens)");
  EXPECT_EQ(attnc_scheduler_propose(s.scheduler, 0, 0, nullptr, 0), ATTNC_OK)
      << lastError();
  ASSERT_EQ(attnc_scheduler_propose(s.scheduler, 0, 0, drafts, 2), ATTNC_OK)
      << lastError();
  ASSERT_EQ(attnc_scheduler_step(s.scheduler, &step), ATTNC_OK);
  attnc_step_info info;
  ASSERT_EQ(attnc_step_get_info(step, &info), ATTNC_OK);
  ASSERT_EQ(info.num_requests, 1);
  EXPECT_EQ(info.num_drafts[0], 2);
  ASSERT_EQ(info.num_samplers, 3);
  ASSERT_EQ(attnc_step_destroy(step), ATTNC_OK);

  attnc_sample samples[] = {
      {0, 501, 0, 0, 0}, {0, 9, 0, 0, 2}, {0, 9, 0, 0, 1}};
  EXPECT_ERROR(
      attnc_scheduler_commit(s.scheduler, samples, 3, nullptr, nullptr),
      ATTNC_INVALID_ARGUMENT, "samples[1].rejected must be 0 or 1, got 2");
  int64_t requests[] = {0, 0, 0};
  int32_t tokens[] = {501, 9, 9};
  int32_t badRejected[] = {0, 1, -1};
  EXPECT_ERROR(attnc_scheduler_commit_verdict_arrays(
                   s.scheduler, 3, requests, nullptr, tokens, nullptr,
                   badRejected, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT, "rejected[2] must be 0 or 1, got -1");
  // The scheduler's own check of a verdict: the first row is always taken.
  int32_t firstRejected[] = {1, 1, 1};
  EXPECT_ERROR(attnc_scheduler_commit_verdict_arrays(
                   s.scheduler, 3, requests, nullptr, tokens, nullptr,
                   firstRejected, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT,
               "sample 0 rejects the first token of request 0's verification");
  // Without verdicts every token is taken: 9 is not the draft 502 fed.
  EXPECT_ERROR(attnc_scheduler_commit_arrays(s.scheduler, 3, requests, nullptr,
                                             tokens, nullptr, nullptr, nullptr),
               ATTNC_INVALID_ARGUMENT, "where the step fed draft 502");
  samples[1].rejected = 0;
  EXPECT_EQ(attnc_scheduler_commit(s.scheduler, samples, 3, nullptr, nullptr),
            ATTNC_OK)
      << lastError();
  ASSERT_EQ(attnc_scheduler_abort(s.scheduler, 0), ATTNC_OK);
}
