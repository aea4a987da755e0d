//===- EngineLoopGpuTest.cpp - scheduler -> device pool -> attention ------===//
//
// What an inference engine does each forward pass, with random keys and
// values standing in for a model's: the scheduler forms the step (prefix
// reuse, chunked prefill, decode), the step's new K/V go to the device pool
// at its slot mapping, and one attention call reads every request through
// its page table. Each step's output must match the same requests attended
// in double precision over contiguous copies of their keys and values.
//
//===----------------------------------------------------------------------===//

#include "DeviceBuffers.h"
#include "attnc/Check/Halves.h"
#include "attnc/Check/Reference.h"
#include "attnc/attnc.h"
#include "cuda/CudaDriver.h"
#include "kv/PagedKVPool.h"
#include "radix/RadixCache.h"
#include "sched/Scheduler.h"
#include "sim/SyntheticModel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace attnc;
using attnc::testing::upload;

namespace {

constexpr int64_t kQueryHeads = 8, kKVHeads = 2, kHeadDim = 128;
constexpr int64_t kRow = kKVHeads * kHeadDim; // elements of a token's K or V

/// A model's keys and values depend on the whole prefix; these do too, so
/// that a page read for the wrong request or position shows.
struct StandInModel {
  /// K (which = 0) or V (1) of the token at `position` of `request`, or
  /// of a branch's sequence (n > 1: each continues the prompt alone).
  static void kv(const TracedRequest &request, int32_t branch, int64_t position,
                 int which, uint16_t *row) {
    uint64_t hash = 0xcbf29ce484222325ull ^ uint64_t(which);
    for (int64_t i = 0; i <= position; ++i)
      hash = (hash ^ uint32_t(SyntheticModel::tokenAt(request, i, branch))) *
             0x100000001b3ull;
    std::mt19937_64 rng(hash);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t e = 0; e < kRow; ++e)
      row[e] = toBF16(uniform(rng));
  }
};

/// Causal attention of the step's queries over contiguous copies of each
/// request's keys and values, in double precision (each request's queries
/// are its last positions, as the reference aligns them).
std::vector<double>
contiguousAttention(const EngineBatch &batch,
                    const std::map<RequestId, TracedRequest> &requests,
                    const std::vector<uint16_t> &q) {
  reference::Variant variant;
  variant.qHeads = kQueryHeads;
  variant.kvHeads = kKVHeads;
  variant.qkDim = variant.vDim = kHeadDim;
  variant.causal = true;
  std::vector<double> out;
  std::vector<uint16_t> row(kRow);
  for (size_t r = 0; r < batch.requests.size(); ++r) {
    const TracedRequest &request = requests.at(batch.requests[r]);
    reference::Request contiguous;
    contiguous.qLen = batch.qoIndptr[r + 1] - batch.qoIndptr[r];
    contiguous.kvLen = batch.positions[size_t(batch.qoIndptr[r + 1] - 1)] + 1;
    for (int64_t j = 0; j < contiguous.kvLen; ++j)
      for (int which = 0; which < 2; ++which) {
        StandInModel::kv(request, batch.branches[r], j, which, row.data());
        for (uint16_t bits : row)
          (which ? contiguous.v : contiguous.k).push_back(fromBF16(bits));
      }
    for (size_t i = size_t(batch.qoIndptr[r]) * kQueryHeads * kHeadDim;
         i < size_t(batch.qoIndptr[r + 1]) * kQueryHeads * kHeadDim; ++i)
      contiguous.q.push_back(fromBF16(q[i]));
    reference::State state =
        reference::attention(variant, contiguous, int64_t(r));
    out.insert(out.end(), state.out.begin(), state.out.end());
  }
  return out;
}

TEST(EngineLoopGpu, EveryStepMatchesContiguousAttention) {
  StatusOr<cuda::Driver *> found = cuda::Driver::get();
  if (!found.ok())
    GTEST_SKIP() << "no GPU: " << found.status().message();
  cuda::Driver &driver = **found;

  PoolConfig config;
  config.numPages = 24; // small enough to evict (about 300 tokens)
  config.pageSize = 16;
  config.numKVHeads = kKVHeads;
  config.headDim = kHeadDim;
  config.elementBytes = 2;
  config.memory = PoolMemory::Device;
  config.cacheDir = "-";
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  ASSERT_TRUE(pool.ok()) << pool.status().toString();
  RadixCache cache(**pool);
  SchedulerConfig sched;
  sched.tokenBudget = 96; // long prompts arrive in chunks
  sched.maxRunning = 8;
  Scheduler scheduler(sched, **pool, cache);
  SyntheticModel model;

  VariantSpec spec;
  spec.queryHeads = kQueryHeads;
  spec.kvHeads = kKVHeads;
  spec.headDim = kHeadDim;
  spec.queryLayout = TokenLayout::Ragged;
  spec.kvLayout = TokenLayout::Paged;
  spec.pageSize = config.pageSize;
  spec.causal = true;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok()) << variant.status().toString();
  Target target;
  target.cacheDir = "-";
  StatusOr<Kernel> kernel = Kernel::compile(*variant, target);
  ASSERT_TRUE(kernel.ok()) << kernel.status().toString();

  // Requests sharing a system prompt, later ones quoting a finished
  // conversation: prefix reuse, chunked prefill and decode in most steps.
  std::mt19937 rng(23), queryRng(29);
  std::map<RequestId, TracedRequest> requests;
  std::vector<Token> system;
  for (Token t = 1; t <= 40; ++t)
    system.push_back(t);
  auto makeRequest = [&](RequestId id, std::vector<Token> prefix) {
    TracedRequest request;
    request.id = id;
    request.prompt = std::move(prefix);
    for (int i = 0, n = 1 + int(rng() % 60); i < n; ++i)
      request.prompt.push_back(Token(1000 * (id + 1) + i));
    request.outputLen = 1 + int64_t(rng() % 8);
    request.maxTokens = 8;
    // Some ask for parallel samples: their branches fork on the device
    // (copy-on-write of the prompt's partial page).
    request.n = id % 4 == 1 ? 2 : 1;
    return request;
  };
  std::vector<RequestId> finished;
  RequestId nextId = 0;
  int64_t steps = 0, checkedTokens = 0;
  while (nextId < 16 || !scheduler.idle()) {
    ASSERT_LT(++steps, 500) << "the scheduler stalled";
    if (nextId < 16 && (steps % 2 == 1 || scheduler.idle())) {
      std::vector<Token> prefix = system;
      if (!finished.empty() && rng() % 2) {
        const TracedRequest &quoted =
            requests.at(finished[rng() % finished.size()]);
        if (quoted.prompt.size() < 200)
          prefix = fullSequence(quoted);
      }
      TracedRequest request = makeRequest(nextId++, prefix);
      ASSERT_TRUE(scheduler.add(request).ok());
      model.add(request);
      requests[request.id] = request;
    }
    StatusOr<StepStats> step = scheduler.step();
    ASSERT_TRUE(step.ok()) << step.status().toString();
    const EngineBatch &batch = step->batch;
    // The model samples once the step has run, as an engine's does.
    auto commit = [&] {
      StatusOr<std::vector<RequestId>> done =
          scheduler.commit(model.sample(batch));
      ASSERT_TRUE(done.ok()) << done.status().toString();
      finished.insert(finished.end(), done->begin(), done->end());
    };
    int64_t tokens = int64_t(batch.tokens.size());
    if (tokens == 0) {
      commit();
      continue;
    }

    // The model's part: this step's new keys and values, at their slots.
    std::vector<uint16_t> k(size_t(tokens * kRow)), v(k.size());
    for (size_t r = 0; r < batch.requests.size(); ++r)
      for (int32_t t = batch.qoIndptr[r]; t < batch.qoIndptr[r + 1]; ++t) {
        const TracedRequest &request = requests.at(batch.requests[r]);
        StandInModel::kv(request, batch.branches[r], batch.positions[size_t(t)],
                         0, &k[size_t(t * kRow)]);
        StandInModel::kv(request, batch.branches[r], batch.positions[size_t(t)],
                         1, &v[size_t(t * kRow)]);
      }
    cuda::DeviceBuffer kd = upload(driver, k.data(), k.size() * 2);
    cuda::DeviceBuffer vd = upload(driver, v.data(), v.size() * 2);
    cuda::DeviceBuffer slots =
        upload(driver, batch.slotMapping.data(), batch.slotMapping.size() * 8);
    Status appended = (*pool)->appendSlots(kd.get(), vd.get(), kRow, kRow,
                                           slots.get(), tokens);
    ASSERT_TRUE(appended.ok()) << appended.toString();

    // Attention over the pool's caches as they are.
    std::vector<uint16_t> q(size_t(tokens * kQueryHeads * kHeadDim));
    std::normal_distribution<float> normal;
    for (uint16_t &x : q)
      x = toBF16(normal(queryRng));
    cuda::DeviceBuffer qd = upload(driver, q.data(), q.size() * 2);
    std::vector<uint16_t> poison(q.size(), 0x7FC1); // NaN
    cuda::DeviceBuffer out = upload(driver, poison.data(), poison.size() * 2);
    const PageTable &table = batch.pageTable;
    cuda::DeviceBuffer qo =
        upload(driver, batch.qoIndptr.data(), batch.qoIndptr.size() * 4);
    cuda::DeviceBuffer indptr =
        upload(driver, table.indptr.data(), table.indptr.size() * 4);
    cuda::DeviceBuffer indices =
        upload(driver, table.indices.data(), table.indices.size() * 4);
    cuda::DeviceBuffer last =
        upload(driver, table.lastPageLen.data(), table.lastPageLen.size() * 4);
    Batch shape;
    shape.batch = int(batch.requests.size());
    shape.queryTokens = tokens;
    shape.qIndptr = qo.get();
    shape.kvIndptr = indptr.get();
    shape.pageIndices = indices.get();
    shape.lastPageLen = last.get();
    shape.maxQueryLen = 0;
    shape.maxKVLen = 0;
    for (size_t r = 0; r < batch.requests.size(); ++r) {
      shape.maxQueryLen = std::max(shape.maxQueryLen,
                                   batch.qoIndptr[r + 1] - batch.qoIndptr[r]);
      int keys = batch.positions[size_t(batch.qoIndptr[r + 1] - 1)] + 1;
      shape.maxKVLen = std::max(shape.maxKVLen, keys);
      shape.kvTokens += keys;
    }
    StatusOr<Plan> plan = kernel->plan(shape);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    Status ran = kernel->run(
        *plan, {qd.get(), (*pool)->keyCache(), (*pool)->valueCache()},
        {out.get()});
    ASSERT_TRUE(ran.ok()) << ran.toString();
    ASSERT_TRUE(driver.synchronize().ok());
    std::vector<uint16_t> got(q.size());
    ASSERT_TRUE(driver.copyToHost(got.data(), out.get(), got.size() * 2).ok());

    std::vector<double> want = contiguousAttention(batch, requests, q);
    std::vector<double> outputs(want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      outputs[i] = fromBF16(got[i]);
      ASSERT_FALSE(std::isnan(outputs[i]))
          << "step " << steps << " element " << i;
    }
    ASSERT_LT(reference::relativeError(outputs, want), 1e-2)
        << "step " << steps << ": " << batch.requests.size() << " requests, "
        << batch.numDecodes << " decoding, " << tokens << " tokens";
    checkedTokens += tokens;
    commit();
  }
  EXPECT_EQ(finished.size(), requests.size());
  EXPECT_GT(scheduler.totals().cachedTokens, 0) << "no prefix was reused";
  EXPECT_GT(scheduler.totals().evictedTokens, 0) << "nothing was evicted";
  std::cout << "[ engine loop ] " << steps << " steps, " << checkedTokens
            << " query tokens checked, " << scheduler.totals().cachedTokens
            << " of " << scheduler.totals().promptTokens
            << " prompt tokens read from the cache\n";
}

} // namespace
