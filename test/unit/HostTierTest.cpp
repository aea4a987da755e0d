//===- HostTierTest.cpp - host pages under a paged KV pool ----------------===//

#include "kv/HostTier.h"
#include "TestPools.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

using namespace attnc;

namespace {

PoolConfig layeredPool(int64_t layers = 3) {
  PoolConfig config;
  config.numPages = 8;
  config.pageSize = 4;
  config.numKVHeads = 2;
  config.headDim = 8;
  config.elementBytes = 2;
  config.numLayers = layers;
  return config;
}

std::unique_ptr<PagedKVPool> makePool(const PoolConfig &config) {
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  EXPECT_TRUE(pool.ok()) << pool.status().toString();
  return std::move(*pool);
}

std::unique_ptr<HostTier> makeTier(PagedKVPool &pool, int64_t pages) {
  StatusOr<std::unique_ptr<HostTier>> tier = HostTier::create(pool, pages);
  EXPECT_TRUE(tier.ok()) << tier.status().toString();
  return std::move(*tier);
}

/// Page `page`'s key (`which` 0) or value (1) bytes of layer `layer` in a
/// host pool.
std::byte *poolBytes(PagedKVPool &pool, int which, int64_t layer, PageId page) {
  uint64_t cache = which == 0 ? pool.keyCache(layer) : pool.valueCache(layer);
  return reinterpret_cast<std::byte *>(cache) + page * pool.pageBytes();
}

/// Fills page `page` with random bytes in every layer, keys and values.
void fillPage(PagedKVPool &pool, PageId page, std::mt19937 &rng) {
  for (int64_t layer = 0; layer < pool.numLayers(); ++layer)
    for (int which = 0; which < 2; ++which) {
      std::byte *bytes = poolBytes(pool, which, layer, page);
      for (int64_t i = 0; i < pool.pageBytes(); ++i)
        bytes[i] = std::byte(rng());
    }
}

/// Whether pages `a` and `b` of the pool hold the same bytes in every
/// layer, keys and values.
bool samePage(PagedKVPool &pool, PageId a, PageId b) {
  for (int64_t layer = 0; layer < pool.numLayers(); ++layer)
    for (int which = 0; which < 2; ++which)
      if (std::memcmp(poolBytes(pool, which, layer, a),
                      poolBytes(pool, which, layer, b),
                      size_t(pool.pageBytes())) != 0)
        return false;
  return true;
}

} // namespace

TEST(HostTier, RejectsBadSizes) {
  auto pool = makePool(layeredPool());
  StatusOr<std::unique_ptr<HostTier>> tier = HostTier::create(*pool, 0);
  ASSERT_FALSE(tier.ok());
  EXPECT_EQ(tier.status().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(tier.status().message(),
            "a host tier needs between 1 and 2^31-1 pages, got 0");
  EXPECT_EQ(HostTier::create(*pool, int64_t(INT32_MAX) + 1).status().code(),
            ErrorCode::InvalidArgument);
}

TEST(HostTier, HostAllocationFailureIsAnError) {
  // Pages of 1 MiB: 2^31 of them in keys and values is 4 PiB, past any
  // address space.
  PoolConfig config = layeredPool(1);
  config.numPages = 1;
  config.pageSize = 256;
  config.numKVHeads = 16;
  config.headDim = 64;
  config.elementBytes = 4;
  auto pool = makePool(config);
  StatusOr<std::unique_ptr<HostTier>> tier = HostTier::create(*pool, INT32_MAX);
  ASSERT_FALSE(tier.ok());
  EXPECT_EQ(tier.status().code(), ErrorCode::OutOfMemory);
  EXPECT_NE(
      tier.status().message().find("bytes of host memory for the host tier"),
      std::string::npos)
      << tier.status().message();
}

namespace {

// A device pool of `config` and its tier of `pages` pages, or why not: no
// GPU here.
struct DeviceTier {
  std::unique_ptr<PagedKVPool> pool;
  std::unique_ptr<HostTier> tier;
  std::string missing;
};
DeviceTier makeDeviceTier(PoolConfig config, int64_t pages) {
  DeviceTier made;
  config.memory = PoolMemory::Device;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  if (!pool.ok()) {
    made.missing = "no device pool here (" + pool.status().message() + ")";
    return made;
  }
  made.pool = std::move(*pool);
  StatusOr<std::unique_ptr<HostTier>> tier =
      HostTier::create(*made.pool, pages);
  EXPECT_TRUE(tier.ok()) << tier.status().toString();
  if (tier.ok())
    made.tier = std::move(*tier);
  return made;
}

} // namespace

// Pages offloaded from the device and loaded back into other device pages
// hold the same bytes in every layer; the tier reads them in between.
TEST(HostTier, DeviceTierRoundTripsEveryLayer) {
  DeviceTier made = makeDeviceTier(layeredPool(3), 4);
  if (!made.missing.empty())
    GTEST_SKIP() << made.missing;
  ASSERT_TRUE(made.tier);
  PagedKVPool &pool = *made.pool;
  cuda::Driver *driver = *cuda::Driver::get();
  size_t bytes = size_t(pool.pageBytes());
  auto at = [&](int which, int64_t layer, PageId page) {
    return (which == 0 ? pool.keyCache(layer) : pool.valueCache(layer)) +
           uint64_t(page) * bytes;
  };
  std::vector<PageId> device = *pool.allocate(4);
  std::mt19937 rng(3);
  // expected[layer][which][k]: page device[k]'s bytes.
  std::vector<std::vector<std::vector<std::vector<std::byte>>>> expected(
      size_t(pool.numLayers()));
  for (int64_t layer = 0; layer < pool.numLayers(); ++layer)
    for (int which = 0; which < 2; ++which) {
      expected[size_t(layer)].emplace_back();
      for (size_t k = 0; k < 2; ++k) {
        std::vector<std::byte> data(bytes);
        for (std::byte &b : data)
          b = std::byte(rng());
        ASSERT_TRUE(
            driver
                ->copyToDevice(at(which, layer, device[k]), data.data(), bytes)
                .ok());
        expected[size_t(layer)][size_t(which)].push_back(std::move(data));
      }
    }
  std::vector<HostPageId> host = *made.tier->allocate(2);
  // One run of two pages out, then two single pages back, crossed.
  ASSERT_TRUE(made.tier
                  ->transfer({{host[0], device[0], TransferDirection::Offload},
                              {host[1], device[1], TransferDirection::Offload}})
                  .ok());
  ASSERT_TRUE(made.tier
                  ->transfer({{host[1], device[3], TransferDirection::Load},
                              {host[0], device[2], TransferDirection::Load}})
                  .ok());
  ASSERT_TRUE(driver->synchronize().ok());
  for (int64_t layer = 0; layer < pool.numLayers(); ++layer)
    for (int which = 0; which < 2; ++which)
      for (size_t k = 0; k < 2; ++k) {
        const std::vector<std::byte> &want =
            expected[size_t(layer)][size_t(which)][k];
        const std::byte *inTier =
            which == 0 ? made.tier->keyAt(host[k], 0, 0, layer)
                       : made.tier->valueAt(host[k], 0, 0, layer);
        ASSERT_NE(inTier, nullptr);
        EXPECT_EQ(std::memcmp(inTier, want.data(), bytes), 0)
            << "layer " << layer << " cache " << which << " page " << k;
        std::vector<std::byte> back(bytes);
        ASSERT_TRUE(driver
                        ->copyToHost(back.data(),
                                     at(which, layer, device[2 + k]), bytes)
                        .ok());
        EXPECT_EQ(back, want)
            << "layer " << layer << " cache " << which << " page " << k;
      }
}

TEST(HostTier, PinnedAllocationFailureIsAnError) {
  // Pages of 1 MiB: 2^31 of them in keys and values is 4 PiB.
  PoolConfig config = layeredPool(1);
  config.numPages = 1;
  config.pageSize = 256;
  config.numKVHeads = 16;
  config.headDim = 64;
  config.elementBytes = 4;
  DeviceTier made = makeDeviceTier(config, 1);
  if (!made.missing.empty())
    GTEST_SKIP() << made.missing;
  StatusOr<std::unique_ptr<HostTier>> tier =
      HostTier::create(*made.pool, INT32_MAX);
  ASSERT_FALSE(tier.ok());
  EXPECT_EQ(tier.status().code(), ErrorCode::OutOfMemory)
      << tier.status().toString();
  EXPECT_NE(tier.status().message().find("cannot pin"), std::string::npos)
      << tier.status().message();
}

TEST(HostTier, AllocationIsAllOrNothing) {
  auto pool = makePool(layeredPool());
  auto tier = makeTier(*pool, 4);
  StatusOr<std::vector<HostPageId>> pages = tier->allocate(3);
  ASSERT_TRUE(pages.ok());
  EXPECT_EQ(*pages, (std::vector<HostPageId>{0, 1, 2}));
  StatusOr<std::vector<HostPageId>> more = tier->allocate(2);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(more.status().message(),
            "the host tier has 1 free pages, 2 are needed");
  EXPECT_EQ(tier->numFreePages(), 1);
  EXPECT_EQ(tier->allocate(-1).status().message(),
            "cannot allocate -1 host pages");

  tier->setFaultHook([](HostTier::Operation) {
    return Status::error(ErrorCode::OutOfMemory, "injected");
  });
  EXPECT_EQ(tier->allocate(1).status().message(), "injected");
  EXPECT_EQ(tier->numFreePages(), 1);
  tier->setFaultHook(nullptr);

  // A bad release changes nothing, whichever page is bad.
  EXPECT_EQ(tier->release({0, 3}).message(), "host page 3 is free");
  EXPECT_EQ(tier->release({0, 0}).message(), "host page 0 is released twice");
  EXPECT_EQ(tier->release({4}).message(),
            "host page 4 is not in the tier of 4 pages");
  EXPECT_EQ(tier->numFreePages(), 1);
  ASSERT_TRUE(tier->release(*pages).ok());
  EXPECT_EQ(tier->numFreePages(), 4);
  EXPECT_TRUE(tier->checkInvariants().ok());
}

// Offloading pages and loading them back into other device pages returns
// the same bytes, in every layer, keys and values.
TEST(HostTier, TransfersRoundTripEveryLayer) {
  for (PageOrder order : {PageOrder::NHD, PageOrder::HND}) {
    PoolConfig config = layeredPool(3);
    config.order = order;
    auto pool = makePool(config);
    auto tier = makeTier(*pool, 4);
    std::mt19937 rng(5);
    std::vector<PageId> device = *pool->allocate(4);
    for (PageId page : device)
      fillPage(*pool, page, rng);
    std::vector<HostPageId> host = *tier->allocate(2);
    ASSERT_TRUE(
        tier->transfer({{host[0], device[0], TransferDirection::Offload},
                        {host[1], device[1], TransferDirection::Offload}})
            .ok());
    // The host page reads as the device page did, row by row.
    const PoolConfig &c = pool->config();
    for (int64_t layer = 0; layer < c.numLayers; ++layer)
      for (int64_t slot = 0; slot < c.pageSize; ++slot)
        for (int64_t head = 0; head < c.numKVHeads; ++head) {
          size_t row = size_t(c.headDim * c.elementBytes);
          ASSERT_EQ(std::memcmp(tier->keyAt(host[0], slot, head, layer),
                                pool->keyAt(device[0], slot, head, layer), row),
                    0);
          ASSERT_EQ(std::memcmp(tier->valueAt(host[1], slot, head, layer),
                                pool->valueAt(device[1], slot, head, layer),
                                row),
                    0);
        }
    // Loaded into the other two device pages, in order: the first load
    // reads what the offload wrote.
    ASSERT_TRUE(tier->transfer({{host[0], device[2], TransferDirection::Load},
                                {host[1], device[3], TransferDirection::Load}})
                    .ok());
    EXPECT_TRUE(samePage(*pool, device[0], device[2]));
    EXPECT_TRUE(samePage(*pool, device[1], device[3]));
    EXPECT_FALSE(samePage(*pool, device[0], device[1]));
    EXPECT_EQ(tier->keyAt(host[0], 0, 0, 3), nullptr) << "no layer 3";
    EXPECT_EQ(tier->keyAt(4, 0, 0, 0), nullptr) << "no page 4";
  }
}

TEST(HostTier, TransfersCheckEveryPageFirst) {
  auto pool = makePool(layeredPool(2));
  auto tier = makeTier(*pool, 4);
  std::mt19937 rng(9);
  std::vector<PageId> device = *pool->allocate(2);
  fillPage(*pool, device[0], rng);
  std::vector<HostPageId> host = *tier->allocate(1);
  ASSERT_TRUE(
      tier->transfer({{host[0], device[0], TransferDirection::Offload}}).ok());
  fillPage(*pool, device[1], rng);
  // The second transfer is bad: the first does not happen either.
  Status status = tier->transfer({{host[0], device[1], TransferDirection::Load},
                                  {2, device[0], TransferDirection::Load}});
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(status.message(), "transfer 1 names host page 2, which is not in "
                              "use in the tier of 4 pages");
  EXPECT_FALSE(samePage(*pool, device[0], device[1]));
  status = tier->transfer({{host[0], 5, TransferDirection::Load}});
  EXPECT_EQ(status.message(), "transfer 0 names device page 5, which is not "
                              "in use in the pool of 8 pages");
  EXPECT_EQ(tier->transfer({{host[0], 8, TransferDirection::Load}}).code(),
            ErrorCode::InvalidArgument);
  tier->setFaultHook([](HostTier::Operation operation) {
    return operation == HostTier::Operation::Transfer
               ? Status::error(ErrorCode::CudaError, "injected")
               : Status();
  });
  EXPECT_EQ(
      tier->transfer({{host[0], device[1], TransferDirection::Load}}).message(),
      "injected");
  EXPECT_FALSE(samePage(*pool, device[0], device[1]));
}

// Over an accounting pool the tier keeps no bytes: the engine whose caches
// are its own makes the transfers it reports.
TEST(HostTier, AccountingPoolKeepsOnlyTheAccounting) {
  auto pool = makeAccountingPool(8, 4);
  auto tier = makeTier(*pool, 1 << 20);
  std::vector<PageId> device = *pool->allocate(1);
  std::vector<HostPageId> host = *tier->allocate(1);
  EXPECT_TRUE(
      tier->transfer({{host[0], device[0], TransferDirection::Offload}}).ok());
  EXPECT_EQ(tier->keyAt(host[0], 0, 0), nullptr);
  EXPECT_EQ(tier->numUsedPages(), 1);
  EXPECT_STREQ(toString(TransferDirection::Load), "load");
  EXPECT_STREQ(toString(TransferDirection::Offload), "offload");
}
