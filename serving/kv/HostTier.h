//===- HostTier.h - host pages under a paged KV pool ------------*- C++ -*-===//
//
// A second, larger and slower tier of KV pages in host memory, under a
// PagedKVPool: the radix cache moves the pages it evicts here and loads them
// back on a hit (SGLang's HiRadixCache, vLLM's KV offloading), so that a
// prefix the device pool had no room for is copied back instead of computed
// again.
//
// A host page is a page of the pool's geometry in every one of its layers,
// keys and values, laid out as the pool lays its own out (attnc/device/
// kv_pool.h over the tier's page count): the geometry and the layer count
// are the pool's, read from it. A tier over a host pool keeps plain host
// memory; one over an accounting pool keeps only the accounting, for an
// engine whose caches are its own and which makes the transfers itself; one
// over a device pool keeps pinned host memory (page-locked, so that the
// GPU's copy engines move pages while the host goes on) and copies on the
// pool's stream without waiting: ordered after the writes of a page it
// offloads and before the reads of a page it loads, as the pool's own
// copies are.
//
// Every transfer is a whole page in every layer, a fact (host page, device
// page, direction) that a caller can report to an engine that keeps its own
// caches, as PagedKVPool's page copies are (EngineBatch::pageCopies). Host
// pages are not shared: each is free or held by one owner.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SERVING_KV_HOSTTIER_H
#define ATTNC_SERVING_KV_HOSTTIER_H

#include "kv/PagedKVPool.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace attnc {

using HostPageId = int32_t;

enum class TransferDirection {
  /// Device page to host page: an evicted page kept in the tier.
  Offload,
  /// Host page to device page: a hit in the tier loaded back.
  Load,
};

const char *toString(TransferDirection direction);

/// One page copied between the tiers in every layer, keys and values.
struct PageTransfer {
  HostPageId hostPage = 0;
  PageId devicePage = 0;
  TransferDirection direction = TransferDirection::Offload;
  bool operator==(const PageTransfer &other) const {
    return hostPage == other.hostPage && devicePage == other.devicePage &&
           direction == other.direction;
  }
};

class HostTier {
public:
  /// A tier of `numPages` host pages (1 .. 2^31-1) under `pool`, which must
  /// outlive it. OutOfMemory when the host cannot hold (or pin) them.
  static StatusOr<std::unique_ptr<HostTier>> create(PagedKVPool &pool,
                                                    int64_t numPages);
  HostTier(const HostTier &) = delete;
  HostTier &operator=(const HostTier &) = delete;

  const PagedKVPool &pool() const { return pool_; }
  int64_t numPages() const { return numPages_; }
  int64_t numFreePages() const { return static_cast<int64_t>(free_.size()); }
  int64_t numUsedPages() const { return numPages() - numFreePages(); }
  bool inUse(HostPageId page) const {
    return page >= 0 && page < numPages_ && used_[size_t(page)];
  }

  /// Takes `count` free host pages; all or none (OutOfMemory).
  StatusOr<std::vector<HostPageId>> allocate(int64_t count);
  /// Returns host pages to the free list; all must be in use, each listed
  /// once.
  Status release(const std::vector<HostPageId> &pages);

  /// Copies each transfer's page in every layer, keys and values, in order:
  /// at once for a host pool, on the pool's stream without waiting for a
  /// device pool (a host page is read or written only once the stream has
  /// run the copy), not at all for an accounting pool. Both pages
  /// must be in use (a page being offloaded is the caller's until the
  /// transfer is issued); InvalidArgument names the first that is not,
  /// before anything is copied.
  Status transfer(const std::vector<PageTransfer> &transfers);

  /// The head vector at position `inPage` of host page `page` in layer
  /// `layer`, as PagedKVPool::keyAt (a device pool's tier too, once its
  /// stream has run the copies); nullptr without storage or for a page or
  /// layer outside the tier.
  const std::byte *keyAt(HostPageId page, int64_t inPage, int64_t head,
                         int64_t layer = 0) const;
  const std::byte *valueAt(HostPageId page, int64_t inPage, int64_t head,
                           int64_t layer = 0) const;

  /// Checks that every page is free (on the free list once) or in use.
  Status checkInvariants() const;

  /// A test seam, as PagedKVPool's: allocate and transfer ask the hook
  /// first and return its error before changing anything.
  enum class Operation { Allocate, Transfer };
  using FaultHook = std::function<Status(Operation)>;
  void setFaultHook(FaultHook hook) { faultHook_ = std::move(hook); }

private:
  HostTier(PagedKVPool &pool, int64_t numPages);
  /// Bytes from one of the tier's caches to the next: its pages, aligned as
  /// the pool's.
  int64_t cacheStride() const {
    return poolCacheStride(numPages_, pool_.pageBytes());
  }
  /// Host page `page`'s key (`which` 0) or value (1) bytes of layer `layer`.
  std::byte *hostPage(int which, int64_t layer, HostPageId page) const;
  /// Layer `layer`'s key or value page `page` of the pool's host storage.
  std::byte *poolPage(int which, int64_t layer, PageId page) const;
  Status checkPages(const std::vector<PageTransfer> &transfers) const;
  /// A device pool's transfers: each run of one direction through the
  /// pool's page-copy kernel, a launch per kMaxPageCopies pages in every
  /// layer (a copy call per page and layer cost microseconds each).
  Status transferOnDevice(const std::vector<PageTransfer> &transfers);
  Status injectedFault(Operation operation) const {
    return faultHook_ ? faultHook_(operation) : Status();
  }

  PagedKVPool &pool_;
  int64_t numPages_;
  std::unique_ptr<std::byte[]> storage_;
  cuda::PinnedBuffer pinned_;
  /// The pages: storage_'s or pinned_'s; null over an accounting pool.
  std::byte *bytes_ = nullptr;
  /// pinned_'s pages where kernels reach them.
  cuda::CUdeviceptr mappedBytes_ = 0;
  std::vector<bool> used_;
  std::vector<HostPageId> free_;
  FaultHook faultHook_;
};

} // namespace attnc

#endif // ATTNC_SERVING_KV_HOSTTIER_H
