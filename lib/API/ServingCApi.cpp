//===- ServingCApi.cpp - the C API over the serving runtime ---------------===//
//
// attnc_kv_pool, attnc_radix_cache, attnc_scheduler and attnc_step over
// serving/kv, serving/radix and serving/sched, with the handle rules of
// CApiSupport.h.
//
// A cache holds a shared reference to its pool's object and a scheduler to
// its cache's, so the runtime's "a cache must not outlive its pool" holds
// whatever order handles are destroyed in. The runtime's objects are not
// thread-safe and a scheduler changes its pool and cache: every call on a
// pool, a cache or a scheduler takes its pool's one lock. A call finds every
// handle it uses before it takes that lock, so that the last reference to an
// object (whose destructor takes the lock too) is never dropped under it.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc_c.h"

#include "CApiSupport.h"

#include "attnc/device/abi.h"
#include "kv/PagedKVPool.h"
#include "radix/RadixCache.h"
#include "sched/Scheduler.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

using namespace attnc::capi;

#define ATTNC_SAME(c, cpp) static_assert(int(c) == int(cpp), #c " is " #cpp);
ATTNC_SAME(ATTNC_KV_HOST, attnc::PoolMemory::Host)
ATTNC_SAME(ATTNC_KV_DEVICE, attnc::PoolMemory::Device)
ATTNC_SAME(ATTNC_KV_ACCOUNTING, attnc::PoolMemory::AccountingOnly)
ATTNC_SAME(ATTNC_POLICY_FCFS, attnc::Policy::FCFS)
ATTNC_SAME(ATTNC_POLICY_LPM, attnc::Policy::LongestPrefixMatch)
ATTNC_SAME(ATTNC_POLICY_DFS_WEIGHT, attnc::Policy::DFSWeight)
ATTNC_SAME(ATTNC_TRANSFER_OFFLOAD, attnc::TransferDirection::Offload)
ATTNC_SAME(ATTNC_TRANSFER_LOAD, attnc::TransferDirection::Load)
#undef ATTNC_SAME

// The step's arrays are handed out as the runtime holds them.
static_assert(std::is_same_v<attnc::RequestId, int64_t> &&
                  std::is_same_v<attnc::Token, int32_t> &&
                  std::is_same_v<attnc::PageId, int32_t>,
              "attnc_step_info's element types are the runtime's");

namespace {

using attnc::PagedKVPool;
using attnc::RadixCache;
using attnc::Scheduler;

/// A pool and the lock of every call on it, its caches and schedulers.
struct PoolObject {
  std::recursive_mutex mutex;
  std::unique_ptr<PagedKVPool> pool;
};

struct CacheObject {
  std::shared_ptr<PoolObject> pool;
  /// The cache's host tier, or null; it outlives the cache.
  std::unique_ptr<attnc::HostTier> tier;
  std::unique_ptr<RadixCache> cache;
  /// A live scheduler reads the cache's change journal: it has one reader.
  bool served = false;
  ~CacheObject() {
    std::lock_guard<std::recursive_mutex> lock(pool->mutex);
    cache.reset(); // returns the tree's pages to the pool
    tier.reset();
  }
};

struct SchedulerObject {
  /// Set once the scheduler is made.
  std::shared_ptr<CacheObject> cache;
  std::unique_ptr<Scheduler> scheduler;
  std::recursive_mutex &mutex() { return cache->pool->mutex; }
  ~SchedulerObject() {
    if (!cache) // never made (a refused create)
      return;
    std::lock_guard<std::recursive_mutex> lock(mutex());
    scheduler.reset(); // unlocks its prefixes, releases its pages
    cache->served = false;
  }
};

struct StepObject {
  attnc::StepStats stats;
  /// The batch's page copies as C's (source, destination) pairs.
  std::vector<int32_t> pageCopies;
  /// The batch's page transfers as C's (host page, device page, direction)
  /// triples.
  std::vector<int32_t> pageTransfers;
  /// The batch's cascade levels, each array concatenated level after level
  /// (attnc_step_info's cascade_* fields).
  std::vector<int32_t> cascadeEntries, cascadeQoIndptr, cascadeKvIndptr,
      cascadeKvLastPageLen, cascadeKvIndices;
};

// Never destroyed, like CApi.cpp's: a device pool alive at exit must not be
// freed after the CUDA driver has been unloaded.
auto &pools() {
  static auto *registry =
      new Registry<attnc_kv_pool, PoolObject>("attnc_kv_pool");
  return *registry;
}
auto &caches() {
  static auto *registry =
      new Registry<attnc_radix_cache, CacheObject>("attnc_radix_cache");
  return *registry;
}
auto &schedulers() {
  static auto *registry =
      new Registry<attnc_scheduler, SchedulerObject>("attnc_scheduler");
  return *registry;
}
auto &steps() {
  static auto *registry = new Registry<attnc_step, StepObject>("attnc_step");
  return *registry;
}

using Lock = std::lock_guard<std::recursive_mutex>;

std::string str(int64_t value) { return std::to_string(value); }

const char *kMemoryNames[] = {"host", "device", "accounting"};

/// Checks the encoding of a C pool config and translates it; the pool
/// judges the sizes.
attnc_status poolConfigFromC(const attnc_kv_pool_config &c,
                             attnc::PoolConfig &config) {
  int dtype = enumBits(c.dtype);
  int order = enumBits(c.page_order);
  int memory = enumBits(c.memory);
  using attnc::DType;
  if (dtype != int(DType::BF16) && dtype != int(DType::F16) &&
      dtype != int(DType::F32) && dtype != int(DType::F8E4M3) &&
      dtype != int(DType::F8E5M2))
    return invalid("a KV pool's dtype must be bf16, f16, f32, f8E4M3FN or "
                   "f8E5M2, got " +
                   (*attnc::keyword(DType(dtype))
                        ? std::string(attnc::keyword(DType(dtype)))
                        : "unknown dtype " + std::to_string(dtype)));
  if (order != ATTNC_NHD && order != ATTNC_HND)
    return invalid("unknown page order " + std::to_string(order));
  if (memory < ATTNC_KV_HOST || memory > ATTNC_KV_ACCOUNTING)
    return invalid("unknown KV pool memory " + std::to_string(memory) +
                   ": expected host, device or accounting");
  config.numPages = c.num_pages;
  config.pageSize = c.page_size;
  config.numKVHeads = c.num_kv_heads;
  config.headDim = c.head_dim;
  config.elementBytes = attnc::bytesOf(DType(dtype));
  config.order = attnc::PageOrder(order);
  config.memory = attnc::PoolMemory(memory);
  config.cacheDir = c.cache_dir ? c.cache_dir : "";
  config.numLayers = c.num_layers;
  return ATTNC_OK;
}

/// Checks the encoding of a C scheduler config (the policy, the flag) and
/// translates it; attnc::checkConfig judges the values.
attnc_status schedulerConfigFromC(const attnc_scheduler_config &c,
                                  attnc::SchedulerConfig &config) {
  int policy = enumBits(c.policy);
  if (policy < ATTNC_POLICY_FCFS || policy > ATTNC_POLICY_DFS_WEIGHT)
    return invalid("unknown policy " + std::to_string(policy) +
                   ": expected fcfs, lpm or dfs-weight");
  if (!isFlag(c.protect_waiting_prefixes))
    return invalid("protect_waiting_prefixes must be 0 or 1, got " +
                   std::to_string(c.protect_waiting_prefixes));
  if (!isFlag(c.cascade))
    return invalid("cascade must be 0 or 1, got " + std::to_string(c.cascade));
  config.policy = attnc::Policy(policy);
  config.tokenBudget = c.token_budget;
  config.maxRunning = c.max_running;
  config.inFlightShareThreshold = c.in_flight_share_threshold;
  config.protectWaitingPrefixes = c.protect_waiting_prefixes;
  config.agingSteps = c.aging_steps;
  config.initialNewTokenRatio = c.initial_new_token_ratio;
  config.minNewTokenRatio = c.min_new_token_ratio;
  config.newTokenRatioDecay = c.new_token_ratio_decay;
  config.clipMaxNewTokens = c.clip_max_new_tokens;
  config.dfsWeightWindow = c.dfs_weight_window;
  config.speculativeTokens = c.speculative_tokens;
  config.cascade = c.cascade != 0;
  config.cascadeMinSharers = c.cascade_min_sharers;
  config.cascadeMinSharedTokens = c.cascade_min_shared_tokens;
  if (attnc::Status status = attnc::checkConfig(config); !status.ok())
    return fail(status);
  return ATTNC_OK;
}

/// The pointer of an array for C: NULL when it is empty.
template <typename T> const T *dataOf(const std::vector<T> &values) {
  return values.empty() ? nullptr : values.data();
}

int64_t sizeOf(size_t size) { return static_cast<int64_t>(size); }

/// Writes `transfers` to `out` as C's (host page, device page, direction)
/// triples: 3 entries each.
void writeTriples(const std::vector<attnc::PageTransfer> &transfers,
                  int32_t *out) {
  for (const attnc::PageTransfer &transfer : transfers) {
    *out++ = transfer.hostPage;
    *out++ = transfer.devicePage;
    *out++ = transfer.direction == attnc::TransferDirection::Load
                 ? ATTNC_TRANSFER_LOAD
                 : ATTNC_TRANSFER_OFFLOAD;
  }
}

/// A number read from a live pool, 0 for a bad handle.
template <typename F> auto readPool(attnc_kv_pool handle, F read) {
  std::shared_ptr<PoolObject> pool = pools().find(handle, "pool");
  if (!pool)
    return decltype(read(*pool->pool))(0);
  Lock lock(pool->mutex);
  return read(*pool->pool);
}

/// A number read from a live cache, 0 for a bad handle.
template <typename F> int64_t readCache(attnc_radix_cache handle, F read) {
  std::shared_ptr<CacheObject> cache = caches().find(handle, "cache");
  if (!cache)
    return 0;
  Lock lock(cache->pool->mutex);
  return read(*cache->cache);
}

/// Commits `numSamples` samples to the scheduler of `handle`, the k-th
/// made by take(k, sample), which refuses a bad one with its message. They
/// are read only once the scheduler has said it awaits that many.
template <typename Take>
attnc_status commitSamples(attnc_scheduler handle, int64_t numSamples,
                           Take take, int64_t *finished, int64_t *numFinished) {
  return guarded([&] {
    std::shared_ptr<SchedulerObject> scheduler =
        schedulers().find(handle, "scheduler");
    if (!scheduler)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(scheduler->mutex());
    if (attnc::Status status =
            scheduler->scheduler->checkSampleCount(numSamples);
        !status.ok())
      return fail(status);
    std::vector<attnc::Sample> taken(static_cast<size_t>(numSamples));
    for (int64_t k = 0; k < numSamples; ++k)
      if (attnc_status status = take(k, taken[size_t(k)]); status != ATTNC_OK)
        return status;
    attnc::StatusOr<std::vector<attnc::RequestId>> done =
        scheduler->scheduler->commit(taken);
    if (!done.ok())
      return fail(done.status());
    // At most one finish per sample: `finished` has room for them all.
    if (finished)
      std::copy(done->begin(), done->end(), finished);
    if (numFinished)
      *numFinished = sizeOf(done->size());
    return ATTNC_OK;
  });
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// attnc_kv_pool
//===----------------------------------------------------------------------===//

void attnc_kv_pool_config_init(attnc_kv_pool_config *config) {
  if (!config)
    return;
  attnc::PoolConfig defaults;
  *config = attnc_kv_pool_config{};
  config->num_pages = 0;
  config->page_size = defaults.pageSize;
  config->num_kv_heads = defaults.numKVHeads;
  config->head_dim = defaults.headDim;
  config->dtype = ATTNC_BF16;
  config->page_order = ATTNC_NHD;
  config->memory = ATTNC_KV_HOST;
  config->cache_dir = nullptr;
  config->num_layers = defaults.numLayers;
}

const char *attnc_kv_memory_name(int memory) {
  int count = int(sizeof(kMemoryNames) / sizeof(*kMemoryNames));
  return memory >= 0 && memory < count ? kMemoryNames[memory] : "";
}

attnc_status attnc_kv_pool_create(const attnc_kv_pool_config *c,
                                  attnc_kv_pool *out) {
  if (!c || !out)
    return invalid("config and out must not be null");
  return guarded([&] {
    attnc::PoolConfig config;
    if (attnc_status status = poolConfigFromC(*c, config); status != ATTNC_OK)
      return status;
    attnc::StatusOr<std::unique_ptr<PagedKVPool>> pool =
        PagedKVPool::create(config);
    if (!pool.ok())
      return fail(pool.status());
    auto object = std::make_shared<PoolObject>();
    object->pool = std::move(*pool);
    *out = pools().add(std::move(object));
    return ATTNC_OK;
  });
}

attnc_status attnc_kv_pool_destroy(attnc_kv_pool pool) {
  return guarded([&] { return pools().remove(pool, "pool"); });
}

int64_t attnc_kv_pool_num_pages(attnc_kv_pool pool) {
  return readPool(pool, [](PagedKVPool &p) { return p.numPages(); });
}
int64_t attnc_kv_pool_page_size(attnc_kv_pool pool) {
  return readPool(pool, [](PagedKVPool &p) { return p.pageSize(); });
}
int64_t attnc_kv_pool_num_free_pages(attnc_kv_pool pool) {
  return readPool(pool, [](PagedKVPool &p) { return p.numFreePages(); });
}
int64_t attnc_kv_pool_num_layers(attnc_kv_pool pool) {
  return readPool(pool, [](PagedKVPool &p) { return p.numLayers(); });
}
uint64_t attnc_kv_pool_key_cache(attnc_kv_pool pool) {
  return readPool(pool, [](PagedKVPool &p) { return p.keyCache(); });
}
uint64_t attnc_kv_pool_value_cache(attnc_kv_pool pool) {
  return readPool(pool, [](PagedKVPool &p) { return p.valueCache(); });
}

attnc_status attnc_kv_pool_layer_caches(attnc_kv_pool handle, int64_t layer,
                                        uint64_t *keyCache,
                                        uint64_t *valueCache) {
  return guarded([&] {
    std::shared_ptr<PoolObject> pool = pools().find(handle, "pool");
    if (!pool)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(pool->mutex);
    if (attnc::Status status = pool->pool->checkLayer(layer); !status.ok())
      return fail(status);
    if (keyCache)
      *keyCache = pool->pool->keyCache(layer);
    if (valueCache)
      *valueCache = pool->pool->valueCache(layer);
    return ATTNC_OK;
  });
}

attnc_status attnc_kv_pool_set_stream(attnc_kv_pool handle, void *stream) {
  return guarded([&] {
    std::shared_ptr<PoolObject> pool = pools().find(handle, "pool");
    if (!pool)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(pool->mutex);
    pool->pool->setStream(static_cast<attnc::cuda::CUstream>(stream));
    return ATTNC_OK;
  });
}

attnc_status
attnc_kv_pool_append_layer_slots(attnc_kv_pool handle, int64_t layer,
                                 uint64_t keys, uint64_t values,
                                 int64_t keyStride, int64_t valueStride,
                                 uint64_t slots, int64_t tokens, void *stream) {
  // A step's rows are counted by int32 (qo_indptr): more is no step's.
  if (tokens > INT32_MAX)
    return invalid("tokens must be at most 2147483647 (a step's int32 "
                   "qo_indptr), got " +
                   str(tokens));
  return guarded([&] {
    std::shared_ptr<PoolObject> pool = pools().find(handle, "pool");
    if (!pool)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(pool->mutex);
    attnc::Status status = pool->pool->appendSlots(
        layer, keys, values, keyStride, valueStride, slots, tokens,
        static_cast<attnc::cuda::CUstream>(stream));
    return status.ok() ? ATTNC_OK : fail(status);
  });
}

attnc_status attnc_kv_pool_append_slots(attnc_kv_pool handle, uint64_t keys,
                                        uint64_t values, int64_t keyStride,
                                        int64_t valueStride, uint64_t slots,
                                        int64_t tokens, void *stream) {
  return attnc_kv_pool_append_layer_slots(handle, 0, keys, values, keyStride,
                                          valueStride, slots, tokens, stream);
}

attnc_status attnc_kv_pool_copy_pages(attnc_kv_pool handle,
                                      const int32_t *copies, int64_t numCopies,
                                      void *stream) {
  if (numCopies < 0 || (numCopies > 0 && !copies))
    return invalid("copies must be an array of 2 * num_copies (non-negative) "
                   "page ids, got " +
                   str(numCopies) + (copies ? "" : " and null"));
  return guarded([&] {
    std::shared_ptr<PoolObject> pool = pools().find(handle, "pool");
    if (!pool)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(pool->mutex);
    // A copy names two pages of the pool: more copies than its pages
    // squared is no step's, refused before the array is read.
    int64_t pages = pool->pool->numPages();
    if (numCopies > pages * pages)
      return invalid("num_copies must be at most " + str(pages * pages) +
                     " (the pool's pages squared), got " + str(numCopies));
    std::vector<attnc::PageCopy> taken;
    taken.reserve(size_t(numCopies));
    for (int64_t i = 0; i < numCopies; ++i)
      taken.push_back({copies[2 * i], copies[2 * i + 1]});
    attnc::Status status = pool->pool->copyPages(
        taken, static_cast<attnc::cuda::CUstream>(stream));
    return status.ok() ? ATTNC_OK : fail(status);
  });
}

//===----------------------------------------------------------------------===//
// attnc_radix_cache
//===----------------------------------------------------------------------===//

namespace {
/// A cache over `poolHandle`, with a host tier of `hostPages` pages under it
/// when that is above 0.
attnc_status createCache(attnc_kv_pool poolHandle, int64_t hostPages,
                         attnc_radix_cache *out) {
  return guarded([&] {
    std::shared_ptr<PoolObject> pool = pools().find(poolHandle, "pool");
    if (!pool)
      return ATTNC_INVALID_ARGUMENT;
    auto object = std::make_shared<CacheObject>();
    object->pool = pool;
    {
      Lock lock(pool->mutex);
      if (hostPages == 0) {
        object->cache = std::make_unique<RadixCache>(*pool->pool);
      } else {
        attnc::StatusOr<std::unique_ptr<attnc::HostTier>> tier =
            attnc::HostTier::create(*pool->pool, hostPages);
        if (!tier.ok())
          return fail(tier.status());
        attnc::StatusOr<std::unique_ptr<RadixCache>> cache =
            RadixCache::withHostTier(*pool->pool, **tier);
        if (!cache.ok())
          return fail(cache.status());
        object->tier = std::move(*tier);
        object->cache = std::move(*cache);
      }
    }
    *out = caches().add(std::move(object));
    return ATTNC_OK;
  });
}
} // namespace

attnc_status attnc_radix_cache_create(attnc_kv_pool poolHandle,
                                      attnc_radix_cache *out) {
  if (!out)
    return invalid("out must not be null");
  return createCache(poolHandle, 0, out);
}

attnc_status attnc_radix_cache_create_with_host_tier(attnc_kv_pool poolHandle,
                                                     int64_t hostPages,
                                                     attnc_radix_cache *out) {
  if (!out)
    return invalid("out must not be null");
  if (hostPages < 1 || hostPages > INT32_MAX)
    return invalid("host_pages must be in [1, 2^31-1], got " + str(hostPages));
  return createCache(poolHandle, hostPages, out);
}

attnc_status attnc_radix_cache_destroy(attnc_radix_cache cache) {
  return guarded([&] { return caches().remove(cache, "cache"); });
}

int64_t attnc_radix_cache_cached_tokens(attnc_radix_cache cache) {
  return readCache(cache, [](RadixCache &c) { return c.totalSize(); });
}
int64_t attnc_radix_cache_evictable_tokens(attnc_radix_cache cache) {
  return readCache(cache, [](RadixCache &c) { return c.evictableSize(); });
}
int64_t attnc_radix_cache_host_tokens(attnc_radix_cache cache) {
  return readCache(cache, [](RadixCache &c) { return c.hostSize(); });
}

attnc_status attnc_radix_cache_match_prefix(attnc_radix_cache handle,
                                            const int32_t *tokens,
                                            int64_t numTokens,
                                            uint64_t cacheNamespace,
                                            int64_t *matchedTokens,
                                            int32_t *pages, int64_t *numPages) {
  if (!matchedTokens || !numPages)
    return invalid("matched_tokens and num_pages must not be null");
  if (numTokens < 0 || (numTokens > 0 && !tokens))
    return invalid("tokens must be an array of num_tokens (non-negative) "
                   "token ids, got " +
                   str(numTokens) + (tokens ? "" : " and null"));
  if (pages && *numPages < 0)
    return invalid("num_pages (the capacity of pages) must not be negative, "
                   "got " +
                   str(*numPages));
  return guarded([&] {
    std::shared_ptr<CacheObject> cache = caches().find(handle, "cache");
    if (!cache)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(cache->pool->mutex);
    // Read only as far as the tree matches: num_tokens bounds nothing the
    // library knows, so the array is never copied whole.
    RadixCache::Match match =
        cache->cache->matchPrefix(tokens, size_t(numTokens), cacheNamespace);
    int64_t capacity = pages ? *numPages : 0; // read only with an array
    int64_t count = sizeOf(match.pages.size());
    *numPages = count;
    *matchedTokens = match.tokens;
    if (!pages)
      return ATTNC_OK;
    if (capacity < count)
      return invalid("pages holds " + str(capacity) +
                     " entries, the match has " + str(count) + " pages");
    std::copy(match.pages.begin(), match.pages.end(), pages);
    return ATTNC_OK;
  });
}

attnc_status attnc_radix_cache_evict(attnc_radix_cache handle, int64_t tokens,
                                     int64_t *evicted) {
  if (tokens < 0)
    return invalid("cannot evict " + str(tokens) + " tokens");
  return guarded([&] {
    std::shared_ptr<CacheObject> cache = caches().find(handle, "cache");
    if (!cache)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(cache->pool->mutex);
    int64_t count = cache->cache->evict(tokens);
    if (evicted)
      *evicted = count;
    return ATTNC_OK;
  });
}

attnc_status attnc_radix_cache_take_transfers(attnc_radix_cache handle,
                                              int32_t *transfers,
                                              int64_t *numTransfers) {
  if (!numTransfers)
    return invalid("num_transfers must not be null");
  if (transfers && *numTransfers < 0)
    return invalid("num_transfers (the capacity of transfers) must not be "
                   "negative, got " +
                   str(*numTransfers));
  return guarded([&] {
    std::shared_ptr<CacheObject> cache = caches().find(handle, "cache");
    if (!cache)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(cache->pool->mutex);
    int64_t count = sizeOf(cache->cache->numTransfers());
    int64_t capacity = transfers ? *numTransfers : 0; // read only with one
    *numTransfers = count;
    if (!transfers)
      return ATTNC_OK;
    // Its runner replays every transfer of a step: one taken here would
    // leave it a load back of a host page it never wrote.
    if (cache->served)
      return invalid("cache serves a live attnc_scheduler, whose steps take "
                     "its transfers");
    if (capacity < count)
      return invalid("transfers has room for " + str(capacity) +
                     " transfers, the cache has " + str(count));
    writeTriples(cache->cache->takeTransfers(), transfers);
    return ATTNC_OK;
  });
}

//===----------------------------------------------------------------------===//
// attnc_scheduler and attnc_step
//===----------------------------------------------------------------------===//

void attnc_scheduler_config_init(attnc_scheduler_config *c) {
  if (!c)
    return;
  attnc::SchedulerConfig defaults;
  *c = attnc_scheduler_config{};
  c->policy = static_cast<attnc_policy>(defaults.policy);
  c->token_budget = defaults.tokenBudget;
  c->max_running = defaults.maxRunning;
  c->in_flight_share_threshold = defaults.inFlightShareThreshold;
  c->protect_waiting_prefixes = defaults.protectWaitingPrefixes ? 1 : 0;
  c->aging_steps = defaults.agingSteps;
  c->initial_new_token_ratio = defaults.initialNewTokenRatio;
  c->min_new_token_ratio = defaults.minNewTokenRatio;
  c->new_token_ratio_decay = defaults.newTokenRatioDecay;
  c->clip_max_new_tokens = defaults.clipMaxNewTokens;
  c->dfs_weight_window = defaults.dfsWeightWindow;
  c->speculative_tokens = defaults.speculativeTokens;
  c->cascade = defaults.cascade ? 1 : 0;
  c->cascade_min_sharers = defaults.cascadeMinSharers;
  c->cascade_min_shared_tokens = defaults.cascadeMinSharedTokens;
}

void attnc_request_init(attnc_request *request) {
  if (!request)
    return;
  *request = attnc_request{};
  request->max_tokens = attnc::Request{}.maxTokens;
  request->n = attnc::Request{}.n;
}

const char *attnc_policy_name(int policy) {
  if (policy < ATTNC_POLICY_FCFS || policy > ATTNC_POLICY_DFS_WEIGHT)
    return "";
  return attnc::toString(attnc::Policy(policy));
}

attnc_status attnc_scheduler_create(const attnc_scheduler_config *c,
                                    attnc_kv_pool poolHandle,
                                    attnc_radix_cache cacheHandle,
                                    attnc_scheduler *out) {
  if (!c || !out)
    return invalid("config and out must not be null");
  return guarded([&] {
    attnc::SchedulerConfig config;
    if (attnc_status status = schedulerConfigFromC(*c, config);
        status != ATTNC_OK)
      return status;
    std::shared_ptr<PoolObject> pool = pools().find(poolHandle, "pool");
    if (!pool)
      return ATTNC_INVALID_ARGUMENT;
    std::shared_ptr<CacheObject> cache = caches().find(cacheHandle, "cache");
    if (!cache)
      return ATTNC_INVALID_ARGUMENT;
    if (cache->pool != pool)
      return invalid("cache is a cache over another attnc_kv_pool than pool");
    auto object = std::make_shared<SchedulerObject>();
    {
      Lock lock(pool->mutex);
      if (cache->served)
        return invalid("cache already serves a live attnc_scheduler: a "
                       "cache has one scheduler at a time");
      object->scheduler =
          std::make_unique<Scheduler>(config, *pool->pool, *cache->cache);
      cache->served = true;
      object->cache = cache;
    }
    *out = schedulers().add(std::move(object));
    return ATTNC_OK;
  });
}

attnc_status attnc_scheduler_destroy(attnc_scheduler scheduler) {
  return guarded([&] { return schedulers().remove(scheduler, "scheduler"); });
}

attnc_status attnc_scheduler_add(attnc_scheduler handle,
                                 const attnc_request *c) {
  if (!c)
    return invalid("request must not be null");
  if (c->prompt_len < 0 || (c->prompt_len > 0 && !c->prompt))
    return invalid("request " + str(c->id) +
                   ": prompt must be an array of prompt_len (non-negative) "
                   "token ids, got " +
                   str(c->prompt_len) + (c->prompt ? "" : " and null"));
  return guarded([&] {
    std::shared_ptr<SchedulerObject> scheduler =
        schedulers().find(handle, "scheduler");
    if (!scheduler)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(scheduler->mutex());
    // The scheduler's own checks, before prompt_len tokens are read: a
    // length past the pool or int32 positions is refused uncopied.
    if (attnc::Status status = scheduler->scheduler->checkRequest(
            c->id, c->prompt_len, c->max_tokens, c->n);
        !status.ok())
      return fail(status);
    attnc::Request request;
    request.id = c->id;
    request.prompt.assign(c->prompt, c->prompt + c->prompt_len);
    request.maxTokens = c->max_tokens;
    request.priority = c->priority;
    request.cacheNamespace = c->cache_namespace;
    request.n = c->n;
    attnc::Status status = scheduler->scheduler->add(request);
    return status.ok() ? ATTNC_OK : fail(status);
  });
}

attnc_status attnc_scheduler_step(attnc_scheduler handle, attnc_step *out) {
  if (!out)
    return invalid("out must not be null");
  return guarded([&] {
    std::shared_ptr<SchedulerObject> scheduler =
        schedulers().find(handle, "scheduler");
    if (!scheduler)
      return ATTNC_INVALID_ARGUMENT;
    auto step = std::make_shared<StepObject>();
    {
      Lock lock(scheduler->mutex());
      attnc::StatusOr<attnc::StepStats> stats = scheduler->scheduler->step();
      if (!stats.ok())
        return fail(stats.status());
      step->stats = std::move(*stats);
    }
    for (const attnc::PageCopy &copy : step->stats.batch.pageCopies) {
      step->pageCopies.push_back(copy.from);
      step->pageCopies.push_back(copy.to);
    }
    step->pageTransfers.resize(3 * step->stats.batch.pageTransfers.size());
    writeTriples(step->stats.batch.pageTransfers, step->pageTransfers.data());
    for (const attnc::CascadeLevel &level : step->stats.batch.cascade) {
      step->cascadeEntries.push_back(
          static_cast<int32_t>(level.kvLastPageLen.size()));
      auto append = [](std::vector<int32_t> &to,
                       const std::vector<int32_t> &from) {
        to.insert(to.end(), from.begin(), from.end());
      };
      append(step->cascadeQoIndptr, level.qoIndptr);
      append(step->cascadeKvIndptr, level.kvIndptr);
      append(step->cascadeKvLastPageLen, level.kvLastPageLen);
      append(step->cascadeKvIndices, level.kvIndices);
    }
    *out = steps().add(std::move(step));
    return ATTNC_OK;
  });
}

attnc_status attnc_step_get_info(attnc_step handle, attnc_step_info *out) {
  if (!out)
    return invalid("out must not be null");
  return guarded([&] {
    std::shared_ptr<StepObject> step = steps().find(handle, "step");
    if (!step)
      return ATTNC_INVALID_ARGUMENT;
    // The arrays live in the step's object, which the registry keeps until
    // the step is destroyed.
    const attnc::StepStats &stats = step->stats;
    const attnc::EngineBatch &batch = stats.batch;
    attnc_step_info info{};
    info.num_requests = sizeOf(batch.requests.size());
    info.requests = dataOf(batch.requests);
    info.branches = dataOf(batch.branches);
    info.num_decodes = batch.numDecodes;
    info.qo_indptr = dataOf(batch.qoIndptr);
    info.num_tokens = sizeOf(batch.tokens.size());
    info.tokens = dataOf(batch.tokens);
    info.positions = dataOf(batch.positions);
    info.slot_mapping = dataOf(batch.slotMapping);
    info.page_indptr = dataOf(batch.pageTable.indptr);
    info.num_page_indices = sizeOf(batch.pageTable.indices.size());
    info.page_indices = dataOf(batch.pageTable.indices);
    info.last_page_len = dataOf(batch.pageTable.lastPageLen);
    info.num_samplers = sizeOf(batch.samplers.size());
    info.samplers = dataOf(batch.samplers);
    info.sampler_branches = dataOf(batch.samplerBranches);
    info.sample_rows = dataOf(batch.sampleRows);
    info.num_admitted = sizeOf(stats.admitted.size());
    info.admitted = dataOf(stats.admitted);
    info.num_preempted = sizeOf(stats.preempted.size());
    info.preempted = dataOf(stats.preempted);
    info.prefill_tokens = stats.prefillTokens;
    info.decode_tokens = stats.decodeTokens;
    info.num_page_copies = sizeOf(batch.pageCopies.size());
    info.page_copies = dataOf(step->pageCopies);
    info.token_from_sample = dataOf(batch.tokenFromSample);
    info.num_page_transfers = sizeOf(batch.pageTransfers.size());
    info.page_transfers = dataOf(step->pageTransfers);
    info.num_drafts = dataOf(batch.numDrafts);
    info.num_cascade_levels = sizeOf(batch.cascade.size());
    info.cascade_level_entries = dataOf(step->cascadeEntries);
    info.num_cascade_indptr = sizeOf(step->cascadeQoIndptr.size());
    info.cascade_qo_indptr = dataOf(step->cascadeQoIndptr);
    info.cascade_kv_indptr = dataOf(step->cascadeKvIndptr);
    info.num_cascade_entries = sizeOf(step->cascadeKvLastPageLen.size());
    info.cascade_kv_last_page_len = dataOf(step->cascadeKvLastPageLen);
    info.num_cascade_kv_indices = sizeOf(step->cascadeKvIndices.size());
    info.cascade_kv_indices = dataOf(step->cascadeKvIndices);
    *out = info;
    return ATTNC_OK;
  });
}

attnc_status attnc_step_destroy(attnc_step step) {
  return guarded([&] { return steps().remove(step, "step"); });
}

attnc_status attnc_scheduler_commit(attnc_scheduler handle,
                                    const attnc_sample *samples,
                                    int64_t numSamples, int64_t *finished,
                                    int64_t *numFinished) {
  if (numSamples < 0 || (numSamples > 0 && !samples))
    return invalid("samples must be an array of num_samples (non-negative) "
                   "samples, got " +
                   str(numSamples) + (samples ? "" : " and null"));
  return commitSamples(
      handle, numSamples,
      [&](int64_t k, attnc::Sample &sample) {
        if (!isFlag(samples[k].stop))
          return invalid("samples[" + str(k) + "].stop must be 0 or 1, got " +
                         std::to_string(samples[k].stop));
        if (!isFlag(samples[k].rejected))
          return invalid("samples[" + str(k) +
                         "].rejected must be 0 or 1, got " +
                         std::to_string(samples[k].rejected));
        sample.request = samples[k].request;
        sample.branch = samples[k].branch;
        sample.token = samples[k].token;
        sample.stop = samples[k].stop == 1;
        sample.rejected = samples[k].rejected == 1;
        return ATTNC_OK;
      },
      finished, numFinished);
}

attnc_status
attnc_scheduler_commit_arrays(attnc_scheduler handle, int64_t numSamples,
                              const int64_t *requests, const int32_t *branches,
                              const int32_t *tokens, const int32_t *stops,
                              int64_t *finished, int64_t *numFinished) {
  return attnc_scheduler_commit_verdict_arrays(
      handle, numSamples, requests, branches, tokens, stops,
      /*rejected=*/nullptr, finished, numFinished);
}

attnc_status attnc_scheduler_commit_verdict_arrays(
    attnc_scheduler handle, int64_t numSamples, const int64_t *requests,
    const int32_t *branches, const int32_t *tokens, const int32_t *stops,
    const int32_t *rejected, int64_t *finished, int64_t *numFinished) {
  if (numSamples < 0)
    return invalid("num_samples must not be negative, got " + str(numSamples));
  if (numSamples > 0 && (!requests || !tokens))
    return invalid(std::string(requests ? "tokens" : "requests") +
                   " must be an array of num_samples (" + str(numSamples) +
                   ") entries, got null");
  return commitSamples(
      handle, numSamples,
      [&](int64_t k, attnc::Sample &sample) {
        if (stops && !isFlag(stops[k]))
          return invalid("stops[" + str(k) + "] must be 0 or 1, got " +
                         std::to_string(stops[k]));
        if (rejected && !isFlag(rejected[k]))
          return invalid("rejected[" + str(k) + "] must be 0 or 1, got " +
                         std::to_string(rejected[k]));
        sample.request = requests[k];
        sample.branch = branches ? branches[k] : 0;
        sample.token = tokens[k];
        sample.stop = stops && stops[k] == 1;
        sample.rejected = rejected && rejected[k] == 1;
        return ATTNC_OK;
      },
      finished, numFinished);
}

attnc_status attnc_scheduler_propose(attnc_scheduler handle, int64_t request,
                                     int32_t branch, const int32_t *drafts,
                                     int64_t numDrafts) {
  if (numDrafts < 0 || (numDrafts > 0 && !drafts))
    return invalid("request " + str(request) +
                   ": drafts must be an array of num_drafts (non-negative) "
                   "token ids, got " +
                   str(numDrafts) + (drafts ? "" : " and null"));
  return guarded([&] {
    std::shared_ptr<SchedulerObject> scheduler =
        schedulers().find(handle, "scheduler");
    if (!scheduler)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(scheduler->mutex());
    // The count is checked before the drafts are copied: a count past the
    // caller's buffer is refused, not read.
    if (attnc::Status status =
            scheduler->scheduler->checkProposal(request, branch, numDrafts);
        !status.ok())
      return fail(status);
    attnc::Status status = scheduler->scheduler->propose(
        request, branch, std::vector<attnc::Token>(drafts, drafts + numDrafts));
    return status.ok() ? ATTNC_OK : fail(status);
  });
}

attnc_status attnc_scheduler_abort(attnc_scheduler handle, int64_t request) {
  return guarded([&] {
    std::shared_ptr<SchedulerObject> scheduler =
        schedulers().find(handle, "scheduler");
    if (!scheduler)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(scheduler->mutex());
    attnc::Status status = scheduler->scheduler->abort(request);
    return status.ok() ? ATTNC_OK : fail(status);
  });
}

int attnc_scheduler_idle(attnc_scheduler handle) {
  std::shared_ptr<SchedulerObject> scheduler =
      schedulers().find(handle, "scheduler");
  if (!scheduler)
    return -1;
  Lock lock(scheduler->mutex());
  return scheduler->scheduler->idle() ? 1 : 0;
}

attnc_status attnc_scheduler_get_stats(attnc_scheduler handle,
                                       attnc_scheduler_stats *out) {
  if (!out)
    return invalid("out must not be null");
  return guarded([&] {
    std::shared_ptr<SchedulerObject> scheduler =
        schedulers().find(handle, "scheduler");
    if (!scheduler)
      return ATTNC_INVALID_ARGUMENT;
    Lock lock(scheduler->mutex());
    const Scheduler &s = *scheduler->scheduler;
    const attnc::SchedulerTotals &totals = s.totals();
    attnc_scheduler_stats stats{};
    stats.num_waiting = sizeOf(s.numWaiting());
    stats.num_running = sizeOf(s.running().size());
    stats.prompt_tokens = totals.promptTokens;
    stats.cached_tokens = totals.cachedTokens;
    stats.computed_prefill_tokens = totals.computedPrefillTokens;
    stats.recomputed_tokens = totals.recomputedTokens;
    stats.evicted_tokens = totals.evictedTokens;
    stats.preemptions = totals.preemptions;
    stats.finished = totals.finished;
    stats.host_loaded_tokens = totals.hostLoadedTokens;
    *out = stats;
    return ATTNC_OK;
  });
}

} // extern "C"
