//===- StandInEngine.h - an integer transformer for tests -------*- C++ -*-===//
//-*-===//
//
// A stand-in transformer of a few layers whose every number is an exact
// integer function of a sequence, and the engine that runs a scheduler's
// step through it as a real one does: for each layer it computes the
// step's new keys and values from the layer below, writes them at the
// step's slot mapping, and "attends" by reading that layer's keys and
// values through the step's page table. One page read in the wrong place,
// or never copied, changes that layer and every layer above it, and the
// tokens sampled from the top (sampleToken).
//
// The engine either owns its caches (per-layer arrays beside an accounting
// pool, as an engine with its own tensors does: it must apply each step's
// pageCopies and pageTransfers, keeping host pages of its own) or uses the
// pool's (a host pool with a layer axis, whose copies the scheduler made in
// every layer, and whose tier moved its pages).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_UNIT_STANDINENGINE_H
#define ATTNC_TEST_UNIT_STANDINENGINE_H

#include "sched/Scheduler.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

namespace attnc::standin {

constexpr int64_t kPageSize = 4;
constexpr int64_t kHeads = 2;
constexpr int64_t kDim = 4;
constexpr int64_t kRow = kHeads * kDim; // elements of a token's row
using Row = std::array<uint32_t, kRow>;

inline uint32_t mix(uint32_t a, uint32_t b) {
  uint64_t h =
      (uint64_t(a) * 0x9E3779B97F4A7C15ull) ^ (b + 0x632BE59BD9B4E019ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return uint32_t(h ^ (h >> 32));
}

/// Layer 0's key (which 0) or value (1) of `token` at `position`.
inline Row embed(Token token, int64_t position, int which) {
  Row row;
  for (int64_t e = 0; e < kRow; ++e)
    row[size_t(e)] =
        mix(mix(uint32_t(token), uint32_t(position)), uint32_t(e * 2 + which));
  return row;
}

/// What attention at a layer gives the token at `position`: its key mixed
/// with a position-weighted sum of the values of keys 0..position.
inline Row attend(const Row &key, const std::vector<const Row *> &values) {
  Row out = key;
  for (size_t j = 0; j < values.size(); ++j)
    for (int64_t e = 0; e < kRow; ++e)
      out[size_t(e)] += (*values[j])[size_t(e)] * uint32_t(2 * j + 1);
  return out;
}

/// The next layer's key or value, from this layer's attention output.
inline Row project(const Row &hidden, int64_t layer, int which) {
  Row row;
  for (int64_t e = 0; e < kRow; ++e)
    row[size_t(e)] = mix(hidden[size_t(e)], uint32_t(layer * 4 + which));
  return row;
}

/// The token a branch samples from the top layer's attention output: in
/// [1, 50000], distinct per branch.
inline Token sampleToken(const Row &top, int32_t branch) {
  uint32_t h = uint32_t(branch) + 1;
  for (uint32_t e : top)
    h = mix(h, e);
  return Token(1 + h % 50000);
}

/// Every layer's keys and values of a whole sequence, from its tokens, and
/// the top layer's attention output at each position.
struct Reference {
  std::vector<std::vector<Row>> keys, values; // [layer][position]
  std::vector<Row> top;                       // [position]
};

inline Reference recompute(const std::vector<Token> &tokens, int64_t layers) {
  Reference ref;
  size_t n = tokens.size();
  ref.keys.assign(size_t(layers), std::vector<Row>(n));
  ref.values.assign(size_t(layers), std::vector<Row>(n));
  ref.top.resize(n);
  for (size_t p = 0; p < n; ++p) {
    ref.keys[0][p] = embed(tokens[p], int64_t(p), 0);
    ref.values[0][p] = embed(tokens[p], int64_t(p), 1);
  }
  for (int64_t l = 0; l < layers; ++l)
    for (size_t p = 0; p < n; ++p) {
      std::vector<const Row *> seen;
      for (size_t j = 0; j <= p; ++j)
        seen.push_back(&ref.values[size_t(l)][j]);
      Row hidden = attend(ref.keys[size_t(l)][p], seen);
      if (l + 1 == layers) {
        ref.top[p] = hidden;
        continue;
      }
      ref.keys[size_t(l + 1)][p] = project(hidden, l + 1, 0);
      ref.values[size_t(l + 1)][p] = project(hidden, l + 1, 1);
    }
  return ref;
}

/// The stand-in model's end of sequence: about one token in 19.
inline bool isStop(Token token) { return token % 19 == 0; }

/// What a branch of a prompt generates alone, from scratch: its output up
/// to its stop or max_tokens.
inline std::vector<Token> generateAlone(std::vector<Token> sequence,
                                        int32_t branch, int64_t maxTokens,
                                        int64_t layers) {
  std::vector<Token> output;
  while (int64_t(output.size()) < maxTokens) {
    Token token = sampleToken(recompute(sequence, layers).top.back(), branch);
    output.push_back(token);
    sequence.push_back(token);
    if (isStop(token))
      break;
  }
  return output;
}

/// Where the engine keeps each layer's keys and values.
class Caches {
public:
  virtual ~Caches() = default;
  virtual void write(int64_t layer, const std::vector<Row> &keys,
                     const std::vector<Row> &values,
                     const std::vector<int64_t> &slots) = 0;
  virtual Row key(int64_t layer, int64_t slot) const = 0;
  virtual Row value(int64_t layer, int64_t slot) const = 0;
  virtual void copy(const std::vector<PageCopy> &copies) = 0;
  /// Moves pages between these caches and their host tier's pages.
  virtual void transfer(const std::vector<PageTransfer> &transfers) = 0;
};

/// Per-layer arrays of the engine's own, [slot][row], and as many of its
/// host tier's `hostPages`.
class OwnCaches : public Caches {
public:
  OwnCaches(int64_t layers, int64_t pages, int64_t hostPages = 0)
      : keys_(size_t(layers), std::vector<Row>(size_t(pages * kPageSize))),
        values_(keys_),
        hostKeys_(size_t(layers),
                  std::vector<Row>(size_t(hostPages * kPageSize))),
        hostValues_(hostKeys_) {}
  void write(int64_t layer, const std::vector<Row> &keys,
             const std::vector<Row> &values,
             const std::vector<int64_t> &slots) override {
    for (size_t t = 0; t < slots.size(); ++t) {
      keys_[size_t(layer)][size_t(slots[t])] = keys[t];
      values_[size_t(layer)][size_t(slots[t])] = values[t];
    }
  }
  Row key(int64_t layer, int64_t slot) const override {
    return keys_[size_t(layer)][size_t(slot)];
  }
  Row value(int64_t layer, int64_t slot) const override {
    return values_[size_t(layer)][size_t(slot)];
  }
  void copy(const std::vector<PageCopy> &copies) override {
    for (const PageCopy &c : copies)
      for (auto *caches : {&keys_, &values_})
        for (std::vector<Row> &layer : *caches)
          for (int64_t i = 0; i < kPageSize; ++i)
            layer[size_t(c.to * kPageSize + i)] =
                layer[size_t(c.from * kPageSize + i)];
  }
  void transfer(const std::vector<PageTransfer> &transfers) override {
    for (const PageTransfer &t : transfers)
      for (auto [device, host] :
           {std::pair(&keys_, &hostKeys_), std::pair(&values_, &hostValues_)})
        for (size_t layer = 0; layer < device->size(); ++layer)
          for (int64_t i = 0; i < kPageSize; ++i) {
            Row &onDevice =
                (*device)[layer][size_t(t.devicePage * kPageSize + i)];
            Row &onHost = (*host)[layer][size_t(t.hostPage * kPageSize + i)];
            if (t.direction == TransferDirection::Offload)
              onHost = onDevice;
            else
              onDevice = onHost;
          }
  }

private:
  std::vector<std::vector<Row>> keys_, values_;
  std::vector<std::vector<Row>> hostKeys_, hostValues_;
};

/// The scheduler's own host pool, with a layer axis.
class PoolCaches : public Caches {
public:
  explicit PoolCaches(PagedKVPool &pool) : pool_(pool) {}
  void write(int64_t layer, const std::vector<Row> &keys,
             const std::vector<Row> &values,
             const std::vector<int64_t> &slots) override {
    auto address = [](const void *p) { return reinterpret_cast<uint64_t>(p); };
    Status status = pool_.appendSlots(
        layer, address(keys.data()), address(values.data()), kRow, kRow,
        address(slots.data()), int64_t(slots.size()), nullptr);
    ASSERT_TRUE(status.ok()) << status.toString();
  }
  Row key(int64_t layer, int64_t slot) const override {
    return read(/*values=*/false, layer, slot);
  }
  Row value(int64_t layer, int64_t slot) const override {
    return read(/*values=*/true, layer, slot);
  }
  void copy(const std::vector<PageCopy> &copies) override {
    Status status = pool_.copyPages(copies, nullptr);
    ASSERT_TRUE(status.ok()) << status.toString();
  }
  /// The tier over a host pool moved them when it issued them.
  void transfer(const std::vector<PageTransfer> &) override {}

private:
  Row read(bool values, int64_t layer, int64_t slot) const {
    Row row;
    PageId page = PageId(slot / kPageSize);
    for (int64_t h = 0; h < kHeads; ++h) {
      const std::byte *at =
          values ? pool_.valueAt(page, slot % kPageSize, h, layer)
                 : pool_.keyAt(page, slot % kPageSize, h, layer);
      std::memcpy(&row[size_t(h * kDim)], at, kDim * sizeof(uint32_t));
    }
    return row;
  }
  PagedKVPool &pool_;
};

/// A pool of `pages` for `layers` layers of the stand-in's rows: keeping
/// them in host memory, or accounting only (beside an engine's own caches).
inline std::unique_ptr<PagedKVPool>
makeStandInPool(int64_t pages, int64_t layers, bool hostMemory) {
  PoolConfig config;
  config.numPages = pages;
  config.pageSize = kPageSize;
  config.numKVHeads = kHeads;
  config.headDim = kDim;
  config.elementBytes = sizeof(uint32_t);
  config.numLayers = layers;
  config.memory = hostMemory ? PoolMemory::Host : PoolMemory::AccountingOnly;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  EXPECT_TRUE(pool.ok()) << pool.status().toString();
  return pool.ok() ? std::move(*pool) : nullptr;
}

/// The KV slot of `position` of row `r`'s request, through the page table.
inline int64_t slotThroughTable(const EngineBatch &batch, size_t r,
                                int64_t position) {
  PageId page =
      batch.pageTable
          .indices[size_t(batch.pageTable.indptr[r] + position / kPageSize)];
  return int64_t(page) * kPageSize + position % kPageSize;
}

/// Runs `batch` through `layers` layers: writes every layer's keys and
/// values of its tokens, and returns the top layer's attention output of
/// each token. The batch's tokens must all be known (no pending samples).
inline std::vector<Row> forward(Caches &caches, const EngineBatch &batch,
                                int64_t layers) {
  size_t tokens = batch.tokens.size();
  std::vector<size_t> requestOf(tokens);
  for (size_t r = 0; r < batch.requests.size(); ++r)
    for (int32_t t = batch.qoIndptr[r]; t < batch.qoIndptr[r + 1]; ++t)
      requestOf[size_t(t)] = r;
  std::vector<Row> keys(tokens), values(tokens), top(tokens);
  for (size_t t = 0; t < tokens; ++t) {
    keys[t] = embed(batch.tokens[t], batch.positions[t], 0);
    values[t] = embed(batch.tokens[t], batch.positions[t], 1);
  }
  for (int64_t layer = 0; layer < layers; ++layer) {
    caches.write(layer, keys, values, batch.slotMapping);
    std::vector<Row> nextKeys(tokens), nextValues(tokens);
    for (size_t t = 0; t < tokens; ++t) {
      std::vector<Row> seen;
      for (int64_t j = 0; j <= batch.positions[t]; ++j)
        seen.push_back(
            caches.value(layer, slotThroughTable(batch, requestOf[t], j)));
      std::vector<const Row *> pointers;
      for (const Row &row : seen)
        pointers.push_back(&row);
      Row hidden = attend(keys[t], pointers);
      if (layer + 1 == layers) {
        top[t] = hidden;
        continue;
      }
      nextKeys[t] = project(hidden, layer + 1, 0);
      nextValues[t] = project(hidden, layer + 1, 1);
    }
    keys = std::move(nextKeys);
    values = std::move(nextValues);
  }
  return top;
}

} // namespace attnc::standin

#endif // ATTNC_TEST_UNIT_STANDINENGINE_H
