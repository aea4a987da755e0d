//===- FuzzServing.cpp - attnc-fuzz-serving: the serving C API ------------===//
//
// The input is a program of calls on attnc_c.h's serving half: pools (host
// and accounting memory: there is no GPU here), radix caches (some over a
// host tier, whose steps' page transfers are checked), schedulers
// and steps, made, used and destroyed in any order, with hostile arguments
// (negative and huge counts, null pointers the API refuses, destroyed and
// foreign handles, samples for requests that do not run), steps formed
// before the last one's commit (overlap: at most two uncommitted, a third
// refused). Any error status
// is fine; a crash, a sanitizer report, a leak or a broken invariant (read
// back through the API after every call) is a finding.
//
// Counts always match the buffers passed, except where the API checks a
// documented bound before it reads the buffer: prompt_len + max_tokens
// past 2^31-1, num_samples other than the oldest uncommitted step's
// samplers, tokens
// past 2^31-1 for append_slots. There a short buffer stands behind the
// lying count, so a check that moves after the read is caught by ASan.
//
// Every handle an input makes is destroyed before it returns: the
// registries outlive inputs, and each reproducer must stand alone.
//
// An input that ends in the two bytes kExtendedTrailer (dropped before it
// is read) also drives cascade planning and speculative decoding: its
// schedulers may plan cascade levels with small thresholds (every step's
// levels checked against EngineBatch::cascade's contract,
// test/support/CascadeLevelsCheck.h) and verify drafts
// (speculative_tokens, attnc_scheduler_propose, commits with verdicts, good
// and bad). Without the trailer an input reads exactly as before it
// existed, so the regression inputs keep their meaning.
//
//===----------------------------------------------------------------------===//

#include "../support/CascadeLevelsCheck.h"
#include "attnc/attnc_c.h"
#include "attnc/device/abi.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

/// A broken invariant names itself on stderr, then stops the process as
/// a crash would, so that libFuzzer keeps the input.
[[noreturn]] void broken(const char *what, int line, long long a, long long b) {
  std::fprintf(stderr,
               "attnc-fuzz-serving: invariant broken at FuzzServing.cpp:%d: "
               "%s (%lld, %lld); last error: %s\n",
               line, what, a, b, attnc_last_error());
  __builtin_trap();
}
#define EXPECT(cond, a, b)                                                     \
  do {                                                                         \
    if (!(cond))                                                               \
      broken(#cond, __LINE__, (long long)(a), (long long)(b));                 \
  } while (0)

/// With ATTNC_FUZZ_PRINT set, the calls an input makes go to stderr: how
/// a reproducer reads.
bool printing() {
  static const bool print = std::getenv("ATTNC_FUZZ_PRINT") != nullptr;
  return print;
}
#define NOTE(...)                                                              \
  do {                                                                         \
    if (printing())                                                            \
      std::fprintf(stderr, __VA_ARGS__);                                       \
  } while (0)

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
/// Host pools stay small: the fuzzer's RSS limit is for leaks, not for a
/// config that asks for gigabytes (which the pool would rightly allocate).
constexpr int64_t kMaxHostPoolBytes = int64_t(16) << 20;
/// The most pages an accounting pool gets (8 bytes of bookkeeping each).
constexpr int64_t kMaxAccountingPages = int64_t(1) << 20;
/// Honest arrays stay this short: long ones only slow the fuzzer down.
constexpr int64_t kMaxTokens = 2048;
/// The last two bytes of an input that drives cascade and speculation too
/// (the header comment): a trailer rather than new choices among the old
/// ones, so that an input without it reads as it always has. None of the
/// regression inputs end in it.
constexpr uint8_t kExtendedTrailer[2] = {0x5c, 0xca};

/// A broken invariant the checker states in words.
[[noreturn]] void brokenSaying(const std::string &what, int line) {
  std::fprintf(stderr,
               "attnc-fuzz-serving: invariant broken at FuzzServing.cpp:%d: "
               "%s; last error: %s\n",
               line, what.c_str(), attnc_last_error());
  __builtin_trap();
}

template <typename Handle> struct Slot {
  Handle handle = nullptr;
  bool live = false;
};

struct Pool : Slot<attnc_kv_pool> {
  attnc_kv_pool_config config{};
  int elementBytes = 2;
};
struct Cache : Slot<attnc_radix_cache> {
  size_t pool = 0;
  /// Pages of its host tier; 0 without one.
  int64_t hostPages = 0;
};
/// One sampler of a step: its sequence and, on the first row of a
/// verification, the drafts the rows after it fed.
struct Sampler {
  int64_t request = 0;
  int32_t branch = 0;
  std::vector<int32_t> drafts;
};
struct Scheduler : Slot<attnc_scheduler> {
  size_t pool = 0, cache = 0;
  attnc_scheduler_config config{};
  /// The samplers of each uncommitted step, oldest first: commit takes
  /// the oldest's samples.
  std::deque<std::vector<Sampler>> uncommitted;
  /// The decodes of the last step formed (request, branch): what propose
  /// gives drafts to.
  std::vector<std::pair<int64_t, int32_t>> decodes;
};
struct Step : Slot<attnc_step> {};

/// One input's world: every handle it made, destroyed ones included (they
/// stay as stale handles to pass).
class World {
public:
  World(FuzzedDataProvider &in, bool extended) : in_(in), extended_(extended) {}
  ~World() { destroyAll(); }

  void run() {
    for (int op = 0; op < 256 && in_.remaining_bytes() > 0; ++op) {
      call(in_.ConsumeIntegralInRange<int>(0, extended_ ? 22 : 20));
      checkAll();
    }
  }

private:
  //===--------------------------------------------------------------------===//
  // Arguments
  //===--------------------------------------------------------------------===//

  /// An int64 from the interesting places: small, at the int32 and int64
  /// edges, negative.
  int64_t count(int64_t small) {
    switch (in_.ConsumeIntegralInRange<int>(0, 15)) {
    case 0:
      return -1;
    case 1:
      return 0;
    case 2:
      return kInt32Max;
    case 3:
      return kInt32Max + 1;
    case 4:
      return kInt64Max;
    case 5:
      return kInt64Min;
    case 6:
      return -in_.ConsumeIntegralInRange<int64_t>(1, kInt32Max);
    case 7:
      return in_.ConsumeIntegral<int64_t>();
    default:
      return in_.ConsumeIntegralInRange<int64_t>(1, small);
    }
  }

  /// A handle of `slots` (live or destroyed), null, or one attnc never made
  /// (another type's live handle included); `index` gets the slot or -1.
  template <typename Handle, typename S>
  Handle pick(const std::vector<S> &slots, long &index) {
    index = -1;
    switch (in_.ConsumeIntegralInRange<int>(0, 15)) {
    case 0:
      return nullptr;
    case 1: {
      // Handle values are a counter's: a guess may hit a live one, which
      // then counts as picked.
      auto value =
          reinterpret_cast<Handle>(uintptr_t(in_.ConsumeIntegral<uint64_t>()));
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i].handle == value)
          index = long(i);
      return value;
    }
    case 2: // another registry's handle
      if constexpr (!std::is_same_v<Handle, attnc_kv_pool>)
        if (!pools_.empty())
          return reinterpret_cast<Handle>(pools_.back().handle);
      return nullptr;
    case 3:
      if constexpr (!std::is_same_v<Handle, attnc_step>)
        if (!steps_.empty())
          return reinterpret_cast<Handle>(steps_.back().handle);
      return nullptr;
    default:
      if (slots.empty())
        return nullptr;
      index = long(in_.ConsumeIntegralInRange<size_t>(0, slots.size() - 1));
      return slots[size_t(index)].handle;
    }
  }

  /// Prompt-like tokens that share prefixes between calls: a few fixed
  /// sequences, the input choosing one and where it leaves it for another.
  std::vector<int32_t> tokens(int64_t length) {
    std::vector<int32_t> out(size_t(std::max<int64_t>(length, 0)));
    int32_t first = in_.ConsumeIntegralInRange<int32_t>(0, 3);
    int32_t second = in_.ConsumeIntegralInRange<int32_t>(0, 3);
    int64_t split = in_.ConsumeIntegralInRange<int64_t>(0, length);
    for (int64_t i = 0; i < length; ++i)
      out[size_t(i)] =
          int32_t((i < split ? first : second) * 7919 + i * 31) % 50000;
    if (in_.ConsumeBool() && length > 0) // a hostile token id
      out[size_t(in_.ConsumeIntegralInRange<int64_t>(0, length - 1))] =
          in_.ConsumeIntegral<int32_t>();
    return out;
  }

  int64_t requestId() {
    return in_.ConsumeBool() ? in_.ConsumeIntegralInRange<int64_t>(0, 7)
                             : count(1000);
  }

  //===--------------------------------------------------------------------===//
  // Calls
  //===--------------------------------------------------------------------===//

  void call(int op) {
    static const char *const names[] = {"pool_create",
                                        "pool_destroy",
                                        "append_slots",
                                        "cache_create",
                                        "cache_destroy",
                                        "match_prefix",
                                        "evict",
                                        "scheduler_create",
                                        "scheduler_destroy",
                                        "add",
                                        "add",
                                        "step",
                                        "step_get_info",
                                        "step_destroy",
                                        "commit",
                                        "abort",
                                        "drive",
                                        "drive",
                                        "read_pools",
                                        "init(NULL)",
                                        "scheduler_stats",
                                        "propose",
                                        "commit_verdict_arrays"};
    NOTE("%s\n", names[op]);
    switch (op) {
    case 0:
      return createPool();
    case 1:
      return destroy(pools_, attnc_kv_pool_destroy);
    case 2:
      return appendSlots();
    case 3:
      return createCache();
    case 4:
      return destroy(caches_, attnc_radix_cache_destroy);
    case 5:
      return matchPrefix();
    case 6:
      return evict();
    case 7:
      return createScheduler();
    case 8:
      return destroy(schedulers_, attnc_scheduler_destroy);
    case 9:
    case 10:
      return add();
    case 11:
      return step();
    case 12:
      return stepInfo();
    case 13:
      return destroy(steps_, attnc_step_destroy);
    case 14:
      return commit();
    case 15:
      return abort();
    case 16:
    case 17:
      return drive();
    case 18:
      return readPools();
    case 19: { // the init functions take null
      attnc_kv_pool_config_init(nullptr);
      attnc_scheduler_config_init(nullptr);
      attnc_request_init(nullptr);
      return;
    }
    case 20:
      return readSchedulers();
    case 21:
      return propose();
    default:
      return commitArrays();
    }
  }

  template <typename S, typename Handle>
  void destroy(std::vector<S> &slots, attnc_status (*fn)(Handle)) {
    long index;
    Handle handle = pick<Handle>(slots, index);
    attnc_status status = fn(handle);
    bool live = index >= 0 && slots[size_t(index)].live;
    // Destroying null is free(NULL); a dead or foreign handle is refused.
    EXPECT(status == (live || !handle ? ATTNC_OK : ATTNC_INVALID_ARGUMENT),
           status, live);
    if (live)
      slots[size_t(index)].live = false;
  }

  void createPool() {
    attnc_kv_pool_config config;
    attnc_kv_pool_config_init(&config);
    switch (in_.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      config.num_pages = count(64);
      break;
    case 1:
      config.num_pages = in_.ConsumeIntegralInRange<int64_t>(1, 4);
      break;
    default:
      config.num_pages = in_.ConsumeIntegralInRange<int64_t>(1, 256);
    }
    const int64_t pageSizes[] = {1, 2, 3, 16, 64, 256, 0, 257, -1};
    config.page_size =
        in_.ConsumeBool() ? in_.PickValueInArray(pageSizes) : count(256);
    config.num_kv_heads =
        in_.ConsumeBool() ? in_.ConsumeIntegralInRange(1, 4) : count(1024);
    config.head_dim =
        in_.ConsumeBool() ? in_.ConsumeIntegralInRange(1, 16) : count(1024);
    int dtype = in_.ConsumeIntegralInRange(-1, 7);
    int order = in_.ConsumeIntegralInRange(-1, 2);
    int memory = in_.ConsumeIntegralInRange(-1, 3);
    // C lets an enum field hold any int: the library reads its bits.
    std::memcpy(&config.dtype, &dtype, sizeof dtype);
    std::memcpy(&config.page_order, &order, sizeof order);
    std::memcpy(&config.memory, &memory, sizeof memory);
    // No GPU here, and no NVRTC: a device pool fails at the driver (an
    // error path worth a visit, rarely).
    if (memory == ATTNC_KV_DEVICE && !in_.ConsumeBool())
      memory = ATTNC_KV_HOST;
    int elementBytes = dtype == ATTNC_F32 ? 4 : dtype >= ATTNC_F8E4M3 ? 1 : 2;
    bool valid = config.num_pages >= 1 && config.num_pages <= kInt32Max &&
                 config.page_size >= 1 && config.page_size <= 256 &&
                 config.num_kv_heads >= 1 && config.num_kv_heads <= 1024 &&
                 config.head_dim >= 1 && config.head_dim <= 1024;
    // What a valid config would allocate: keep it within the fuzzer's
    // memory (an accounting pool keeps only 8 bytes a page).
    if (valid && memory == ATTNC_KV_HOST &&
        2 * config.num_pages * config.page_size * config.num_kv_heads *
                config.head_dim * elementBytes >
            kMaxHostPoolBytes)
      memory = ATTNC_KV_ACCOUNTING;
    if (valid && config.num_pages > kMaxAccountingPages)
      config.num_pages = kMaxAccountingPages;
    std::memcpy(&config.memory, &memory, sizeof memory);

    attnc_kv_pool handle = nullptr;
    switch (in_.ConsumeIntegralInRange(0, 15)) {
    case 0:
      EXPECT(attnc_kv_pool_create(nullptr, &handle) == ATTNC_INVALID_ARGUMENT,
             0, 0);
      return;
    case 1:
      EXPECT(attnc_kv_pool_create(&config, nullptr) == ATTNC_INVALID_ARGUMENT,
             0, 0);
      return;
    }
    attnc_status status = attnc_kv_pool_create(&config, &handle);
    NOTE("  pages %lld of %lld, %lld x %lld, memory %d: %s\n",
         (long long)config.num_pages, (long long)config.page_size,
         (long long)config.num_kv_heads, (long long)config.head_dim, memory,
         attnc_status_name(status));
    if (status != ATTNC_OK)
      return;
    EXPECT(handle != nullptr, 0, 0);
    Pool pool;
    pool.handle = handle;
    pool.live = true;
    pool.config = config;
    pool.elementBytes = elementBytes;
    pools_.push_back(pool);
    // A fresh pool is all free, of the size asked for.
    EXPECT(attnc_kv_pool_num_pages(handle) == config.num_pages,
           attnc_kv_pool_num_pages(handle), config.num_pages);
    EXPECT(attnc_kv_pool_num_free_pages(handle) == config.num_pages,
           attnc_kv_pool_num_free_pages(handle), config.num_pages);
    EXPECT(attnc_kv_pool_page_size(handle) == config.page_size,
           attnc_kv_pool_page_size(handle), config.page_size);
    EXPECT((attnc_kv_pool_key_cache(handle) != 0) == (memory == ATTNC_KV_HOST),
           memory, 0);
  }

  void appendSlots() {
    long index;
    attnc_kv_pool handle = pick<attnc_kv_pool>(pools_, index);
    const Pool *pool = index >= 0 ? &pools_[size_t(index)] : nullptr;
    int64_t heads = pool ? pool->config.num_kv_heads : 1;
    int64_t dim = pool ? pool->config.head_dim : 1;
    int64_t elementBytes = pool ? pool->elementBytes : 1;
    int64_t slotCount =
        pool ? pool->config.num_pages * pool->config.page_size : 1;
    int64_t row = heads * dim;
    // Strides below a row are refused before anything is read; at or above
    // it, the buffers hold `tokens` strides.
    int64_t keyStride = in_.ConsumeBool()
                            ? row + in_.ConsumeIntegralInRange<int64_t>(0, 3)
                            : count(row);
    int64_t valueStride = in_.ConsumeBool() ? keyStride : count(row);
    int64_t tokens = in_.ConsumeIntegralInRange<int64_t>(0, 16);
    bool lying = false;
    switch (in_.ConsumeIntegralInRange(0, 7)) {
    case 0:
      tokens = -in_.ConsumeIntegralInRange<int64_t>(1, kInt64Max);
      lying = true;
      break;
    case 1: // past the documented int32 bound, checked before any read
      tokens = in_.ConsumeIntegralInRange<int64_t>(kInt32Max + 1, kInt64Max);
      lying = true;
      break;
    }
    bool strideOk = keyStride >= row && valueStride >= row &&
                    keyStride <= row + 3 && valueStride <= row + 3;
    size_t honest = lying ? 1 : size_t(tokens);
    size_t keyBytes = strideOk ? honest * size_t(keyStride * elementBytes) : 0;
    size_t valueBytes =
        strideOk ? honest * size_t(valueStride * elementBytes) : 0;
    std::vector<unsigned char> keys(std::max<size_t>(keyBytes, 1), 0x3c);
    std::vector<unsigned char> values(std::max<size_t>(valueBytes, 1), 0x3d);
    std::vector<int64_t> slots(std::max<size_t>(honest, 1) + 1);
    for (int64_t &slot : slots) {
      switch (in_.ConsumeIntegralInRange(0, 5)) {
      case 0:
        slot = -in_.ConsumeIntegralInRange<int64_t>(1, 3);
        break;
      case 1:
        slot = slotCount + in_.ConsumeIntegralInRange<int64_t>(0, 3);
        break;
      case 2:
        slot = in_.ConsumeIntegral<int64_t>();
        break;
      default:
        slot = in_.ConsumeIntegralInRange<int64_t>(0, slotCount - 1);
      }
    }
    uint64_t keysAt = uint64_t(uintptr_t(keys.data()));
    uint64_t valuesAt = uint64_t(uintptr_t(values.data()));
    uint64_t slotsAt = uint64_t(uintptr_t(slots.data()));
    switch (in_.ConsumeIntegralInRange(0, 7)) {
    case 0:
      keysAt = 0;
      break;
    case 1:
      slotsAt = 0;
      break;
    case 2: // misaligned slots: refused before they are read
      slotsAt += 4;
      break;
    }
    // A stride past what the buffers hold is the caller's lie, and not
    // one the library can see: pass such strides only with no tokens.
    if (!strideOk && !lying)
      tokens = keyStride >= row && valueStride >= row ? 0 : tokens;
    attnc_status status =
        attnc_kv_pool_append_slots(handle, keysAt, valuesAt, keyStride,
                                   valueStride, slotsAt, tokens, nullptr);
    if (lying)
      EXPECT(status != ATTNC_OK, tokens, 0);
  }

  void createCache() {
    long index;
    attnc_kv_pool pool = pick<attnc_kv_pool>(pools_, index);
    attnc_radix_cache handle = nullptr;
    int kind = in_.ConsumeIntegralInRange(0, 15);
    if (kind == 0) {
      EXPECT(attnc_radix_cache_create(pool, nullptr) == ATTNC_INVALID_ARGUMENT,
             0, 0);
      return;
    }
    bool live = index >= 0 && pools_[size_t(index)].live;
    // One in 15 has a host tier (-1 and 0 pages are refused); a host
    // pool's no larger than the pool, which kMaxHostPoolBytes bounds.
    int64_t hostPages = 0;
    attnc_status status;
    if (kind == 15) {
      hostPages = in_.ConsumeIntegralInRange<int64_t>(-1, 16);
      if (live && pools_[size_t(index)].config.memory == ATTNC_KV_HOST)
        hostPages = std::min(hostPages, pools_[size_t(index)].config.num_pages);
      status =
          attnc_radix_cache_create_with_host_tier(pool, hostPages, &handle);
      NOTE("  host tier of %lld pages: %s\n", (long long)hostPages,
           status == ATTNC_OK ? "ok" : attnc_last_error());
      live = live && hostPages >= 1;
    } else {
      status = attnc_radix_cache_create(pool, &handle);
    }
    EXPECT((status == ATTNC_OK) == live, status, live);
    if (status != ATTNC_OK)
      return;
    Cache cache;
    cache.handle = handle;
    cache.live = true;
    cache.pool = size_t(index);
    cache.hostPages = hostPages;
    caches_.push_back(cache);
  }

  void matchPrefix() {
    long index;
    attnc_radix_cache handle = pick<attnc_radix_cache>(caches_, index);
    int64_t length = in_.ConsumeIntegralInRange<int64_t>(0, kMaxTokens);
    std::vector<int32_t> prompt = tokens(length);
    const int32_t *tokensAt = prompt.empty() ? nullptr : prompt.data();
    int64_t numTokens = length;
    if (in_.ConsumeIntegralInRange(0, 7) == 0) { // refused: no read
      numTokens = in_.ConsumeBool()
                      ? -in_.ConsumeIntegralInRange<int64_t>(1, kInt64Max)
                      : numTokens;
      tokensAt = in_.ConsumeBool() ? nullptr : tokensAt;
    }
    int64_t capacity = in_.ConsumeIntegralInRange<int64_t>(0, 64);
    std::vector<int32_t> pages(size_t(capacity) + 1, -7);
    int32_t *pagesAt = in_.ConsumeBool() ? nullptr : pages.data();
    int64_t numPages = capacity;
    if (pagesAt && in_.ConsumeIntegralInRange(0, 7) == 0)
      numPages = -in_.ConsumeIntegralInRange<int64_t>(1, kInt64Max);
    int64_t matched = -1;
    uint64_t space = in_.ConsumeIntegralInRange<uint64_t>(0, 2);
    int64_t *matchedAt = in_.ConsumeIntegralInRange(0, 15) ? &matched : nullptr;
    int64_t *numPagesAt =
        in_.ConsumeIntegralInRange(0, 15) ? &numPages : nullptr;
    attnc_status status = attnc_radix_cache_match_prefix(
        handle, tokensAt, numTokens, space, matchedAt, pagesAt, numPagesAt);
    if (status != ATTNC_OK || index < 0)
      return;
    EXPECT(caches_[size_t(index)].live, index, 0);
    const Pool &pool = pools_[caches_[size_t(index)].pool];
    // Whole pages of the tokens, each a page of the pool.
    EXPECT(matched >= 0 && matched <= numTokens, matched, numTokens);
    EXPECT(numPages * pool.config.page_size == matched, numPages, matched);
    if (pagesAt) {
      EXPECT(numPages <= capacity, numPages, capacity);
      for (int64_t i = 0; i < numPages; ++i)
        EXPECT(pages[size_t(i)] >= 0 &&
                   pages[size_t(i)] < pool.config.num_pages,
               pages[size_t(i)], pool.config.num_pages);
      EXPECT(pages[size_t(capacity)] == -7, capacity, 0); // no overrun
    }
  }

  void evict() {
    long index;
    attnc_radix_cache handle = pick<attnc_radix_cache>(caches_, index);
    int64_t tokens = count(4096);
    int64_t evicted = -1;
    bool out = in_.ConsumeBool();
    attnc_status status =
        attnc_radix_cache_evict(handle, tokens, out ? &evicted : nullptr);
    if (status == ATTNC_OK && out)
      EXPECT(evicted >= 0, evicted, tokens);
  }

  void createScheduler() {
    attnc_scheduler_config config;
    attnc_scheduler_config_init(&config);
    int policy = in_.ConsumeIntegralInRange(-1, 3);
    std::memcpy(&config.policy, &policy, sizeof policy);
    if (in_.ConsumeBool())
      config.token_budget = count(256);
    if (in_.ConsumeBool())
      config.max_running = count(8);
    if (in_.ConsumeBool())
      config.in_flight_share_threshold = count(64);
    if (in_.ConsumeIntegralInRange(0, 7) == 0)
      config.protect_waiting_prefixes = in_.ConsumeIntegralInRange(-1, 2);
    if (in_.ConsumeBool())
      config.aging_steps = count(16);
    if (in_.ConsumeIntegralInRange(0, 3) == 0) {
      const double ratios[] = {0,
                               0.1,
                               0.5,
                               1,
                               -0.5,
                               1.5,
                               std::nan(""),
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(),
                               1e-300};
      config.initial_new_token_ratio = in_.PickValueInArray(ratios);
      config.min_new_token_ratio = in_.PickValueInArray(ratios);
      config.new_token_ratio_decay = in_.PickValueInArray(ratios);
    }
    if (extended_) {
      // Cascade on, mostly, with thresholds small enough for the fuzzer's
      // few requests to meet (the defaults, 32 sharers of 2048 tokens,
      // would leave every step without levels); drafts of up to 4 tokens.
      // Now and then a value out of range, which the config check refuses.
      int cascade = in_.ConsumeIntegralInRange(0, 15);
      config.cascade =
          cascade == 0 ? in_.ConsumeIntegralInRange(-1, 2) : cascade < 12;
      config.cascade_min_sharers =
          in_.ConsumeIntegralInRange(0, 7)
              ? in_.ConsumeIntegralInRange<int64_t>(1, 4)
              : count(64);
      config.cascade_min_shared_tokens =
          in_.ConsumeIntegralInRange(0, 7)
              ? in_.ConsumeIntegralInRange<int64_t>(1, 64)
              : count(4096);
      config.speculative_tokens =
          in_.ConsumeIntegralInRange(0, 7)
              ? in_.ConsumeIntegralInRange<int64_t>(0, 4)
              : count(8);
    }
    long poolIndex, cacheIndex;
    attnc_kv_pool pool = pick<attnc_kv_pool>(pools_, poolIndex);
    attnc_radix_cache cache = pick<attnc_radix_cache>(caches_, cacheIndex);
    attnc_scheduler handle = nullptr;
    if (in_.ConsumeIntegralInRange(0, 15) == 0) {
      EXPECT(attnc_scheduler_create(in_.ConsumeBool() ? &config : nullptr, pool,
                                    cache, nullptr) == ATTNC_INVALID_ARGUMENT,
             0, 0);
      return;
    }
    if (attnc_scheduler_create(&config, pool, cache, &handle) != ATTNC_OK)
      return;
    // Made only over a live pool and a live cache over it.
    EXPECT(poolIndex >= 0 && cacheIndex >= 0 && pools_[size_t(poolIndex)].live,
           poolIndex, cacheIndex);
    EXPECT(caches_[size_t(cacheIndex)].live &&
               caches_[size_t(cacheIndex)].pool == size_t(poolIndex),
           cacheIndex, poolIndex);
    // One live scheduler per cache.
    for (const Scheduler &other : schedulers_)
      EXPECT(!(other.live && other.cache == size_t(cacheIndex)), cacheIndex, 0);
    Scheduler scheduler;
    scheduler.handle = handle;
    scheduler.live = true;
    scheduler.pool = size_t(poolIndex);
    scheduler.cache = size_t(cacheIndex);
    scheduler.config = config;
    schedulers_.push_back(scheduler);
  }

  void add() {
    long index;
    attnc_scheduler handle = pick<attnc_scheduler>(schedulers_, index);
    attnc_request request;
    attnc_request_init(&request);
    request.id = requestId();
    request.max_tokens = in_.ConsumeBool()
                             ? in_.ConsumeIntegralInRange<int64_t>(1, 64)
                             : count(4096);
    request.n = in_.ConsumeIntegralInRange(0, 3) ? 1
                : in_.ConsumeBool() ? in_.ConsumeIntegralInRange(1, 4)
                                    : int32_t(count(300));
    request.priority = in_.ConsumeIntegralInRange(-2, 2);
    request.cache_namespace = in_.ConsumeIntegralInRange<uint64_t>(0, 2);
    int64_t length = in_.ConsumeIntegralInRange<int64_t>(1, 512);
    std::vector<int32_t> prompt = tokens(length);
    request.prompt = prompt.data();
    request.prompt_len = length;
    bool lying = false;
    switch (in_.ConsumeIntegralInRange(0, 15)) {
    case 0: // refused before the prompt is read
      request.prompt_len = -in_.ConsumeIntegralInRange<int64_t>(0, kInt64Max);
      lying = true;
      break;
    case 1: // null with tokens to read: refused
      request.prompt = nullptr;
      lying = true;
      break;
    case 2: // past the documented 2^31-1 positions, checked before the
            // copy: the short prompt stays unread
      request.prompt_len = in_.ConsumeIntegralInRange<int64_t>(
          kInt32Max + 1 - std::clamp<int64_t>(request.max_tokens, 1, kInt32Max),
          kInt64Max);
      lying = true;
      break;
    case 3:
      if (in_.ConsumeBool()) {
        EXPECT(attnc_scheduler_add(handle, nullptr) == ATTNC_INVALID_ARGUMENT,
               0, 0);
        return;
      }
    }
    attnc_status status = attnc_scheduler_add(handle, &request);
    NOTE("  id %lld, prompt_len %lld (%zu tokens), max_tokens %lld, n %d: "
         "%s %s\n",
         (long long)request.id, (long long)request.prompt_len, prompt.size(),
         (long long)request.max_tokens, request.n, attnc_status_name(status),
         status ? attnc_last_error() : "");
    if (lying)
      EXPECT(status != ATTNC_OK, request.prompt_len, request.max_tokens);
  }

  /// Checks a step's arrays against its pool and records its samplers.
  void checkStep(attnc_step step, Scheduler *scheduler) {
    attnc_step_info info;
    EXPECT(attnc_step_get_info(step, &info) == ATTNC_OK, 0, 0);
    int64_t pageSize = 0, numPages = 0;
    if (scheduler) {
      const Pool &pool = pools_[scheduler->pool];
      pageSize = pool.config.page_size;
      numPages = pool.config.num_pages;
    }
    int64_t n = info.num_requests;
    EXPECT(n >= 0 && info.num_decodes >= 0 && info.num_decodes <= n, n,
           info.num_decodes);
    EXPECT(info.num_tokens >= 0 && info.num_page_indices >= 0, info.num_tokens,
           info.num_page_indices);
    EXPECT((n == 0) == (info.requests == nullptr), n, 0);
    if (n > 0) {
      EXPECT(info.qo_indptr[0] == 0 && info.page_indptr[0] == 0,
             info.qo_indptr[0], info.page_indptr[0]);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT(info.qo_indptr[i] <= info.qo_indptr[i + 1], i,
               info.qo_indptr[i]);
        EXPECT(info.page_indptr[i] < info.page_indptr[i + 1], i,
               info.page_indptr[i]);
        if (scheduler)
          EXPECT(info.last_page_len[i] >= 1 &&
                     info.last_page_len[i] <= pageSize,
                 info.last_page_len[i], pageSize);
      }
      EXPECT(info.qo_indptr[n] == info.num_tokens, info.qo_indptr[n],
             info.num_tokens);
      EXPECT(info.page_indptr[n] == info.num_page_indices, info.page_indptr[n],
             info.num_page_indices);
    }
    EXPECT(info.prefill_tokens + info.decode_tokens == info.num_tokens,
           info.prefill_tokens + info.decode_tokens, info.num_tokens);
    if (scheduler) {
      for (int64_t i = 0; i < info.num_page_indices; ++i)
        EXPECT(info.page_indices[i] >= 0 && info.page_indices[i] < numPages,
               info.page_indices[i], numPages);
      for (int64_t t = 0; t < info.num_tokens; ++t)
        EXPECT(info.slot_mapping[t] >= 0 &&
                   info.slot_mapping[t] < numPages * pageSize,
               info.slot_mapping[t], numPages * pageSize);
    }
    for (int64_t s = 0; s < info.num_samplers; ++s)
      EXPECT(info.sample_rows[s] >= 0 && info.sample_rows[s] < info.num_tokens,
             info.sample_rows[s], info.num_tokens);
    // A page copy names two distinct pages of the pool.
    EXPECT((info.num_page_copies == 0) == (info.page_copies == nullptr),
           info.num_page_copies, 0);
    for (int64_t i = 0; scheduler && i < info.num_page_copies; ++i)
      EXPECT(info.page_copies[2 * i] >= 0 &&
                 info.page_copies[2 * i] < numPages &&
                 info.page_copies[2 * i + 1] >= 0 &&
                 info.page_copies[2 * i + 1] < numPages &&
                 info.page_copies[2 * i] != info.page_copies[2 * i + 1],
             info.page_copies[2 * i], info.page_copies[2 * i + 1]);
    // A transfer names a page of the pool, one of the cache's host tier
    // and a direction.
    EXPECT((info.num_page_transfers == 0) == (info.page_transfers == nullptr),
           info.num_page_transfers, 0);
    int64_t hostPages = scheduler ? caches_[scheduler->cache].hostPages : 0;
    for (int64_t i = 0; scheduler && i < info.num_page_transfers; ++i) {
      const int32_t *transfer = info.page_transfers + 3 * i;
      EXPECT(transfer[0] >= 0 && transfer[0] < hostPages, transfer[0],
             hostPages);
      EXPECT(transfer[1] >= 0 && transfer[1] < numPages, transfer[1], numPages);
      EXPECT(transfer[2] == ATTNC_TRANSFER_OFFLOAD ||
                 transfer[2] == ATTNC_TRANSFER_LOAD,
             transfer[2], 0);
    }
    // A row fed a pending sample (a placeholder token) names a sample of
    // the one uncommitted step before it, of its own sequence.
    EXPECT((info.num_tokens == 0) == (info.token_from_sample == nullptr),
           info.num_tokens, 0);
    int64_t fromSamples = 0;
    for (int64_t r = 0; scheduler && r < n; ++r)
      for (int64_t t = info.qo_indptr[r]; t < info.qo_indptr[r + 1]; ++t) {
        int32_t k = info.token_from_sample[t];
        if (k == -1)
          continue;
        ++fromSamples;
        EXPECT(k >= 0 && scheduler->uncommitted.size() == 1 &&
                   size_t(k) < scheduler->uncommitted.front().size(),
               k, scheduler->uncommitted.size());
        const Sampler &sampler = scheduler->uncommitted.front()[size_t(k)];
        EXPECT(sampler.request == info.requests[r] &&
                   sampler.branch == info.branches[r],
               sampler.request, info.requests[r]);
        EXPECT(info.tokens[t] == -1, info.tokens[t], t);
      }
    NOTE("  step: %lld rows, %lld from pending samples, %lld samplers, "
         "%lld page transfers\n",
         (long long)info.num_tokens, (long long)fromSamples,
         (long long)info.num_samplers, (long long)info.num_page_transfers);
    if (!scheduler)
      return;
    std::vector<Sampler> samplers = checkDrafts(info, *scheduler);
    checkCascade(info, *scheduler);
    // A step follows at most one uncommitted step (Scheduler::step).
    EXPECT(scheduler->uncommitted.size() <= 1, scheduler->uncommitted.size(),
           0);
    scheduler->uncommitted.push_back(std::move(samplers));
    scheduler->decodes.clear();
    for (int64_t r = 0; r < info.num_decodes; ++r)
      scheduler->decodes.push_back({info.requests[r], info.branches[r]});
  }

  /// The request whose rows hold `row` (qo_indptr checked already).
  static int64_t requestOfRow(const attnc_step_info &info, int64_t row) {
    const int32_t *begin = info.qo_indptr,
                  *end = info.qo_indptr + info.num_requests + 1;
    return int64_t(std::upper_bound(begin, end, int32_t(row)) - begin) - 1;
  }

  /// Checks the step's verifications (num_drafts) and returns its
  /// samplers, each verification's first with the drafts it verifies.
  std::vector<Sampler> checkDrafts(const attnc_step_info &info,
                                   const Scheduler &scheduler) {
    int64_t n = info.num_requests;
    EXPECT((n == 0) == (info.num_drafts == nullptr), n, 0);
    std::vector<int64_t> sampled(size_t(n), 0);
    for (int64_t s = 0; s < info.num_samplers; ++s)
      ++sampled[size_t(requestOfRow(info, info.sample_rows[s]))];
    for (int64_t r = 0; r < n; ++r) {
      int64_t d = info.num_drafts[r];
      EXPECT(d >= 0 && d <= scheduler.config.speculative_tokens, d,
             scheduler.config.speculative_tokens);
      if (d == 0)
        continue;
      // A verification is a decode fed its last sample and d drafts at the
      // positions after it, every row a sampler, none a pending sample
      // (drafts wait while a sample of theirs is pending).
      EXPECT(r < info.num_decodes, r, info.num_decodes);
      int64_t first = info.qo_indptr[r], rows = info.qo_indptr[r + 1] - first;
      EXPECT(rows == d + 1 && sampled[size_t(r)] == d + 1, rows,
             sampled[size_t(r)]);
      for (int64_t t = first; t < first + rows; ++t) {
        EXPECT(info.token_from_sample[t] == -1, t, info.token_from_sample[t]);
        EXPECT(t == first || info.positions[t] == info.positions[t - 1] + 1, t,
               info.positions[t]);
      }
    }
    std::vector<Sampler> samplers;
    for (int64_t s = 0; s < info.num_samplers; ++s) {
      Sampler sampler;
      sampler.request = info.samplers[s];
      sampler.branch = info.sampler_branches[s];
      int64_t row = info.sample_rows[s], r = requestOfRow(info, row);
      if (info.num_drafts[r] > 0) {
        // Rows of a verification sample in order, one each.
        int64_t k = row - info.qo_indptr[r];
        EXPECT(info.requests[r] == sampler.request &&
                   info.branches[r] == sampler.branch &&
                   (k == 0 || info.sample_rows[s - 1] == row - 1),
               s, row);
        if (k == 0)
          sampler.drafts.assign(info.tokens + row + 1,
                                info.tokens + row + 1 + info.num_drafts[r]);
      }
      samplers.push_back(std::move(sampler));
    }
    return samplers;
  }

  /// Checks the step's cascade levels: none unless the scheduler plans
  /// them, and otherwise EngineBatch::cascade's contract
  /// (CascadeLevelsCheck.h) over the C arrays, once their sizes agree.
  void checkCascade(const attnc_step_info &info, const Scheduler &scheduler) {
    int64_t levels = info.num_cascade_levels;
    EXPECT(levels >= 0 && (levels == 0 || scheduler.config.cascade), levels,
           scheduler.config.cascade);
    EXPECT((levels == 0) == (info.cascade_level_entries == nullptr), levels, 0);
    int64_t entries = 0, indptr = 0, pages = 0;
    std::vector<attnc::check::CascadeLevelView> views;
    for (int64_t l = 0; l < levels; ++l) {
      int64_t e = info.cascade_level_entries[l];
      EXPECT(e >= 1 && indptr + e + 1 <= info.num_cascade_indptr &&
                 entries + e <= info.num_cascade_entries,
             e, info.num_cascade_indptr);
      attnc::check::CascadeLevelView view;
      view.entries = e;
      view.qoIndptr = info.cascade_qo_indptr + indptr;
      view.kvIndptr = info.cascade_kv_indptr + indptr;
      view.kvLastPageLen = info.cascade_kv_last_page_len + entries;
      // Each level's kv_indptr starts at 0; its pages follow the levels'
      // before it.
      view.numKvIndices = view.kvIndptr[e];
      EXPECT(view.kvIndptr[0] == 0 && view.numKvIndices >= 0 &&
                 pages + view.numKvIndices <= info.num_cascade_kv_indices,
             view.numKvIndices, info.num_cascade_kv_indices);
      view.kvIndices = info.cascade_kv_indices + pages;
      indptr += e + 1;
      entries += e;
      pages += view.numKvIndices;
      views.push_back(view);
    }
    EXPECT(indptr == info.num_cascade_indptr &&
               entries == info.num_cascade_entries &&
               pages == info.num_cascade_kv_indices,
           indptr, info.num_cascade_indptr);
    if (levels == 0)
      return;
    attnc::check::CascadeBatchView batch;
    batch.numRequests = info.num_requests;
    batch.numDecodes = info.num_decodes;
    batch.numRows = info.num_tokens;
    batch.qoIndptr = info.qo_indptr;
    batch.pageIndptr = info.page_indptr;
    batch.pageIndices = info.page_indices;
    batch.lastPageLen = info.last_page_len;
    batch.positions = info.positions;
    attnc::check::CascadeRules rules{scheduler.config.cascade_min_sharers,
                                     scheduler.config.cascade_min_shared_tokens,
                                     attnc::limits::kMaxMergeStates};
    attnc::check::CascadeLevelStats stats;
    std::string failure = attnc::check::checkCascadeLevels(
        batch, views, pools_[scheduler.pool].config.page_size, rules, stats);
    if (!failure.empty())
      brokenSaying(failure, __LINE__);
    // The scheduler orders its decodes by the tree (a DFS order): no
    // group's requests are apart, so none is split into runs.
    EXPECT(stats.splitEntries == 0, stats.splitEntries, levels);
    NOTE("  cascade: %lld levels, %lld shared entries, %lld page reads "
         "saved\n",
         (long long)levels, (long long)stats.sharedEntries,
         (long long)stats.savedPages);
  }

  Scheduler *schedulerAt(long index) {
    return index >= 0 && schedulers_[size_t(index)].live
               ? &schedulers_[size_t(index)]
               : nullptr;
  }

  void step() {
    long index;
    attnc_scheduler handle = pick<attnc_scheduler>(schedulers_, index);
    if (in_.ConsumeIntegralInRange(0, 15) == 0) {
      EXPECT(attnc_scheduler_step(handle, nullptr) == ATTNC_INVALID_ARGUMENT, 0,
             0);
      return;
    }
    attnc_step handle2 = nullptr;
    Scheduler *scheduler = schedulerAt(index);
    attnc_status status = attnc_scheduler_step(handle, &handle2);
    // Two uncommitted steps: a third is refused.
    if (scheduler && scheduler->uncommitted.size() >= 2)
      EXPECT(status == ATTNC_INVALID_ARGUMENT && !handle2, status, 2);
    if (status != ATTNC_OK)
      return;
    EXPECT(scheduler != nullptr, index, 0);
    checkStep(handle2, scheduler);
    Step step;
    step.handle = handle2;
    step.live = true;
    steps_.push_back(step);
  }

  void stepInfo() {
    long index;
    attnc_step handle = pick<attnc_step>(steps_, index);
    attnc_step_info info;
    attnc_status status =
        attnc_step_get_info(handle, in_.ConsumeBool() ? &info : nullptr);
    if (status == ATTNC_OK)
      EXPECT(index >= 0 && steps_[size_t(index)].live, index, 0);
  }

  /// What a transactional commit must leave as it was when it fails.
  struct Snapshot {
    attnc_scheduler_stats stats{};
    int64_t freePages = 0, cached = 0, evictable = 0;
    bool operator==(const Snapshot &o) const {
      return std::memcmp(&stats, &o.stats, sizeof stats) == 0 &&
             freePages == o.freePages && cached == o.cached &&
             evictable == o.evictable;
    }
  };
  Snapshot snapshot(const Scheduler &scheduler) {
    Snapshot s;
    attnc_scheduler_get_stats(scheduler.handle, &s.stats);
    const Pool &pool = pools_[scheduler.pool];
    // The pool's handle may be gone while the scheduler keeps the pool.
    s.freePages = pool.live ? attnc_kv_pool_num_free_pages(pool.handle) : 0;
    const Cache &cache = caches_[scheduler.cache];
    s.cached = cache.live ? attnc_radix_cache_cached_tokens(cache.handle) : 0;
    s.evictable =
        cache.live ? attnc_radix_cache_evictable_tokens(cache.handle) : 0;
    return s;
  }

  /// Commits to the scheduler at `index`: honest samples for its oldest
  /// uncommitted step's samplers, or samples for other requests, or a
  /// count other than the samplers'.
  void commitTo(attnc_scheduler handle, long index, bool honest,
                bool arrays = false) {
    Scheduler *scheduler = schedulerAt(index);
    std::vector<attnc_sample> samples;
    if (scheduler && !scheduler->uncommitted.empty())
      for (const Sampler &sampler : scheduler->uncommitted.front()) {
        attnc_sample sample{};
        sample.request = sampler.request;
        sample.branch = sampler.branch;
        sample.token = in_.ConsumeIntegralInRange<int32_t>(0, 50000);
        sample.stop = in_.ConsumeIntegralInRange(0, 7) == 0;
        samples.push_back(sample);
      }
    int64_t numSamples = int64_t(samples.size());
    bool lying = false;
    // Verdicts: bytes are read only for a step that verifies drafts, which
    // only an input with kExtendedTrailer makes.
    if (scheduler && !scheduler->uncommitted.empty())
      lying |= verdicts(scheduler->uncommitted.front(), samples);
    if (!honest) {
      switch (in_.ConsumeIntegralInRange(0, 7)) {
      case 0: // a count the last step does not await: refused unread
        numSamples +=
            in_.ConsumeIntegralInRange<int64_t>(1, kInt64Max - numSamples);
        lying = true;
        break;
      case 1:
        numSamples = -in_.ConsumeIntegralInRange<int64_t>(1, kInt64Max);
        lying = true;
        break;
      case 2: // another request, branch or a bad stop flag
      case 3:
        if (!samples.empty()) {
          attnc_sample &sample = samples[in_.ConsumeIntegralInRange<size_t>(
              0, samples.size() - 1)];
          switch (in_.ConsumeIntegralInRange(0, 3)) {
          case 0:
            sample.request = requestId();
            break;
          case 1:
            sample.branch = in_.ConsumeIntegral<int32_t>();
            break;
          default:
            sample.stop = in_.ConsumeIntegralInRange(-1, 3);
          }
        }
        break;
      case 4: // one sample too many, in a buffer that holds it
        samples.push_back({requestId(), 0, 0, 0});
        numSamples = int64_t(samples.size());
        break;
      case 5:
        if (!samples.empty()) {
          samples.pop_back();
          numSamples = int64_t(samples.size());
        }
        break;
      }
    }
    std::vector<int64_t> finished(std::max<size_t>(samples.size(), 1), -7);
    int64_t numFinished = -1;
    bool finishedOut = in_.ConsumeIntegralInRange(0, 7) != 0;
    bool countOut = in_.ConsumeIntegralInRange(0, 7) != 0;
    const attnc_sample *samplesAt = samples.empty() ? nullptr : samples.data();
    if (in_.ConsumeIntegralInRange(0, 15) == 0 && numSamples > 0) {
      samplesAt = nullptr; // refused before reading
      lying = true;
    }
    Snapshot before;
    if (scheduler)
      before = snapshot(*scheduler);
    attnc_status status;
    if (arrays) {
      // The same samples as the arrays of a binding: rejected NULL (none
      // rejected) only where no sample is.
      std::vector<int64_t> requests;
      std::vector<int32_t> branches, tokens, stops, rejected;
      bool anyRejected = false;
      for (const attnc_sample &sample : samples) {
        requests.push_back(sample.request);
        branches.push_back(sample.branch);
        tokens.push_back(sample.token);
        stops.push_back(sample.stop);
        rejected.push_back(sample.rejected);
        anyRejected |= sample.rejected != 0;
      }
      bool noVerdicts = !anyRejected && in_.ConsumeBool();
      status = attnc_scheduler_commit_verdict_arrays(
          handle, numSamples, samplesAt ? requests.data() : nullptr,
          branches.data(), tokens.data(), stops.data(),
          noVerdicts ? nullptr : rejected.data(),
          finishedOut ? finished.data() : nullptr,
          countOut ? &numFinished : nullptr);
    } else {
      status = attnc_scheduler_commit(handle, samplesAt, numSamples,
                                      finishedOut ? finished.data() : nullptr,
                                      countOut ? &numFinished : nullptr);
    }
    NOTE("  commit %lld samples: %s %s\n", (long long)numSamples,
         attnc_status_name(status), status ? attnc_last_error() : "");
    if (lying)
      EXPECT(status != ATTNC_OK, numSamples, samples.size());
    if (status != ATTNC_OK) {
      // All or nothing (Scheduler::commit): a refused commit changes
      // nothing the API shows.
      if (scheduler) {
        Snapshot after = snapshot(*scheduler);
        EXPECT(after == before, after.freePages, before.freePages);
      }
      return;
    }
    EXPECT(scheduler != nullptr, index, 0);
    if (!scheduler->uncommitted.empty())
      scheduler->uncommitted.pop_front();
    if (countOut) {
      EXPECT(numFinished >= 0 && numFinished <= numSamples, numFinished,
             numSamples);
      if (finishedOut)
        for (int64_t i = 0; i < numFinished; ++i) {
          bool sampled = false;
          for (const attnc_sample &s : samples)
            sampled |= s.request == finished[size_t(i)];
          EXPECT(sampled, finished[size_t(i)], i);
        }
    }
  }

  void commit() {
    long index;
    attnc_scheduler handle = pick<attnc_scheduler>(schedulers_, index);
    commitTo(handle, index, in_.ConsumeBool());
  }

  void commitArrays() {
    long index;
    attnc_scheduler handle = pick<attnc_scheduler>(schedulers_, index);
    commitTo(handle, index, in_.ConsumeBool(), /*arrays=*/true);
  }

  /// The engine's verdict on each verification of `samplers` (the samples
  /// made for them, in order): the first 1 to d + 1 samples accepted, each
  /// but the last the draft the next row fed, the rest rejected. Now and
  /// then a verdict the scheduler must refuse (Scheduler::checkVerdicts):
  /// returns whether it made one.
  bool verdicts(const std::vector<Sampler> &samplers,
                std::vector<attnc_sample> &samples) {
    bool bad = false;
    bool anyDrafts = false;
    for (size_t k = 0; k < samplers.size() && k < samples.size(); ++k) {
      const std::vector<int32_t> &drafts = samplers[k].drafts;
      size_t d = drafts.size();
      if (d == 0 || k + d >= samples.size())
        continue;
      anyDrafts = true;
      size_t accepted = in_.ConsumeIntegralInRange<size_t>(1, d + 1);
      for (size_t i = 0; i + 1 < accepted; ++i)
        samples[k + i].token = drafts[i];
      for (size_t i = accepted; i <= d; ++i)
        samples[k + i].rejected = 1;
      if (in_.ConsumeIntegralInRange(0, 15) == 0) {
        bad = true;
        switch (in_.ConsumeIntegralInRange(0, 3)) {
        case 0: // an accepted draft that is not the one fed
          if (accepted >= 2) {
            samples[k + accepted - 2].token = drafts[accepted - 2] + 1;
            break;
          }
          [[fallthrough]];
        case 1: // the target's token after the last sample is always taken
          samples[k].rejected = 1;
          break;
        case 2: // accepted after a rejected one
          if (accepted + 1 <= d)
            samples[k + accepted + 1].rejected = 0;
          else
            samples[k].rejected = 1;
          break;
        default: { // neither 0 nor 1
          size_t row = k + in_.ConsumeIntegralInRange<size_t>(0, d);
          samples[row].rejected = in_.ConsumeBool() ? -1 : 2;
        }
        }
      }
      k += d;
    }
    // A rejection where no draft was verified.
    if (anyDrafts && in_.ConsumeIntegralInRange(0, 15) == 0) {
      std::vector<bool> verifies(samplers.size(), false);
      for (size_t k = 0; k < samplers.size(); ++k)
        for (size_t i = 0;
             i <= samplers[k].drafts.size() && !samplers[k].drafts.empty() &&
             k + i < samplers.size();
             ++i)
          verifies[k + i] = true;
      for (size_t k = 0; k < samplers.size() && k < samples.size(); ++k)
        if (!verifies[k]) {
          samples[k].rejected = 1;
          bad = true;
          break;
        }
    }
    return bad;
  }

  /// Gives the sequence (request, branch) drafts: as many as the
  /// scheduler takes or one more (0 withdraws them), or now and then a
  /// count, a buffer or a token it must refuse unread.
  void proposeTo(attnc_scheduler handle, const Scheduler *scheduler,
                 int64_t request, int32_t branch) {
    int64_t limit = scheduler ? scheduler->config.speculative_tokens : 4;
    int64_t count =
        in_.ConsumeIntegralInRange<int64_t>(0, std::min<int64_t>(limit, 8) + 1);
    std::vector<int32_t> drafts(size_t(count) + 1);
    for (int64_t i = 0; i < count; ++i)
      drafts[size_t(i)] = in_.ConsumeIntegralInRange<int32_t>(0, 50000);
    const int32_t *draftsAt = drafts.data();
    int64_t numDrafts = count;
    bool lying = scheduler && count > limit;
    switch (in_.ConsumeIntegralInRange(0, 15)) {
    case 0:
      numDrafts = -in_.ConsumeIntegralInRange<int64_t>(1, kInt64Max);
      lying = true;
      break;
    case 1: // past any limit: refused before the buffer is read
      numDrafts = in_.ConsumeIntegralInRange<int64_t>(kInt32Max + 1, kInt64Max);
      lying = true;
      break;
    case 2:
      if (count > 0) {
        draftsAt = nullptr;
        lying = true;
      }
      break;
    case 3: // a negative token
      if (count > 0) {
        size_t at = in_.ConsumeIntegralInRange<size_t>(0, size_t(count) - 1);
        drafts[at] =
            -in_.ConsumeIntegralInRange<int32_t>(1, int32_t(kInt32Max));
        lying = true;
      }
      break;
    }
    attnc_status status =
        attnc_scheduler_propose(handle, request, branch, draftsAt, numDrafts);
    NOTE("  propose %lld drafts for %lld/%d: %s %s\n", (long long)numDrafts,
         (long long)request, branch, attnc_status_name(status),
         status ? attnc_last_error() : "");
    if (lying)
      EXPECT(status != ATTNC_OK, numDrafts, limit);
    if (status == ATTNC_OK)
      EXPECT(scheduler != nullptr && numDrafts <= limit, numDrafts, limit);
  }

  /// A proposal to one of the last step's decodes, or to any sequence.
  void propose() {
    long index;
    attnc_scheduler handle = pick<attnc_scheduler>(schedulers_, index);
    const Scheduler *scheduler = schedulerAt(index);
    int64_t request;
    int32_t branch;
    if (scheduler && !scheduler->decodes.empty() &&
        in_.ConsumeIntegralInRange(0, 7) != 0) {
      std::tie(request, branch) =
          scheduler->decodes[in_.ConsumeIntegralInRange<size_t>(
              0, scheduler->decodes.size() - 1)];
    } else {
      request = requestId();
      branch = in_.ConsumeIntegralInRange<int32_t>(-1, 3);
    }
    proposeTo(handle, scheduler, request, branch);
  }

  void abort() {
    long index;
    attnc_scheduler handle = pick<attnc_scheduler>(schedulers_, index);
    attnc_scheduler_abort(handle, requestId());
  }

  /// Steps and commits a live scheduler up to `steps` times, as an engine
  /// does, synchronously or overlapped (each step formed before the one
  /// before it is committed): most inputs get past the first steps only
  /// this way.
  void drive() {
    if (schedulers_.empty())
      return;
    long index =
        long(in_.ConsumeIntegralInRange<size_t>(0, schedulers_.size() - 1));
    Scheduler *scheduler = schedulerAt(index);
    if (!scheduler)
      return;
    int steps = in_.ConsumeIntegralInRange(1, 64);
    bool overlap = in_.ConsumeBool();
    NOTE("  %s\n", overlap ? "overlapped" : "synchronous");
    for (int i = 0; i < steps; ++i) {
      attnc_step step = nullptr;
      if (attnc_scheduler_step(scheduler->handle, &step) != ATTNC_OK)
        break;
      checkStep(step, scheduler);
      EXPECT(attnc_step_destroy(step) == ATTNC_OK, 0, 0);
      if (scheduler->uncommitted.size() >= 2 &&
          in_.ConsumeIntegralInRange(0, 7) == 0) {
        attnc_step third = nullptr;
        attnc_status status = attnc_scheduler_step(scheduler->handle, &third);
        EXPECT(status == ATTNC_INVALID_ARGUMENT && !third, status, 3);
      }
      // Overlapped, the step just formed waits while the one before it is
      // committed (a refused commit leaves both: the next step is refused
      // and the drive ends).
      if (!overlap || scheduler->uncommitted.size() >= 2) {
        bool honest = in_.ConsumeIntegralInRange(0, 7) != 0;
        bool arrays = extended_ && in_.ConsumeBool();
        commitTo(scheduler->handle, index, honest, arrays);
      }
      checkScheduler(*scheduler);
      // As a drafter would: drafts for some of the last step's decodes,
      // which the next step that may feed them verifies.
      if (extended_ && scheduler->config.speculative_tokens > 0) {
        std::vector<std::pair<int64_t, int32_t>> decodes = scheduler->decodes;
        for (auto [request, branch] : decodes)
          if (in_.ConsumeIntegralInRange(0, 3) != 0)
            proposeTo(scheduler->handle, scheduler, request, branch);
      }
      if (in_.ConsumeIntegralInRange(0, 15) == 0)
        attnc_scheduler_abort(scheduler->handle, requestId());
    }
  }

  void readPools() {
    long index;
    attnc_kv_pool handle = pick<attnc_kv_pool>(pools_, index);
    bool live = index >= 0 && pools_[size_t(index)].live;
    if (!live) // a bad handle reads 0
      EXPECT(attnc_kv_pool_num_pages(handle) == 0 &&
                 attnc_kv_pool_num_free_pages(handle) == 0 &&
                 attnc_kv_pool_page_size(handle) == 0 &&
                 attnc_kv_pool_key_cache(handle) == 0,
             index, 0);
    long cacheIndex;
    attnc_radix_cache cache = pick<attnc_radix_cache>(caches_, cacheIndex);
    if (!(cacheIndex >= 0 && caches_[size_t(cacheIndex)].live))
      EXPECT(attnc_radix_cache_cached_tokens(cache) == 0, cacheIndex, 0);
  }

  void readSchedulers() {
    long index;
    attnc_scheduler handle = pick<attnc_scheduler>(schedulers_, index);
    attnc_scheduler_stats stats;
    attnc_status status = attnc_scheduler_get_stats(
        handle, in_.ConsumeIntegralInRange(0, 15) ? &stats : nullptr);
    if (!schedulerAt(index)) {
      EXPECT(status != ATTNC_OK && attnc_scheduler_idle(handle) == -1, index,
             0);
    }
  }

  //===--------------------------------------------------------------------===//
  // Invariants
  //===--------------------------------------------------------------------===//

  void checkScheduler(const Scheduler &scheduler) {
    attnc_scheduler_stats s;
    EXPECT(attnc_scheduler_get_stats(scheduler.handle, &s) == ATTNC_OK, 0, 0);
    EXPECT(s.num_waiting >= 0 && s.num_running >= 0, s.num_waiting,
           s.num_running);
    // max_running counts sequences (a request of n samples takes n).
    EXPECT(s.num_running <= scheduler.config.max_running, s.num_running,
           scheduler.config.max_running);
    EXPECT(s.prompt_tokens >= 0 && s.cached_tokens >= 0 &&
               s.computed_prefill_tokens >= 0 && s.recomputed_tokens >= 0,
           s.prompt_tokens, s.cached_tokens);
    EXPECT(s.evicted_tokens >= 0 && s.preemptions >= 0 && s.finished >= 0,
           s.evicted_tokens, s.finished);
    EXPECT(s.cached_tokens <= s.prompt_tokens, s.cached_tokens,
           s.prompt_tokens);
    int idle = attnc_scheduler_idle(scheduler.handle);
    EXPECT(idle == (s.num_waiting + s.num_running == 0 ? 1 : 0), idle,
           s.num_waiting + s.num_running);
  }

  void checkAll() {
    for (const Pool &pool : pools_) {
      if (!pool.live)
        continue;
      int64_t total = attnc_kv_pool_num_pages(pool.handle);
      int64_t free = attnc_kv_pool_num_free_pages(pool.handle);
      EXPECT(total == pool.config.num_pages, total, pool.config.num_pages);
      EXPECT(free >= 0 && free <= total, free, total);
    }
    for (const Cache &cache : caches_) {
      if (!cache.live)
        continue;
      int64_t cached = attnc_radix_cache_cached_tokens(cache.handle);
      int64_t evictable = attnc_radix_cache_evictable_tokens(cache.handle);
      const Pool &pool = pools_[cache.pool];
      EXPECT(evictable >= 0 && evictable <= cached, evictable, cached);
      EXPECT(cached <= pool.config.num_pages * pool.config.page_size, cached,
             pool.config.num_pages);
      int64_t host = attnc_radix_cache_host_tokens(cache.handle);
      EXPECT(host >= 0 && host <= cache.hostPages * pool.config.page_size, host,
             cache.hostPages);
    }
    for (const Scheduler &scheduler : schedulers_)
      if (scheduler.live)
        checkScheduler(scheduler);
  }

  /// Destroys what is left, in an order the input chooses (any order is
  /// allowed); a pool whose handle outlives its caches and schedulers must
  /// then have every page back.
  void destroyAll() {
    bool cachesFirst = in_.ConsumeBool();
    for (Step &step : steps_)
      if (step.live)
        EXPECT(attnc_step_destroy(step.handle) == ATTNC_OK, 0, 0);
    auto schedulers = [&] {
      for (Scheduler &scheduler : schedulers_)
        if (scheduler.live)
          EXPECT(attnc_scheduler_destroy(scheduler.handle) == ATTNC_OK, 0, 0);
    };
    auto caches = [&] {
      for (Cache &cache : caches_)
        if (cache.live)
          EXPECT(attnc_radix_cache_destroy(cache.handle) == ATTNC_OK, 0, 0);
    };
    if (cachesFirst) {
      caches();
      schedulers();
    } else {
      schedulers();
      caches();
    }
    for (Pool &pool : pools_) {
      if (!pool.live)
        continue;
      int64_t free = attnc_kv_pool_num_free_pages(pool.handle);
      EXPECT(free == pool.config.num_pages, free, pool.config.num_pages);
      EXPECT(attnc_kv_pool_destroy(pool.handle) == ATTNC_OK, 0, 0);
    }
  }

  FuzzedDataProvider &in_;
  /// The input ends in kExtendedTrailer: cascade and speculation too.
  const bool extended_;
  std::vector<Pool> pools_;
  std::vector<Cache> caches_;
  std::vector<Scheduler> schedulers_;
  std::vector<Step> steps_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bool extended = size >= 2 && data[size - 2] == kExtendedTrailer[0] &&
                  data[size - 1] == kExtendedTrailer[1];
  FuzzedDataProvider in(data, extended ? size - 2 : size);
  World(in, extended).run();
  return 0;
}
