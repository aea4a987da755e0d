//===- KVPoolGpuTest.cpp - the KV pool in device memory -------------------===//
//
// A device pool must hold exactly what a host pool given the same
// operations holds (the host pool is the reference: its layout is tested
// on the CPU), and the attention kernels must read it as it is.
//
//===----------------------------------------------------------------------===//

#include "DeviceBuffers.h"
#include "attnc/Check/Halves.h"
#include "attnc/Check/Reference.h"
#include "attnc/attnc.h"
#include "cuda/CudaDriver.h"
#include "kv/PagedKVPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace attnc;
using attnc::testing::download;
using attnc::testing::upload;

namespace {

cuda::Driver *gpuOrNull() {
  StatusOr<cuda::Driver *> driver = cuda::Driver::get();
  return driver.ok() ? *driver : nullptr;
}

#define REQUIRE_GPU(driver)                                                    \
  cuda::Driver *driver = gpuOrNull();                                          \
  if (!driver)                                                                 \
    GTEST_SKIP() << "no GPU: " << cuda::Driver::get().status().message();

std::unique_ptr<PagedKVPool> makePool(PoolConfig config, PoolMemory memory) {
  config.memory = memory;
  config.cacheDir = "-";
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  EXPECT_TRUE(pool.ok()) << pool.status().toString();
  return pool.ok() ? std::move(*pool) : nullptr;
}

/// Random bytes, never all zero in an element.
std::vector<uint8_t> randomBytes(std::mt19937 &rng, size_t count) {
  std::vector<uint8_t> bytes(count);
  for (uint8_t &b : bytes)
    b = uint8_t(rng() | 1);
  return bytes;
}

/// Each token's rows of K and V, gathered through the pool's slots.
std::vector<uint8_t> tokensOf(const PagedKVPool &pool, const uint8_t *keys,
                              const uint8_t *values, SequenceId sequence) {
  const PoolConfig &c = pool.config();
  int64_t length = *pool.sequenceLength(sequence);
  std::vector<int64_t> slots = *pool.slots(sequence, 0, length);
  int64_t row = c.headDim * c.elementBytes;
  std::vector<uint8_t> rows;
  for (int64_t slot : slots)
    for (const uint8_t *cache : {keys, values})
      for (int64_t head = 0; head < c.numKVHeads; ++head) {
        int64_t offset = poolRowOffset(slot, int(head), c.order,
                                       int(c.pageSize), int(c.numKVHeads),
                                       int(c.headDim), int(c.elementBytes));
        rows.insert(rows.end(), cache + offset, cache + offset + row);
      }
  return rows;
}

struct PoolCase {
  PageOrder order;
  int64_t pageSize;
  int64_t headDim;
  int64_t elementBytes;
};

std::string nameOf(const ::testing::TestParamInfo<PoolCase> &info) {
  const PoolCase &c = info.param;
  return std::string(keyword(c.order)) + "_page" + std::to_string(c.pageSize) +
         "_d" + std::to_string(c.headDim) + "_" +
         std::to_string(c.elementBytes) + "B";
}

class KVPoolOnGpu : public ::testing::TestWithParam<PoolCase> {};

// Appends, forks (the shared partial page copied on write) and frees
// through a host and a device pool alike; every live token must match.
TEST_P(KVPoolOnGpu, DeviceWritesMatchTheHostPool) {
  REQUIRE_GPU(driver);
  const PoolCase &p = GetParam();
  PoolConfig config;
  config.numPages = 64;
  config.pageSize = p.pageSize;
  config.numKVHeads = 2;
  config.headDim = p.headDim;
  config.elementBytes = p.elementBytes;
  config.order = p.order;
  std::unique_ptr<PagedKVPool> host = makePool(config, PoolMemory::Host);
  std::unique_ptr<PagedKVPool> device = makePool(config, PoolMemory::Device);
  ASSERT_TRUE(host && device);
  // Poison the device caches: a row the kernels never wrote shows.
  ASSERT_TRUE(driver
                  ->fill(device->keyCache(), 0xA5,
                         size_t(device->valueCache() - device->keyCache() +
                                device->cacheBytes()))
                  .ok());

  std::mt19937 rng(11);
  size_t tokenBytes =
      size_t(config.numKVHeads * config.headDim * config.elementBytes);
  std::vector<SequenceId> live;
  auto append = [&](SequenceId sequence, int64_t tokens) {
    std::vector<uint8_t> keys = randomBytes(rng, tokens * tokenBytes);
    std::vector<uint8_t> values = randomBytes(rng, tokens * tokenBytes);
    cuda::DeviceBuffer k = upload(*driver, keys.data(), keys.size());
    cuda::DeviceBuffer v = upload(*driver, values.data(), values.size());
    Status onHost = host->append(sequence, keys.data(), values.data(), tokens);
    Status onDevice =
        device->append(sequence, reinterpret_cast<void *>(k.get()),
                       reinterpret_cast<void *>(v.get()), tokens);
    ASSERT_TRUE(onHost.ok()) << onHost.toString();
    ASSERT_TRUE(onDevice.ok()) << onDevice.toString();
    ASSERT_TRUE(driver->synchronize().ok()); // before k and v are freed
  };
  for (int i = 0; i < 3; ++i) {
    SequenceId a = host->createSequence();
    ASSERT_EQ(device->createSequence(), a);
    live.push_back(a);
    append(a, 1 + int64_t(rng() % (3 * p.pageSize + 2)));
  }
  // A fork whose parent ends inside a page: both sides then write it.
  for (int i = 0; i < 2; ++i) {
    SequenceId parent = live[size_t(i)];
    StatusOr<SequenceId> child = host->fork(parent);
    ASSERT_TRUE(child.ok());
    ASSERT_EQ(*device->fork(parent), *child);
    live.push_back(*child);
    append(*child, 1 + int64_t(rng() % (p.pageSize + 1)));
    append(parent, 1 + int64_t(rng() % 3));
  }
  ASSERT_TRUE(host->freeSequence(live[2]).ok());
  ASSERT_TRUE(device->freeSequence(live[2]).ok());
  live.erase(live.begin() + 2);
  append(live[0], 2 * p.pageSize + 1);

  size_t cacheSpan =
      size_t(device->valueCache() - device->keyCache() + device->cacheBytes());
  std::vector<uint8_t> fromDevice =
      download(*driver, device->keyCache(), cacheSpan);
  const uint8_t *hostKeys = reinterpret_cast<const uint8_t *>(host->keyCache());
  const uint8_t *hostValues =
      reinterpret_cast<const uint8_t *>(host->valueCache());
  const uint8_t *deviceKeys = fromDevice.data();
  const uint8_t *deviceValues =
      fromDevice.data() + (device->valueCache() - device->keyCache());
  for (SequenceId sequence : live) {
    ASSERT_EQ(*host->sequencePages(sequence), *device->sequencePages(sequence));
    std::vector<uint8_t> want = tokensOf(*host, hostKeys, hostValues, sequence);
    std::vector<uint8_t> got =
        tokensOf(*device, deviceKeys, deviceValues, sequence);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(std::memcmp(got.data(), want.data(), got.size()) == 0)
        << "sequence " << sequence;
  }
  EXPECT_TRUE(device->checkInvariants().ok());
}

INSTANTIATE_TEST_SUITE_P(Layouts, KVPoolOnGpu,
                         ::testing::Values(PoolCase{PageOrder::NHD, 16, 128, 2},
                                           PoolCase{PageOrder::HND, 16, 128, 2},
                                           PoolCase{PageOrder::NHD, 1, 128, 2},
                                           PoolCase{PageOrder::HND, 64, 64, 1},
                                           PoolCase{PageOrder::NHD, 3, 12, 1},
                                           PoolCase{PageOrder::HND, 5, 20, 2}),
                         nameOf);

// A pool of layers: sequence appends write every layer, a fork's
// copy-on-write and explicit page copies (on a stream of the caller's,
// several to a launch, one reading what another wrote) copy every layer;
// each layer matches a host pool given the same operations.
TEST(KVPoolGpu, EveryLayerMatchesTheHostPool) {
  REQUIRE_GPU(driver);
  PoolConfig config;
  config.numPages = 40;
  config.pageSize = 4;
  config.numKVHeads = 2;
  config.headDim = 64;
  config.elementBytes = 2;
  config.numLayers = 3;
  std::unique_ptr<PagedKVPool> host = makePool(config, PoolMemory::Host);
  std::unique_ptr<PagedKVPool> device = makePool(config, PoolMemory::Device);
  ASSERT_TRUE(host && device);
  size_t span = size_t(device->valueCache(2) - device->keyCache(0) +
                       device->cacheBytes());
  ASSERT_TRUE(driver->fill(device->keyCache(0), 0xA5, span).ok());
  std::mt19937 rng(5);
  size_t tokenBytes =
      size_t(config.numKVHeads * config.headDim * config.elementBytes);
  auto append = [&](SequenceId sequence, int64_t tokens) {
    size_t bytes = size_t(config.numLayers * tokens) * tokenBytes;
    std::vector<uint8_t> keys = randomBytes(rng, bytes);
    std::vector<uint8_t> values = randomBytes(rng, bytes);
    cuda::DeviceBuffer k = upload(*driver, keys.data(), keys.size());
    cuda::DeviceBuffer v = upload(*driver, values.data(), values.size());
    ASSERT_TRUE(
        host->append(sequence, keys.data(), values.data(), tokens).ok());
    Status onDevice =
        device->append(sequence, reinterpret_cast<void *>(k.get()),
                       reinterpret_cast<void *>(v.get()), tokens);
    ASSERT_TRUE(onDevice.ok()) << onDevice.toString();
    ASSERT_TRUE(driver->synchronize().ok()); // before k and v are freed
  };
  SequenceId a = host->createSequence();
  ASSERT_EQ(device->createSequence(), a);
  append(a, 6);
  SequenceId b = *host->fork(a);
  ASSERT_EQ(*device->fork(a), b);
  append(b, 3); // copies a's partial page, in every layer
  append(a, 1);
  // Explicit copies: a's pages over fresh ones, then one copy reading what
  // the one before it wrote (so not in the same launch).
  std::vector<PageId> pagesA = *host->sequencePages(a);
  std::vector<PageId> spare = *host->allocate(3);
  ASSERT_EQ(*device->allocate(3), spare);
  std::vector<PageCopy> copies = {
      {pagesA[0], spare[0]}, {pagesA[1], spare[1]}, {spare[0], spare[2]}};
  ASSERT_TRUE(host->copyPages(copies, nullptr).ok());
  ASSERT_TRUE(device->copyPages(copies, nullptr).ok());
  EXPECT_EQ(device->copyPages({{0, 40}}, nullptr).code(),
            ErrorCode::InvalidArgument);

  std::vector<uint8_t> fromDevice =
      download(*driver, device->keyCache(0), span);
  for (int64_t layer = 0; layer < config.numLayers; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    const auto *hostKeys =
        reinterpret_cast<const uint8_t *>(host->keyCache(layer));
    const auto *hostValues =
        reinterpret_cast<const uint8_t *>(host->valueCache(layer));
    const uint8_t *deviceKeys =
        fromDevice.data() + (device->keyCache(layer) - device->keyCache(0));
    const uint8_t *deviceValues =
        fromDevice.data() + (device->valueCache(layer) - device->keyCache(0));
    for (SequenceId sequence : {a, b}) {
      std::vector<uint8_t> want =
          tokensOf(*host, hostKeys, hostValues, sequence);
      std::vector<uint8_t> got =
          tokensOf(*device, deviceKeys, deviceValues, sequence);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_TRUE(std::memcmp(got.data(), want.data(), got.size()) == 0)
          << "sequence " << sequence;
    }
    // The copies' rows that hold tokens (a's second page holds 3): the
    // device's other rows are poisoned, the host's zero.
    const int64_t written[] = {4, 3, 4};
    for (size_t i = 0; i < spare.size(); ++i)
      for (int64_t slot = 0; slot < written[i]; ++slot)
        for (int64_t head = 0; head < config.numKVHeads; ++head) {
          int64_t offset = poolRowOffset(
              poolSlot(spare[i], int(config.pageSize), int(slot)), int(head),
              config.order, int(config.pageSize), int(config.numKVHeads),
              int(config.headDim), int(config.elementBytes));
          size_t row = size_t(config.headDim * config.elementBytes);
          EXPECT_EQ(std::memcmp(hostKeys + offset, deviceKeys + offset, row), 0)
              << "page " << spare[i] << " slot " << slot << " keys";
          EXPECT_EQ(
              std::memcmp(hostValues + offset, deviceValues + offset, row), 0)
              << "page " << spare[i] << " slot " << slot << " values";
        }
  }
  EXPECT_TRUE(device->checkInvariants().ok());
}

// An engine's append: K and V as strided views into one projection's output
// ([tokens][q | k | v]), padding tokens with slot -1 left out.
TEST(KVPoolGpu, AppendSlotsTakesStridedViewsAndSkipsPadding) {
  REQUIRE_GPU(driver);
  PoolConfig config;
  config.numPages = 8;
  config.pageSize = 4;
  config.numKVHeads = 2;
  config.headDim = 64;
  config.elementBytes = 2;
  std::unique_ptr<PagedKVPool> pool = makePool(config, PoolMemory::Device);
  ASSERT_TRUE(pool);
  size_t span =
      size_t(pool->valueCache() - pool->keyCache() + pool->cacheBytes());
  ASSERT_TRUE(driver->fill(pool->keyCache(), 0xA5, span).ok());

  int64_t row = config.numKVHeads * config.headDim; // elements per token
  int64_t stride = 3 * row;                         // q, k, v of a token
  int64_t tokens = 5;
  std::mt19937 rng(5);
  std::vector<uint8_t> qkv = randomBytes(rng, size_t(tokens * stride * 2));
  cuda::DeviceBuffer projection = upload(*driver, qkv.data(), qkv.size());
  std::vector<int64_t> slots = {9, -1, 0, 31, 4};
  cuda::DeviceBuffer slotBuffer =
      upload(*driver, slots.data(), slots.size() * sizeof(int64_t));
  Status status = pool->appendSlots(projection.get() + uint64_t(row) * 2,
                                    projection.get() + uint64_t(row) * 4,
                                    stride, stride, slotBuffer.get(), tokens);
  ASSERT_TRUE(status.ok()) << status.toString();

  std::vector<uint8_t> caches = download(*driver, pool->keyCache(), span);
  std::vector<bool> written(size_t(config.numPages * config.pageSize), false);
  size_t rowBytes = size_t(config.headDim * 2);
  for (int64_t t = 0; t < tokens; ++t) {
    if (slots[size_t(t)] < 0)
      continue;
    written[size_t(slots[size_t(t)])] = true;
    for (int which = 0; which < 2; ++which)
      for (int64_t head = 0; head < config.numKVHeads; ++head) {
        int64_t at = poolRowOffset(slots[size_t(t)], int(head), config.order,
                                   int(config.pageSize), int(config.numKVHeads),
                                   int(config.headDim), 2) +
                     (which ? pool->valueCache() - pool->keyCache() : 0);
        size_t from = size_t(
            (t * stride + (which + 1) * row + head * config.headDim) * 2);
        EXPECT_EQ(std::memcmp(caches.data() + at, qkv.data() + from, rowBytes),
                  0)
            << "token " << t << (which ? " value" : " key") << " head " << head;
      }
  }
  // Every other slot keeps the poison.
  for (int64_t slot = 0; slot < config.numPages * config.pageSize; ++slot)
    if (!written[size_t(slot)])
      for (int64_t head = 0; head < config.numKVHeads; ++head) {
        int64_t at =
            poolRowOffset(slot, int(head), config.order, int(config.pageSize),
                          int(config.numKVHeads), int(config.headDim), 2);
        for (size_t b = 0; b < rowBytes; ++b)
          ASSERT_EQ(caches[size_t(at) + b], 0xA5) << "slot " << slot;
      }

  // Misaligned views are refused before anything is launched.
  status = pool->appendSlots(projection.get() + 2, projection.get(), stride,
                             stride, slotBuffer.get(), tokens);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
}

// A pool larger than the GPU is an error value, not a crash.
TEST(KVPoolGpu, DeviceOutOfMemoryIsAnError) {
  REQUIRE_GPU(driver);
  PoolConfig config;
  config.numPages = 1 << 24;
  config.pageSize = 256;
  config.numKVHeads = 8;
  config.headDim = 128;
  config.elementBytes = 2;
  config.memory = PoolMemory::Device;
  config.cacheDir = "-";
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), ErrorCode::OutOfMemory)
      << pool.status().toString();
}

/// Decode attention of one query per request over its keys, in double.
std::vector<double> referenceDecode(const std::vector<float> &q,
                                    const std::vector<std::vector<float>> &k,
                                    const std::vector<std::vector<float>> &v,
                                    int64_t qHeads, int64_t kvHeads,
                                    int64_t dim) {
  reference::Variant variant;
  variant.qHeads = qHeads;
  variant.kvHeads = kvHeads;
  variant.qkDim = variant.vDim = dim;
  std::vector<double> out;
  for (size_t b = 0; b < k.size(); ++b) {
    reference::Request request;
    request.qLen = 1;
    request.kvLen = int64_t(k[b].size()) / (kvHeads * dim);
    request.q.assign(q.begin() + b * qHeads * dim,
                     q.begin() + (b + 1) * qHeads * dim);
    request.k.assign(k[b].begin(), k[b].end());
    request.v.assign(v[b].begin(), v[b].end());
    reference::State state = reference::attention(variant, request, int64_t(b));
    out.insert(out.end(), state.out.begin(), state.out.end());
  }
  return out;
}

// What an engine step does: append each request's K/V into the device pool,
// take the pool's page table, and run paged decode attention over the pool's
// caches as they are.
TEST(KVPoolGpu, PagedDecodeReadsThePool) {
  REQUIRE_GPU(driver);
  for (PageOrder order : {PageOrder::NHD, PageOrder::HND}) {
    PoolConfig config;
    config.numPages = 256;
    config.pageSize = 16;
    config.numKVHeads = 2;
    config.headDim = 128;
    config.elementBytes = 2;
    config.order = order;
    std::unique_ptr<PagedKVPool> pool = makePool(config, PoolMemory::Device);
    ASSERT_TRUE(pool);
    int64_t qHeads = 8, dim = config.headDim, kvHeads = config.numKVHeads;
    std::mt19937 rng(order == PageOrder::NHD ? 1 : 2);
    std::normal_distribution<float> normal;
    std::vector<int64_t> lengths = {1, 37, 300, 16, 129};
    std::vector<SequenceId> batch;
    std::vector<std::vector<float>> keys, values;
    for (int64_t length : lengths) {
      std::vector<uint16_t> k(size_t(length * kvHeads * dim)),
          v(size_t(length * kvHeads * dim));
      std::vector<float> kf(k.size()), vf(v.size());
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = toBF16(normal(rng));
        v[i] = toBF16(normal(rng));
        kf[i] = fromBF16(k[i]);
        vf[i] = fromBF16(v[i]);
      }
      keys.push_back(kf);
      values.push_back(vf);
      cuda::DeviceBuffer kd = upload(*driver, k.data(), k.size() * 2);
      cuda::DeviceBuffer vd = upload(*driver, v.data(), v.size() * 2);
      SequenceId sequence = pool->createSequence();
      // Two appends: a prompt, then a decode step's token.
      int64_t prompt = std::max<int64_t>(length - 1, 1);
      ASSERT_TRUE(pool->append(sequence, reinterpret_cast<void *>(kd.get()),
                               reinterpret_cast<void *>(vd.get()), prompt)
                      .ok());
      if (prompt < length)
        ASSERT_TRUE(pool->append(sequence,
                                 reinterpret_cast<void *>(
                                     kd.get() + prompt * kvHeads * dim * 2),
                                 reinterpret_cast<void *>(
                                     vd.get() + prompt * kvHeads * dim * 2),
                                 1)
                        .ok());
      ASSERT_TRUE(driver->synchronize().ok());
      batch.push_back(sequence);
    }
    PageTable table = *pool->pageTable(batch);
    cuda::DeviceBuffer indptr =
        upload(*driver, table.indptr.data(), table.indptr.size() * 4);
    cuda::DeviceBuffer indices =
        upload(*driver, table.indices.data(), table.indices.size() * 4);
    cuda::DeviceBuffer last =
        upload(*driver, table.lastPageLen.data(), table.lastPageLen.size() * 4);

    VariantSpec spec;
    spec.queryHeads = qHeads;
    spec.kvHeads = kvHeads;
    spec.headDim = dim;
    spec.queriesPerRequest = 1;
    spec.kvLayout = TokenLayout::Paged;
    spec.pageSize = config.pageSize;
    spec.pageOrder = order;
    StatusOr<Variant> variant = Variant::fromSpec(spec);
    ASSERT_TRUE(variant.ok()) << variant.status().toString();
    Target target;
    target.cacheDir = "-";
    StatusOr<Kernel> kernel = Kernel::compile(*variant, target);
    ASSERT_TRUE(kernel.ok()) << kernel.status().toString();

    int64_t requests = int64_t(lengths.size());
    std::vector<float> q(size_t(requests * qHeads * dim));
    std::vector<uint16_t> qBits(q.size());
    for (size_t i = 0; i < q.size(); ++i) {
      qBits[i] = toBF16(normal(rng));
      q[i] = fromBF16(qBits[i]);
    }
    cuda::DeviceBuffer qd = upload(*driver, qBits.data(), qBits.size() * 2);
    std::vector<uint16_t> poison(q.size(), 0x7FC1); // NaN
    cuda::DeviceBuffer out = upload(*driver, poison.data(), poison.size() * 2);

    Batch shape;
    shape.batch = int(requests);
    shape.maxQueryLen = 1;
    shape.maxKVLen = int(*std::max_element(lengths.begin(), lengths.end()));
    shape.queryTokens = requests;
    shape.kvIndptr = indptr.get();
    shape.pageIndices = indices.get();
    shape.lastPageLen = last.get();
    shape.kvTokens = 0;
    for (int64_t length : lengths)
      shape.kvTokens += length;
    StatusOr<Plan> plan = kernel->plan(shape);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    Status ran = kernel->run(
        *plan, {qd.get(), pool->keyCache(), pool->valueCache()}, {out.get()});
    ASSERT_TRUE(ran.ok()) << ran.toString();
    std::vector<uint8_t> got = download(*driver, out.get(), q.size() * 2);
    std::vector<double> want =
        referenceDecode(q, keys, values, qHeads, kvHeads, dim);
    std::vector<double> outputs(want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, got.data() + 2 * i, 2);
      outputs[i] = fromBF16(bits);
      ASSERT_FALSE(std::isnan(outputs[i])) << "element " << i;
    }
    EXPECT_LT(reference::relativeError(outputs, want), 1e-2) << keyword(order);
  }
}

} // namespace
