//===- PagedKVPool.h - a paged key/value cache ------------------*- C++ -*-===//
//
// One allocation holds two caches, keys then values, each [num_pages][page]
// where a page is [page_size][heads][dim] (NHD) or [heads][page_size][dim]
// (HND): the layout the attention kernels read (PagedAttention's k_cache and
// v_cache), defined once by attnc/device/kv_pool.h. A token's slot is page *
// page_size + its position in the page. Pages are reference counted: sequences
// forked for parallel sampling or beam search share their pages, and the
// radix prefix cache holds references of its own. A full page is immutable
// once written; the partial last page of a shared sequence is copied before
// it is written (copy-on-write).
//
// A new pool's caches are zero: attention reads whole pages, and a slot no
// token was written to must hold finite values (a masked score times a NaN
// value is NaN).
//
// Every operation either succeeds completely or returns an error and changes
// nothing.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_KV_PAGEDKVPOOL_H
#define ATTNC_RUNTIME_KV_PAGEDKVPOOL_H

#include "attnc/Status.h"
#include "attnc/device/kv_pool.h"
#include "cuda/CudaDriver.h"
#include "kv/PoolKernels.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnc {

using PageId = int32_t;
using SequenceId = int64_t;

enum class PoolMemory {
  /// Pages in host memory: tests and CPU-side tools.
  Host,
  /// Pages in device memory (one allocation through runtime/cuda), written
  /// by the pool's kernels: a GPU and NVRTC are needed.
  Device,
  /// No K/V storage, only the page accounting: the scheduler simulator.
  AccountingOnly,
};

struct PoolConfig {
  int64_t numPages = 0;
  int64_t pageSize = 16;
  int64_t numKVHeads = 1;
  int64_t headDim = 128;
  int64_t elementBytes = 2;
  PageOrder order = PageOrder::NHD;
  PoolMemory memory = PoolMemory::Host;
  /// Where a device pool's compiled kernels are cached ("" for the default
  /// directory, "-" for none).
  std::string cacheDir;
};

/// The slot of the token at `position` of a sequence whose pages, in
/// order, are `pages`: where an append writes it.
inline int64_t slotOfPosition(const std::vector<PageId> &pages,
                              int64_t pageSize, int64_t position) {
  return poolSlot(pages[size_t(position / pageSize)], int(pageSize),
                  int(position % pageSize));
}

/// The page table of a batch of sequences in CSR form, as the attention
/// kernels read it: sequence i owns pages indices[indptr[i] .. indptr[i+1])
/// and its last page holds lastPageLen[i] tokens.
struct PageTable {
  std::vector<int32_t> indptr;
  std::vector<int32_t> indices;
  std::vector<int32_t> lastPageLen;
};

class PagedKVPool {
public:
  static StatusOr<std::unique_ptr<PagedKVPool>>
  create(const PoolConfig &config);

  const PoolConfig &config() const { return config_; }
  int64_t numPages() const { return config_.numPages; }
  int64_t pageSize() const { return config_.pageSize; }
  int64_t numFreePages() const { return static_cast<int64_t>(free_.size()); }
  int64_t numUsedPages() const { return numPages() - numFreePages(); }

  //===--------------------------------------------------------------------===//
  // Pages
  //===--------------------------------------------------------------------===//

  /// Takes `count` free pages, each with one reference; all or none.
  StatusOr<std::vector<PageId>> allocate(int64_t count);
  /// Adds a reference to each page; all must be in use.
  Status retain(const std::vector<PageId> &pages);
  /// Drops a reference from each page; a page whose last reference goes
  /// returns to the free list. All must be in use.
  Status release(const std::vector<PageId> &pages);
  int32_t refCount(PageId page) const { return refCounts_.at(page); }

  //===--------------------------------------------------------------------===//
  // Sequences
  //===--------------------------------------------------------------------===//

  SequenceId createSequence();
  /// Appends `numTokens` tokens of keys and values, each given as
  /// [numTokens][heads][dim] elements (host memory for a host pool, device
  /// memory for a device pool, which writes them on the default stream).
  /// Allocates pages as needed and copies a shared partial last page first.
  Status append(SequenceId sequence, const void *keys, const void *values,
                int64_t numTokens);
  /// Makes room for `numTokens` more tokens without writing them; the pages
  /// they go to become the sequence's own (copy-on-write of a page shared
  /// since a fork).
  Status reserve(SequenceId sequence, int64_t numTokens);
  /// A new sequence sharing every page of `sequence`.
  StatusOr<SequenceId> fork(SequenceId sequence);
  Status freeSequence(SequenceId sequence);

  StatusOr<int64_t> sequenceLength(SequenceId sequence) const;
  StatusOr<std::vector<PageId>> sequencePages(SequenceId sequence) const;
  StatusOr<PageTable> pageTable(const std::vector<SequenceId> &batch) const;

  /// Slots of the sequence's tokens [from, from + count), which must be
  /// reserved: where an append writes them.
  StatusOr<std::vector<int64_t>> slots(SequenceId sequence, int64_t from,
                                       int64_t count) const;

  //===--------------------------------------------------------------------===//
  // Data
  //===--------------------------------------------------------------------===//

  /// Addresses of the key and value caches: device addresses for a device
  /// pool, host addresses for a host pool, 0 without storage.
  uint64_t keyCache() const;
  uint64_t valueCache() const;
  /// Bytes of one page of one cache, and of each cache.
  int64_t pageBytes() const { return pageBytesOf(config_); }
  int64_t cacheBytes() const { return numPages() * pageBytes(); }

  /// Writes `tokens` rows of keys and values, token t's head h at element
  /// t * stride + h * head_dim of `keys` and `values`, to the slots `slots`
  /// (int64; negative: skipped): an engine step's append of new K/V after
  /// reserving their slots. Addresses are device addresses for a device
  /// pool, which writes on `stream` without synchronizing (a slot past the
  /// pool is not written there; a host pool refuses it), host addresses
  /// for a host pool. A device pool's addresses and strides must be aligned
  /// to its row chunk (16 bytes for rows of a multiple of 16 bytes).
  Status appendSlots(uint64_t keys, uint64_t values, int64_t keyStride,
                     int64_t valueStride, uint64_t slots, int64_t tokens,
                     cuda::CUstream stream = nullptr);

  /// Address of the head vector at position `inPage` of a host pool's
  /// page; nullptr without host storage.
  const std::byte *keyAt(PageId page, int64_t inPage, int64_t head) const;
  const std::byte *valueAt(PageId page, int64_t inPage, int64_t head) const;

  /// Copies page `from`'s keys and values over page `to`, both in use:
  /// copy-on-write of a shared page before one side writes it. A device
  /// pool's copy is complete when this returns.
  Status copyPageContents(PageId from, PageId to);

  /// Checks that every page is either free (no references, on the free list
  /// once) or in use, and that sequences reference only pages in use.
  Status checkInvariants() const;

  /// A test seam: failures an engine meets only rarely (a device copy
  /// failing) injected on demand, to show that callers that must be
  /// all-or-nothing are. allocate, release and copyPageContents ask the
  /// hook first and return its error before changing anything; null (the
  /// default) injects nothing.
  enum class Operation { Allocate, Release, CopyPage };
  using FaultHook = std::function<Status(Operation)>;
  void setFaultHook(FaultHook hook) { faultHook_ = std::move(hook); }

private:
  struct Sequence {
    std::vector<PageId> pages;
    int64_t length = 0;
  };

  explicit PagedKVPool(const PoolConfig &config);
  static int64_t pageBytesOf(const PoolConfig &config);
  /// Where the value cache starts after the key cache.
  static int64_t valueOffsetOf(const PoolConfig &config);
  /// Pages holding at least one of the sequence's tokens.
  int64_t usedPages(const Sequence &sequence) const;
  int64_t rowOffset(int64_t slot, int64_t head) const;
  std::byte *hostCache(int which) const;
  Status checkPagesInUse(const std::vector<PageId> &pages) const;
  StatusOr<Sequence *> lookup(SequenceId sequence);
  StatusOr<const Sequence *> lookup(SequenceId sequence) const;
  Status copyPage(PageId from, PageId to);
  /// Checks an append's K/V addresses and token strides.
  Status checkRows(uint64_t keys, uint64_t values, int64_t keyStride,
                   int64_t valueStride) const;
  Status writeTokens(Sequence &sequence, const void *keys, const void *values,
                     int64_t numTokens);

  PoolConfig config_;
  std::unique_ptr<std::byte[]> storage_;
  cuda::DeviceBuffer device_;
  std::optional<PoolKernels> kernels_;
  /// The slots of a device pool's `append`, staged for its kernel.
  cuda::DeviceBuffer slotScratch_;
  std::vector<int32_t> refCounts_;
  std::vector<PageId> free_;
  std::unordered_map<SequenceId, Sequence> sequences_;
  SequenceId nextSequence_ = 0;
  FaultHook faultHook_;
  Status injectedFault(Operation operation) const {
    return faultHook_ ? faultHook_(operation) : Status();
  }
};

} // namespace attnc

#endif // ATTNC_RUNTIME_KV_PAGEDKVPOOL_H
