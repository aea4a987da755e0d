//===- PagedKVPool.h - a paged key/value cache ------------------*- C++ -*-===//
//
// One allocation holds, for each of the model's layers, two caches, keys
// then values, each [num_pages][page] where a page is [page_size][heads][dim]
// (NHD) or [heads][page_size][dim] (HND): the layout the attention kernels
// read (PagedAttention's k_cache and v_cache), defined once by
// attnc/device/kv_pool.h. A token's slot is page * page_size + its position
// in the page, the same in every layer: a page is a page of every layer.
// Pages are reference counted: sequences forked for parallel sampling or
// beam search share their pages, and the radix prefix cache holds references
// of its own. A full page is immutable once written; the partial last page
// of a shared sequence is copied, in every layer, before it is written
// (copy-on-write).
//
// A device pool launches its writes and copies on its stream (setStream;
// the legacy default stream unless set) and never synchronizes: give it the
// engine's stream, so that a copy is ordered after the writes of the page it
// reads and before the writes of the step that reads the copy.
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
  /// The model's layers, each with its key and value cache over the same
  /// pages: 1 .. kMaxPoolLayers.
  int64_t numLayers = 1;
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

/// A copy of page `from`'s keys and values over page `to`, in every layer
/// (vLLM's blocks_to_copy): copy-on-write of a page sequences shared.
struct PageCopy {
  PageId from = 0;
  PageId to = 0;
  bool operator==(const PageCopy &other) const {
    return from == other.from && to == other.to;
  }
};

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
  int64_t numLayers() const { return config_.numLayers; }
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
  /// Appends `numTokens` tokens of keys and values of every layer, each
  /// given as [numLayers][numTokens][heads][dim] elements (host memory for a
  /// host pool, device memory for a device pool, which writes them on its
  /// stream). Allocates pages as needed and copies a shared partial last
  /// page first (in every layer). A device pool stages the slots in one
  /// buffer with a synchronous copy: its stream must be ordered with the
  /// legacy default stream (that stream, or a blocking one).
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

  /// Addresses of layer `layer`'s key and value caches: device addresses
  /// for a device pool, host addresses for a host pool, 0 without storage
  /// or for a layer outside [0, numLayers).
  uint64_t keyCache(int64_t layer = 0) const;
  uint64_t valueCache(int64_t layer = 0) const;
  /// Bytes of one page of one cache, and of each cache.
  int64_t pageBytes() const { return pageBytesOf(config_); }
  int64_t cacheBytes() const { return numPages() * pageBytes(); }
  /// Bytes from one layer's key cache to the next layer's.
  int64_t layerBytes() const {
    return poolCacheOffset(1, 0, poolCacheStride(numPages(), pageBytes()));
  }
  /// InvalidArgument unless 0 <= layer < numLayers.
  Status checkLayer(int64_t layer) const;

  /// The stream a device pool's own writes and copies go on (append,
  /// reserve's and copyPageContents' copies); nullptr, the legacy default
  /// stream, unless set. A host pool ignores it.
  void setStream(cuda::CUstream stream) { stream_ = stream; }
  cuda::CUstream stream() const { return stream_; }

  /// Writes `tokens` rows of keys and values, token t's head h at element
  /// t * stride + h * head_dim of `keys` and `values`, to the slots `slots`
  /// (int64; negative: skipped): an engine step's append of new K/V after
  /// reserving their slots. Addresses are device addresses for a device
  /// pool, which writes on `stream` without synchronizing (a slot past the
  /// pool is not written there; a host pool refuses it), host addresses
  /// for a host pool. A device pool's addresses and strides must be aligned
  /// to its row chunk (16 bytes for rows of a multiple of 16 bytes).
  /// Layer `layer`'s rows (InvalidArgument for a layer outside [0,
  /// numLayers), before anything is read): an engine writes each layer's
  /// K/V at the step's slot mapping.
  Status appendSlots(int64_t layer, uint64_t keys, uint64_t values,
                     int64_t keyStride, int64_t valueStride, uint64_t slots,
                     int64_t tokens, cuda::CUstream stream);
  /// Layer 0's: the whole pool for a pool of one layer.
  Status appendSlots(uint64_t keys, uint64_t values, int64_t keyStride,
                     int64_t valueStride, uint64_t slots, int64_t tokens,
                     cuda::CUstream stream = nullptr) {
    return appendSlots(0, keys, values, keyStride, valueStride, slots, tokens,
                       stream);
  }

  /// Address of the head vector at position `inPage` of a host pool's
  /// page in layer `layer`; nullptr without host storage or for a layer
  /// outside the pool.
  const std::byte *keyAt(PageId page, int64_t inPage, int64_t head,
                         int64_t layer = 0) const;
  const std::byte *valueAt(PageId page, int64_t inPage, int64_t head,
                           int64_t layer = 0) const;

  /// Copies page `from`'s keys and values over page `to` in every layer,
  /// both pages in use: copy-on-write of a shared page before one side
  /// writes it. A device pool launches the copy on its stream (stream())
  /// and does not wait for it.
  Status copyPageContents(PageId from, PageId to);

  /// Copies each `copies[i].from` over `copies[i].to` in every layer, in
  /// order (what a step's pageCopies lists): host pools at once, device
  /// pools on `stream` without synchronizing, an accounting pool not at all.
  /// Pages must be in the pool (in use or not: the engine applies a step's
  /// copies as they were decided); InvalidArgument names the first that is
  /// not, before anything is copied.
  Status copyPages(const std::vector<PageCopy> &copies, cuda::CUstream stream);

  /// A device pool's caches as a copy kernel reads and writes them.
  PageStore pageStore() const;
  /// Copies whole pages in every layer between a device pool and `store`,
  /// pages of the pool's layout elsewhere (a host tier's mapped pinned
  /// pages): each `copies[i].from` of the source over `copies[i].to` of the
  /// destination, the pool being the source when `fromPool`. On the pool's
  /// stream without waiting, a launch per kMaxPageCopies pages instead of a
  /// copy call per page. Pages are the caller's to bound, the pool's and
  /// the store's alike.
  Status copyPagesWith(const PageStore &store,
                       const std::vector<PageCopy> &copies, bool fromPool);

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
  /// Where a cache starts after the one before it.
  static int64_t cacheStrideOf(const PoolConfig &config);
  /// Pages holding at least one of the sequence's tokens.
  int64_t usedPages(const Sequence &sequence) const;
  int64_t rowOffset(int64_t slot, int64_t head) const;
  /// Layer `layer`'s key (`which` 0) or value (1) cache of a host pool.
  std::byte *hostCache(int which, int64_t layer = 0) const;
  /// Byte offset of layer `layer`'s key or value cache in the allocation.
  int64_t cacheOffset(int which, int64_t layer) const;
  Status checkPagesInUse(const std::vector<PageId> &pages) const;
  StatusOr<Sequence *> lookup(SequenceId sequence);
  StatusOr<const Sequence *> lookup(SequenceId sequence) const;
  /// The copies, in every layer, unchecked.
  Status copyUnchecked(const std::vector<PageCopy> &copies,
                       cuda::CUstream stream);
  /// A device pool's copies from `source` to `destination`, unchecked.
  Status launchCopies(const PageStore &source, const PageStore &destination,
                      const std::vector<PageCopy> &copies,
                      cuda::CUstream stream);
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
  cuda::CUstream stream_ = nullptr;
  Status injectedFault(Operation operation) const {
    return faultHook_ ? faultHook_(operation) : Status();
  }
};

} // namespace attnc

#endif // ATTNC_RUNTIME_KV_PAGEDKVPOOL_H
