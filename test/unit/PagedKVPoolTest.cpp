//===- PagedKVPoolTest.cpp - the paged KV pool ----------------------------===//

#include "kv/PagedKVPool.h"
#include "jit/CubinCache.h"
#include "jit/Nvrtc.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <tuple>

using namespace attnc;

namespace {

PoolConfig smallPool(PageOrder order = PageOrder::NHD) {
  PoolConfig config;
  config.numPages = 8;
  config.pageSize = 4;
  config.numKVHeads = 2;
  config.headDim = 8;
  config.elementBytes = 2;
  config.order = order;
  return config;
}

std::unique_ptr<PagedKVPool> makePool(const PoolConfig &config) {
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  EXPECT_TRUE(pool.ok()) << pool.status().toString();
  return std::move(*pool);
}

/// Random 16-bit elements for `tokens` tokens of [heads][dim].
std::vector<uint16_t> randomTokens(std::mt19937 &rng, const PoolConfig &c,
                                   int64_t tokens) {
  std::vector<uint16_t> data(tokens * c.numKVHeads * c.headDim);
  for (uint16_t &x : data)
    x = static_cast<uint16_t>(rng() | 1); // never zero
  return data;
}

void expectToken(const PagedKVPool &pool, PageId page, int64_t slot,
                 const std::vector<uint16_t> &keys, int64_t token) {
  const PoolConfig &c = pool.config();
  for (int64_t head = 0; head < c.numKVHeads; ++head) {
    const auto *stored =
        reinterpret_cast<const uint16_t *>(pool.keyAt(page, slot, head));
    for (int64_t d = 0; d < c.headDim; ++d)
      ASSERT_EQ(stored[d], keys[(token * c.numKVHeads + head) * c.headDim + d])
          << "token " << token << " head " << head << " dim " << d;
  }
}

} // namespace

TEST(PagedKVPool, RejectsBadConfigurations) {
  PoolConfig config = smallPool();
  config.pageSize = 257;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(pool.status().message(),
            "page size must be between 1 and 256, got 257");

  config = smallPool();
  config.numPages = 0;
  EXPECT_EQ(PagedKVPool::create(config).status().code(),
            ErrorCode::InvalidArgument);
  config = smallPool();
  config.elementBytes = 3;
  EXPECT_EQ(PagedKVPool::create(config).status().code(),
            ErrorCode::InvalidArgument);
}

TEST(PagedKVPool, DeviceMemoryWithoutAGpuIsNoDevice) {
  if (cuda::Driver::get().ok())
    GTEST_SKIP() << "a GPU is here: the GPU tests cover device pools";
  PoolConfig config = smallPool();
  config.memory = PoolMemory::Device;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), ErrorCode::NoDevice);
}

TEST(PagedKVPool, HostAllocationFailureIsAnError) {
  // Dims beyond what a kernel reads are refused before any size is computed.
  PoolConfig config = smallPool();
  config.headDim = 1 << 30;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(pool.status().message().find("[1, 1024], got 2 and 1073741824"),
            std::string::npos)
      << pool.status().message();

  // Within the limits, but more than any machine of ours has (2^62 bytes).
  config.numPages = INT32_MAX;
  config.pageSize = 256;
  config.numKVHeads = 1024;
  config.headDim = 1024;
  config.elementBytes = 4;
  pool = PagedKVPool::create(config);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), ErrorCode::OutOfMemory);
  EXPECT_NE(pool.status().message().find("cannot allocate"), std::string::npos)
      << pool.status().message();
}

TEST(PagedKVPool, RunningOutOfPagesChangesNothing) {
  auto pool = makePool(smallPool());
  StatusOr<std::vector<PageId>> six = pool->allocate(6);
  ASSERT_TRUE(six.ok());
  StatusOr<std::vector<PageId>> three = pool->allocate(3);
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.status().code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(three.status().message(),
            "the pool has 2 free pages, 3 are needed");
  EXPECT_EQ(pool->numFreePages(), 2);

  SequenceId sequence = pool->createSequence();
  Status status = pool->reserve(sequence, 3 * pool->pageSize());
  EXPECT_EQ(status.code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(*pool->sequenceLength(sequence), 0);
  EXPECT_EQ(pool->sequencePages(sequence)->size(), 0u);
  EXPECT_EQ(pool->numFreePages(), 2);
  EXPECT_TRUE(pool->checkInvariants().ok());
}

TEST(PagedKVPool, DoubleFreeIsAnError) {
  auto pool = makePool(smallPool());
  std::vector<PageId> pages = *pool->allocate(2);
  ASSERT_TRUE(pool->release(pages).ok());
  Status again = pool->release({pages[0]});
  EXPECT_EQ(again.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(pool->numFreePages(), 8);
  // Releasing one page twice in a single call is caught before any change.
  std::vector<PageId> one = *pool->allocate(1);
  EXPECT_FALSE(pool->release({one[0], one[0]}).ok());
  EXPECT_EQ(pool->refCount(one[0]), 1);
  EXPECT_FALSE(pool->retain({99}).ok());
  EXPECT_TRUE(pool->checkInvariants().ok());
}

class PagedKVPoolLayout : public ::testing::TestWithParam<PageOrder> {};

TEST_P(PagedKVPoolLayout, AppendedTokensReadBack) {
  PoolConfig config = smallPool(GetParam());
  auto pool = makePool(config);
  std::mt19937 rng(7);
  SequenceId sequence = pool->createSequence();
  std::vector<uint16_t> keys = randomTokens(rng, config, 10);
  std::vector<uint16_t> values = randomTokens(rng, config, 10);
  // Two appends that straddle a page boundary.
  ASSERT_TRUE(pool->append(sequence, keys.data(), values.data(), 6).ok());
  ASSERT_TRUE(pool->append(sequence, keys.data() + 6 * 2 * 8,
                           values.data() + 6 * 2 * 8, 4)
                  .ok());
  std::vector<PageId> pages = *pool->sequencePages(sequence);
  ASSERT_EQ(pages.size(), 3u);
  for (int64_t t = 0; t < 10; ++t)
    expectToken(*pool, pages[t / 4], t % 4, keys, t);
  const auto *v =
      reinterpret_cast<const uint16_t *>(pool->valueAt(pages[2], 1, 1));
  EXPECT_EQ(v[3], values[(9 * 2 + 1) * 8 + 3]);
}

INSTANTIATE_TEST_SUITE_P(BothOrders, PagedKVPoolLayout,
                         ::testing::Values(PageOrder::NHD, PageOrder::HND),
                         [](const ::testing::TestParamInfo<PageOrder> &info) {
                           return info.param == PageOrder::NHD ? "NHD" : "HND";
                         });

TEST(PagedKVPool, ForkCopiesTheSharedPartialPageOnWrite) {
  PoolConfig config = smallPool();
  auto pool = makePool(config);
  std::mt19937 rng(11);
  std::vector<uint16_t> keys = randomTokens(rng, config, 6);
  SequenceId parent = pool->createSequence();
  ASSERT_TRUE(pool->append(parent, keys.data(), keys.data(), 6).ok());
  SequenceId child = *pool->fork(parent);
  std::vector<PageId> shared = *pool->sequencePages(parent);
  EXPECT_EQ(*pool->sequencePages(child), shared);
  EXPECT_EQ(pool->refCount(shared[0]), 2);
  EXPECT_EQ(pool->refCount(shared[1]), 2);

  std::vector<uint16_t> more = randomTokens(rng, config, 1);
  ASSERT_TRUE(pool->append(child, more.data(), more.data(), 1).ok());
  std::vector<PageId> childPages = *pool->sequencePages(child);
  EXPECT_EQ(childPages[0], shared[0]) << "full pages stay shared";
  EXPECT_NE(childPages[1], shared[1]) << "the partial page was copied";
  EXPECT_EQ(pool->refCount(shared[1]), 1);
  // The copy holds the parent's two tokens, then the child's new one.
  expectToken(*pool, childPages[1], 0, keys, 4);
  expectToken(*pool, childPages[1], 1, keys, 5);
  expectToken(*pool, childPages[1], 2, more, 0);
  EXPECT_EQ(*pool->sequenceLength(parent), 6);

  // The parent now owns its partial page alone and writes in place.
  ASSERT_TRUE(pool->append(parent, more.data(), more.data(), 1).ok());
  EXPECT_EQ((*pool->sequencePages(parent))[1], shared[1]);
  ASSERT_TRUE(pool->freeSequence(parent).ok());
  ASSERT_TRUE(pool->freeSequence(child).ok());
  EXPECT_EQ(pool->numFreePages(), 8);
  EXPECT_TRUE(pool->checkInvariants().ok());
}

TEST(PagedKVPool, ExportsPageTablesAsCSR) {
  PoolConfig config = smallPool();
  config.memory = PoolMemory::AccountingOnly;
  auto pool = makePool(config);
  SequenceId a = pool->createSequence(), b = pool->createSequence(),
             c = pool->createSequence();
  ASSERT_TRUE(pool->append(a, nullptr, nullptr, 5).ok());
  ASSERT_TRUE(pool->append(b, nullptr, nullptr, 8).ok());
  ASSERT_TRUE(pool->append(c, nullptr, nullptr, 1).ok());
  PageTable table = *pool->pageTable({a, b, c});
  EXPECT_EQ(table.indptr, (std::vector<int32_t>{0, 2, 4, 5}));
  EXPECT_EQ(table.lastPageLen, (std::vector<int32_t>{1, 4, 1}));
  std::vector<PageId> pagesA = *pool->sequencePages(a);
  EXPECT_EQ(table.indices[0], pagesA[0]);
  EXPECT_EQ(table.indices[1], pagesA[1]);
  EXPECT_EQ(pool->pageTable({a, 42}).status().code(), ErrorCode::NotFound);
}

// Thousands of random operations against a model of what each sequence
// holds; after each one the pool's invariants hold, and at the end every
// page is free again.
TEST(PagedKVPool, RandomOperationsKeepInvariants) {
  PoolConfig config = smallPool();
  config.numPages = 64;
  config.pageSize = 3;
  config.numKVHeads = 1;
  config.headDim = 2;
  auto pool = makePool(config);
  std::mt19937 rng(2024);
  std::map<SequenceId, std::vector<uint16_t>> model; // keys, token by token
  uint16_t next = 1;
  for (int op = 0; op < 5000; ++op) {
    int kind = rng() % 4;
    if (kind == 0 || model.empty()) {
      model[pool->createSequence()] = {};
    } else {
      auto it = std::next(model.begin(), rng() % model.size());
      SequenceId id = it->first;
      if (kind == 1) {
        int64_t count = 1 + rng() % 5;
        std::vector<uint16_t> data;
        for (int64_t i = 0; i < count * 2; ++i)
          data.push_back(next++ | 1);
        int64_t freeBefore = pool->numFreePages();
        Status status = pool->append(id, data.data(), data.data(), count);
        if (status.ok()) {
          it->second.insert(it->second.end(), data.begin(), data.end());
        } else {
          ASSERT_EQ(status.code(), ErrorCode::OutOfMemory);
          ASSERT_EQ(pool->numFreePages(), freeBefore);
        }
      } else if (kind == 2) {
        StatusOr<SequenceId> child = pool->fork(id);
        ASSERT_TRUE(child.ok());
        model[*child] = it->second;
      } else {
        ASSERT_TRUE(pool->freeSequence(id).ok());
        model.erase(it);
      }
    }
    ASSERT_TRUE(pool->checkInvariants().ok()) << "after operation " << op;
    if (op % 250 == 0)
      for (const auto &[id, keys] : model) {
        std::vector<PageId> pages = *pool->sequencePages(id);
        for (size_t t = 0; t < keys.size() / 2; ++t) {
          const auto *stored = reinterpret_cast<const uint16_t *>(
              pool->keyAt(pages[t / 3], t % 3, 0));
          ASSERT_EQ(stored[0], keys[2 * t]) << "sequence " << id;
        }
      }
  }
  for (const auto &[id, keys] : model)
    ASSERT_TRUE(pool->freeSequence(id).ok());
  EXPECT_EQ(pool->numFreePages(), pool->numPages());
}

// The caches are what PagedAttention reads: K and V apart, each
// [pages][page_size][heads][dim] (NHD) or [pages][heads][page_size][dim]
// (HND), indexed here without the pool's own offset function.
TEST(PagedKVPool, CachesAreTheKernelsPagedLayout) {
  for (PageOrder order : {PageOrder::NHD, PageOrder::HND}) {
    PoolConfig c = smallPool(order);
    std::unique_ptr<PagedKVPool> pool = makePool(c);
    std::mt19937 rng(7);
    SequenceId sequence = pool->createSequence();
    int64_t tokens = 11;
    std::vector<uint16_t> keys = randomTokens(rng, c, tokens);
    std::vector<uint16_t> values = randomTokens(rng, c, tokens);
    ASSERT_TRUE(
        pool->append(sequence, keys.data(), values.data(), tokens).ok());
    std::vector<PageId> pages = *pool->sequencePages(sequence);
    const auto *k = reinterpret_cast<const uint16_t *>(pool->keyCache());
    const auto *v = reinterpret_cast<const uint16_t *>(pool->valueCache());
    ASSERT_GE(reinterpret_cast<const std::byte *>(v),
              reinterpret_cast<const std::byte *>(k) + pool->cacheBytes());
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < c.numKVHeads; ++h)
        for (int64_t d = 0; d < c.headDim; ++d) {
          int64_t page = pages[t / c.pageSize], slot = t % c.pageSize;
          int64_t row = order == PageOrder::NHD
                            ? (page * c.pageSize + slot) * c.numKVHeads + h
                            : (page * c.numKVHeads + h) * c.pageSize + slot;
          size_t source = size_t((t * c.numKVHeads + h) * c.headDim + d);
          ASSERT_EQ(k[row * c.headDim + d], keys[source]) << t << " " << h;
          ASSERT_EQ(v[row * c.headDim + d], values[source]) << t << " " << h;
        }
  }
}

// A slot is page * page_size + position in the page; only reserved
// positions have one.
TEST(PagedKVPool, SlotsOfReservedTokens) {
  PoolConfig c = smallPool();
  std::unique_ptr<PagedKVPool> pool = makePool(c);
  SequenceId sequence = pool->createSequence();
  std::mt19937 rng(3);
  std::vector<uint16_t> data = randomTokens(rng, c, 7);
  ASSERT_TRUE(pool->append(sequence, data.data(), data.data(), 7).ok());
  std::vector<PageId> pages = *pool->sequencePages(sequence);
  StatusOr<std::vector<int64_t>> slots = pool->slots(sequence, 2, 5);
  ASSERT_TRUE(slots.ok()) << slots.status().toString();
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ((*slots)[size_t(i)],
              pages[(2 + i) / c.pageSize] * c.pageSize + (2 + i) % c.pageSize);
  StatusOr<std::vector<int64_t>> beyond = pool->slots(sequence, 6, 3);
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().message(),
            "tokens [6, 9) of sequence 0 are not reserved (8 slots)");
}

// appendSlots writes what it is given at the slots it is given, skipping
// negative ones; a slot past the pool is refused before anything is written.
TEST(PagedKVPool, AppendSlotsWritesGivenSlots) {
  PoolConfig c = smallPool();
  std::unique_ptr<PagedKVPool> pool = makePool(c);
  std::mt19937 rng(9);
  std::vector<uint16_t> keys = randomTokens(rng, c, 3);
  std::vector<uint16_t> values = randomTokens(rng, c, 3);
  std::vector<int64_t> slots = {5, -1, 30};
  int64_t stride = c.numKVHeads * c.headDim;
  auto address = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  Status status =
      pool->appendSlots(address(keys.data()), address(values.data()), stride,
                        stride, address(slots.data()), 3);
  ASSERT_TRUE(status.ok()) << status.toString();
  expectToken(*pool, 1, 1, keys, 0); // slot 5: page 1, position 1
  expectToken(*pool, 7, 2, keys, 2); // slot 30: page 7, position 2

  std::vector<uint16_t> before(
      reinterpret_cast<const uint16_t *>(pool->keyAt(1, 1, 0)),
      reinterpret_cast<const uint16_t *>(pool->keyAt(1, 1, 0)) + c.headDim);
  std::vector<int64_t> bad = {5, 32};
  std::vector<uint16_t> other = randomTokens(rng, c, 2);
  status = pool->appendSlots(address(other.data()), address(other.data()),
                             stride, stride, address(bad.data()), 2);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "slot 32 of token 1 is past the pool's 32");
  EXPECT_TRUE(
      std::equal(before.begin(), before.end(),
                 reinterpret_cast<const uint16_t *>(pool->keyAt(1, 1, 0))));

  status = pool->appendSlots(address(keys.data()), address(values.data()),
                             stride - 1, stride, address(slots.data()), 3);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "token strides must hold a token's 16 "
                              "elements, got 15 and 16");
}

// A fork after reserving shares the reserved pages too: whichever side
// writes first gets pages of its own, the partial one copied, so that
// neither overwrites the other's tokens.
TEST(PagedKVPool, ForkOfReservedPagesCopiesOnWrite) {
  PoolConfig c = smallPool();
  std::unique_ptr<PagedKVPool> pool = makePool(c);
  std::mt19937 rng(4);
  SequenceId a = pool->createSequence();
  std::vector<uint16_t> prefix = randomTokens(rng, c, 5);
  ASSERT_TRUE(pool->append(a, prefix.data(), prefix.data(), 5).ok());
  ASSERT_TRUE(pool->reserve(a, 8).ok()); // pages for 13 tokens, 5 written
  SequenceId b = *pool->fork(a);
  std::vector<uint16_t> forB = randomTokens(rng, c, 3);
  std::vector<uint16_t> forA = randomTokens(rng, c, 3);
  ASSERT_TRUE(pool->append(b, forB.data(), forB.data(), 3).ok());
  ASSERT_TRUE(pool->append(a, forA.data(), forA.data(), 3).ok());
  for (auto [sequence, tail] : {std::pair{a, &forA}, std::pair{b, &forB}}) {
    std::vector<PageId> pages = *pool->sequencePages(sequence);
    for (int64_t t = 0; t < 8; ++t)
      expectToken(*pool, pages[t / c.pageSize], t % c.pageSize,
                  t < 5 ? prefix : *tail, t < 5 ? t : t - 5);
  }
  EXPECT_TRUE(pool->checkInvariants().ok());
}

// The device pool's kernels compile for every target and odd layouts (a
// row of 3 or 20 bytes copies in 1- or 4-byte chunks) without a GPU.
TEST(PagedKVPool, KernelsCompileForEveryLayout) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
  PoolConfig config = smallPool();
  for (auto [order, headDim, bytes] :
       {std::tuple{PageOrder::NHD, 128, 2}, std::tuple{PageOrder::HND, 3, 1},
        std::tuple{PageOrder::HND, 10, 2}}) {
    config.order = order;
    config.headDim = headDim;
    config.elementBytes = bytes;
    std::string source = PoolKernels::source(config);
    for (const char *arch : {"sm_80", "sm_90a"}) {
      StatusOr<std::string> cubin = jit::cachedCubin(source, arch, "-");
      ASSERT_TRUE(cubin.ok())
          << arch << ": " << cubin.status().toString() << "\n"
          << source;
      EXPECT_FALSE(cubin->empty());
    }
  }
}

// Attention reads whole pages, slots past a request's end included: a new
// pool's caches hold zeros there, never bits that could be NaN.
TEST(PagedKVPool, ANewPoolIsZero) {
  PoolConfig config = smallPool();
  std::unique_ptr<PagedKVPool> pool = *PagedKVPool::create(config);
  for (PageId page = 0; page < PageId(config.numPages); ++page)
    for (int64_t slot = 0; slot < config.pageSize; ++slot)
      for (int64_t head = 0; head < config.numKVHeads; ++head)
        for (const std::byte *row :
             {pool->keyAt(page, slot, head), pool->valueAt(page, slot, head)})
          for (int64_t b = 0; b < config.headDim * config.elementBytes; ++b)
            ASSERT_EQ(row[b], std::byte{0})
                << "page " << page << " slot " << slot << " head " << head;
}

// The layer axis: layer l's key cache starts 2 l cache strides in, its
// value cache one stride after it (kv_pool.h's poolCacheOffset); one layer
// is today's key and value caches.
TEST(PagedKVPool, LayersFollowOneAnotherKeysThenValues) {
  PoolConfig c = smallPool();
  int64_t stride =
      poolCacheStride(c.numPages, poolPageBytes(c.pageSize, c.numKVHeads,
                                                c.headDim, c.elementBytes));
  std::unique_ptr<PagedKVPool> one = makePool(c);
  EXPECT_EQ(one->numLayers(), 1);
  EXPECT_EQ(one->valueCache() - one->keyCache(), uint64_t(stride));
  EXPECT_EQ(one->keyCache(1), 0u);
  c.numLayers = 3;
  std::unique_ptr<PagedKVPool> pool = makePool(c);
  EXPECT_EQ(pool->layerBytes(), 2 * stride);
  for (int64_t layer = 0; layer < 3; ++layer) {
    EXPECT_EQ(pool->keyCache(layer) - pool->keyCache(0),
              uint64_t(2 * layer * stride));
    EXPECT_EQ(pool->valueCache(layer) - pool->keyCache(0),
              uint64_t((2 * layer + 1) * stride));
    EXPECT_EQ(pool->keyAt(3, 1, 1, layer),
              reinterpret_cast<const std::byte *>(pool->keyCache(layer)) +
                  poolRowOffset(poolSlot(3, 4, 1), 1, c.order, 4, 2, 8, 2));
  }
  EXPECT_EQ(pool->keyCache(3), 0u);
  EXPECT_EQ(pool->valueCache(-1), 0u);
  EXPECT_EQ(pool->keyAt(0, 0, 0, 3), nullptr);
  EXPECT_EQ(poolBytes(3, c.numPages, pool->pageBytes()),
            5 * stride + pool->cacheBytes());

  c.numLayers = 0;
  EXPECT_EQ(PagedKVPool::create(c).status().message(),
            "a pool holds between 1 and 65535 layers, got 0");
  c.numLayers = 65536;
  EXPECT_EQ(PagedKVPool::create(c).status().code(), ErrorCode::InvalidArgument);
  // Within the limits, past any size int64 counts.
  c.numLayers = 65535;
  c.numPages = INT32_MAX;
  c.pageSize = 256;
  c.numKVHeads = 1024;
  c.headDim = 1024;
  c.elementBytes = 4;
  Status huge = PagedKVPool::create(c).status();
  EXPECT_EQ(huge.code(), ErrorCode::OutOfMemory);
  EXPECT_NE(huge.message().find("past any memory"), std::string::npos)
      << huge.message();
}

// appendSlots writes one layer, leaves the others, and refuses a layer
// outside the pool before anything is written.
TEST(PagedKVPool, AppendSlotsWritesOneLayer) {
  PoolConfig c = smallPool();
  c.numLayers = 2;
  std::unique_ptr<PagedKVPool> pool = makePool(c);
  std::mt19937 rng(3);
  std::vector<uint16_t> keys = randomTokens(rng, c, 2);
  std::vector<uint16_t> values = randomTokens(rng, c, 2);
  std::vector<int64_t> slots = {5, 9};
  auto address = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
  int64_t stride = c.numKVHeads * c.headDim;
  for (int64_t layer : {-1, 2}) {
    Status status =
        pool->appendSlots(layer, address(keys.data()), address(values.data()),
                          stride, stride, address(slots.data()), 2, nullptr);
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(status.message(), "layer " + std::to_string(layer) +
                                    " is not in the pool's 2 layers");
  }
  ASSERT_TRUE(pool->appendSlots(1, address(keys.data()), address(values.data()),
                                stride, stride, address(slots.data()), 2,
                                nullptr)
                  .ok());
  for (int64_t head = 0; head < c.numKVHeads; ++head) {
    const auto *k1 = reinterpret_cast<const uint16_t *>(
        pool->keyAt(2, 1, head, /*layer=*/1));
    const auto *v1 = reinterpret_cast<const uint16_t *>(
        pool->valueAt(2, 1, head, /*layer=*/1));
    const auto *k0 = reinterpret_cast<const uint16_t *>(
        pool->keyAt(2, 1, head, /*layer=*/0));
    for (int64_t d = 0; d < c.headDim; ++d) {
      EXPECT_EQ(k1[d], keys[size_t((stride + head * c.headDim) + d)]);
      EXPECT_EQ(v1[d], values[size_t((stride + head * c.headDim) + d)]);
      EXPECT_EQ(k0[d], 0) << "layer 0 was not written";
    }
  }
}

// Copies go into every layer, in order; a page outside the pool is refused
// before anything is copied. A sequence append writes every layer and
// copies a shared partial page in every layer.
TEST(PagedKVPool, CopiesAndAppendsReachEveryLayer) {
  PoolConfig c = smallPool();
  c.numLayers = 3;
  std::unique_ptr<PagedKVPool> pool = makePool(c);
  std::mt19937 rng(5);
  int64_t row = c.numKVHeads * c.headDim;
  // 6 tokens of every layer: [layers][tokens][heads][dim].
  std::vector<uint16_t> keys = randomTokens(rng, c, 3 * 6);
  std::vector<uint16_t> values = randomTokens(rng, c, 3 * 6);
  SequenceId parent = pool->createSequence();
  ASSERT_TRUE(pool->append(parent, keys.data(), values.data(), 6).ok());
  std::vector<PageId> pages = *pool->sequencePages(parent);
  auto expectRows = [&](PageId page, int64_t inPage,
                        const std::vector<uint16_t> &k,
                        const std::vector<uint16_t> &v, int64_t token,
                        int64_t tokens) {
    for (int64_t layer = 0; layer < 3; ++layer)
      for (int64_t head = 0; head < c.numKVHeads; ++head) {
        size_t from = size_t((layer * tokens + token) * row + head * c.headDim);
        ASSERT_EQ(std::memcmp(pool->keyAt(page, inPage, head, layer), &k[from],
                              size_t(c.headDim * 2)),
                  0)
            << "layer " << layer << " head " << head;
        ASSERT_EQ(std::memcmp(pool->valueAt(page, inPage, head, layer),
                              &v[from], size_t(c.headDim * 2)),
                  0)
            << "layer " << layer << " head " << head;
      }
  };
  for (int64_t t = 0; t < 6; ++t)
    expectRows(pages[size_t(t / 4)], t % 4, keys, values, t, 6);

  // A fork's append copies the shared partial page in every layer first.
  SequenceId child = *pool->fork(parent);
  std::vector<uint16_t> more = randomTokens(rng, c, 3);
  ASSERT_TRUE(pool->append(child, more.data(), more.data(), 1).ok());
  PageId copy = (*pool->sequencePages(child))[1];
  EXPECT_NE(copy, pages[1]);
  for (int64_t t = 4; t < 6; ++t)
    expectRows(copy, t - 4, keys, values, t, 6);
  expectRows(copy, 2, more, more, 0, 1);

  // copyPages: in order, every layer.
  std::vector<PageId> spare = *pool->allocate(2);
  ASSERT_TRUE(
      pool->copyPages({{pages[0], spare[0]}, {spare[0], spare[1]}}, nullptr)
          .ok());
  for (int64_t t = 0; t < 4; ++t) {
    expectRows(spare[0], t, keys, values, t, 6);
    expectRows(spare[1], t, keys, values, t, 6);
  }
  Status bad = pool->copyPages({{pages[1], spare[0]}, {pages[0], 8}}, nullptr);
  EXPECT_EQ(bad.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(bad.message(),
            "copy 1 names page 8, which is not in the pool of 8 pages");
  for (int64_t t = 0; t < 4; ++t)
    expectRows(spare[0], t, keys, values, t, 6); // the first copy did not run
  // copyPageContents: pages in use, every layer.
  EXPECT_EQ(pool->copyPageContents(pages[0], 7).code(),
            ErrorCode::InvalidArgument)
      << "page 7 is free";
  ASSERT_TRUE(pool->copyPageContents(pages[1], spare[1]).ok());
  for (int64_t t = 4; t < 6; ++t)
    expectRows(spare[1], t - 4, keys, values, t, 6);
  EXPECT_TRUE(pool->checkInvariants().ok());
}
