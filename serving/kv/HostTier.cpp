//===- HostTier.cpp - host pages under a paged KV pool --------------------===//

#include "kv/HostTier.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <unordered_set>

namespace attnc {

namespace {
std::string str(int64_t value) { return std::to_string(value); }

Status invalid(std::string message) {
  return Status::error(ErrorCode::InvalidArgument, std::move(message));
}
} // namespace

const char *toString(TransferDirection direction) {
  switch (direction) {
  case TransferDirection::Offload:
    return "offload";
  case TransferDirection::Load:
    return "load";
  }
  return "unknown";
}

StatusOr<std::unique_ptr<HostTier>> HostTier::create(PagedKVPool &pool,
                                                     int64_t numPages) {
  if (numPages <= 0 || numPages > INT32_MAX)
    return invalid("a host tier needs between 1 and 2^31-1 pages, got " +
                   str(numPages));
  PoolMemory memory = pool.config().memory;
  // The caches first, then the bookkeeping, as the pool does; the size in
  // wider arithmetic first (2^31 pages of up to 2^30 bytes in up to 2^16
  // layers).
  int64_t bytes = 0;
  if (memory != PoolMemory::AccountingOnly) {
    if (static_cast<__int128>(poolCacheStride(numPages, pool.pageBytes())) * 2 *
            pool.numLayers() >
        static_cast<__int128>(INT64_MAX))
      return Status::error(ErrorCode::OutOfMemory,
                           "a host tier of " + str(numPages) + " pages of " +
                               str(pool.numLayers()) + " layers of " +
                               str(pool.pageBytes()) +
                               " bytes is past any memory");
    bytes = poolBytes(pool.numLayers(), numPages, pool.pageBytes());
  }
  std::unique_ptr<std::byte[]> storage;
  cuda::PinnedBuffer pinned;
  cuda::CUdeviceptr mappedBytes = 0;
  if (memory == PoolMemory::Host) {
    storage.reset(new (std::nothrow) std::byte[size_t(bytes)]);
    if (!storage)
      return Status::error(ErrorCode::OutOfMemory,
                           "cannot allocate " + str(bytes) +
                               " bytes of host memory for the host tier");
  } else if (memory == PoolMemory::Device) {
    StatusOr<cuda::Driver *> driver = cuda::Driver::get();
    if (!driver.ok())
      return driver.status();
    StatusOr<cuda::PinnedBuffer> buffer =
        cuda::PinnedBuffer::allocate(**driver, size_t(bytes));
    if (!buffer.ok())
      return Status::error(buffer.status().code(),
                           "cannot pin " + str(bytes) +
                               " bytes of host memory for the host tier: " +
                               buffer.status().message());
    pinned = std::move(*buffer);
    StatusOr<cuda::CUdeviceptr> mapped =
        (*driver)->devicePointerOf(pinned.get());
    if (!mapped.ok())
      return mapped.status();
    mappedBytes = *mapped;
  }
  std::unique_ptr<HostTier> tier;
  try {
    tier.reset(new HostTier(pool, numPages));
  } catch (const std::bad_alloc &) {
    return Status::error(ErrorCode::OutOfMemory,
                         "cannot allocate the bookkeeping of " + str(numPages) +
                             " host pages");
  }
  tier->storage_ = std::move(storage);
  tier->pinned_ = std::move(pinned);
  tier->bytes_ = tier->storage_ ? tier->storage_.get()
                                : static_cast<std::byte *>(tier->pinned_.get());
  tier->mappedBytes_ = mappedBytes;
  return tier;
}

HostTier::HostTier(PagedKVPool &pool, int64_t numPages)
    : pool_(pool), numPages_(numPages), used_(size_t(numPages), false) {
  free_.reserve(size_t(numPages));
  // Lowest page ids first, as the pool hands out its own.
  for (int64_t page = numPages - 1; page >= 0; --page)
    free_.push_back(static_cast<HostPageId>(page));
}

StatusOr<std::vector<HostPageId>> HostTier::allocate(int64_t count) {
  if (count < 0)
    return invalid("cannot allocate " + str(count) + " host pages");
  if (Status status = injectedFault(Operation::Allocate); !status.ok())
    return status;
  if (count > numFreePages())
    return Status::error(ErrorCode::OutOfMemory,
                         "the host tier has " + str(numFreePages()) +
                             " free pages, " + str(count) + " are needed");
  std::vector<HostPageId> pages(free_.end() - count, free_.end());
  std::reverse(pages.begin(), pages.end());
  free_.resize(free_.size() - size_t(count));
  for (HostPageId page : pages)
    used_[size_t(page)] = true;
  return pages;
}

Status HostTier::release(const std::vector<HostPageId> &pages) {
  std::unordered_set<HostPageId> listed;
  for (HostPageId page : pages) {
    if (page < 0 || page >= numPages_)
      return invalid("host page " + str(page) + " is not in the tier of " +
                     str(numPages_) + " pages");
    if (!used_[size_t(page)])
      return invalid("host page " + str(page) + " is free");
    if (!listed.insert(page).second)
      return invalid("host page " + str(page) + " is released twice");
  }
  for (HostPageId page : pages) {
    used_[size_t(page)] = false;
    free_.push_back(page);
  }
  return Status();
}

std::byte *HostTier::hostPage(int which, int64_t layer, HostPageId page) const {
  return bytes_ + poolCacheOffset(layer, which, cacheStride()) +
         int64_t(page) * pool_.pageBytes();
}

std::byte *HostTier::poolPage(int which, int64_t layer, PageId page) const {
  uint64_t cache = which == 0 ? pool_.keyCache(layer) : pool_.valueCache(layer);
  return reinterpret_cast<std::byte *>(cache) +
         int64_t(page) * pool_.pageBytes();
}

Status HostTier::checkPages(const std::vector<PageTransfer> &transfers) const {
  for (size_t i = 0; i < transfers.size(); ++i) {
    const PageTransfer &t = transfers[i];
    if (!inUse(t.hostPage))
      return invalid("transfer " + str(int64_t(i)) + " names host page " +
                     str(t.hostPage) + ", which is not in use in the tier of " +
                     str(numPages_) + " pages");
    if (t.devicePage < 0 || t.devicePage >= pool_.numPages() ||
        pool_.refCount(t.devicePage) == 0)
      return invalid("transfer " + str(int64_t(i)) + " names device page " +
                     str(t.devicePage) +
                     ", which is not in use in the pool of " +
                     str(pool_.numPages()) + " pages");
  }
  return Status();
}

Status HostTier::transfer(const std::vector<PageTransfer> &transfers) {
  if (Status status = checkPages(transfers); !status.ok())
    return status;
  if (Status status = injectedFault(Operation::Transfer); !status.ok())
    return status;
  if (pinned_.get())
    return transferOnDevice(transfers);
  if (!storage_)
    return Status();
  size_t bytes = size_t(pool_.pageBytes());
  // In order: a later transfer may read a page an earlier one wrote.
  for (const PageTransfer &t : transfers)
    for (int64_t layer = 0; layer < pool_.numLayers(); ++layer)
      for (int which = 0; which < 2; ++which) {
        std::byte *host = hostPage(which, layer, t.hostPage);
        std::byte *device = poolPage(which, layer, t.devicePage);
        if (t.direction == TransferDirection::Offload)
          std::memcpy(host, device, bytes);
        else
          std::memcpy(device, host, bytes);
      }
  return Status();
}

Status HostTier::transferOnDevice(const std::vector<PageTransfer> &transfers) {
  // The tier's pages as the pool's copy kernel reaches them: mapped pinned
  // memory in the pool's layout over the tier's page count.
  auto *base = reinterpret_cast<std::byte *>(mappedBytes_);
  PageStore store{base, base + cacheStride(), 2 * cacheStride()};
  for (size_t begin = 0; begin < transfers.size();) {
    // A run of one direction goes in as few launches as the kernel allows;
    // runs go in order, as a load may fill a device page an offload before
    // it read. Within a run each page is named once on each side.
    TransferDirection direction = transfers[begin].direction;
    std::vector<PageCopy> copies;
    size_t end = begin;
    for (; end < transfers.size() && transfers[end].direction == direction;
         ++end)
      copies.push_back(direction == TransferDirection::Offload
                           ? PageCopy{transfers[end].devicePage,
                                      PageId(transfers[end].hostPage)}
                           : PageCopy{PageId(transfers[end].hostPage),
                                      transfers[end].devicePage});
    if (Status status = pool_.copyPagesWith(
            store, copies, direction == TransferDirection::Offload);
        !status.ok())
      return status;
    begin = end;
  }
  return Status();
}

const std::byte *HostTier::keyAt(HostPageId page, int64_t inPage, int64_t head,
                                 int64_t layer) const {
  if (!bytes_ || page < 0 || page >= numPages_ || layer < 0 ||
      layer >= pool_.numLayers())
    return nullptr;
  const PoolConfig &c = pool_.config();
  return hostPage(0, layer, 0) +
         poolRowOffset(poolSlot(page, int(c.pageSize), int(inPage)), int(head),
                       c.order, int(c.pageSize), int(c.numKVHeads),
                       int(c.headDim), int(c.elementBytes));
}

const std::byte *HostTier::valueAt(HostPageId page, int64_t inPage,
                                   int64_t head, int64_t layer) const {
  const std::byte *key = keyAt(page, inPage, head, layer);
  return key ? key + (poolCacheOffset(layer, 1, cacheStride()) -
                      poolCacheOffset(layer, 0, cacheStride()))
             : nullptr;
}

Status HostTier::checkInvariants() const {
  std::vector<bool> listed(size_t(numPages_), false);
  for (HostPageId page : free_) {
    if (page < 0 || page >= numPages_)
      return Status::error(ErrorCode::Internal,
                           "the tier's free list holds page " + str(page));
    if (listed[size_t(page)])
      return Status::error(ErrorCode::Internal,
                           "host page " + str(page) +
                               " is on the free list twice");
    listed[size_t(page)] = true;
  }
  for (int64_t page = 0; page < numPages_; ++page)
    if (listed[size_t(page)] == used_[size_t(page)])
      return Status::error(ErrorCode::Internal,
                           "host page " + str(page) + " is " +
                               (used_[size_t(page)] ? "in use and free"
                                                    : "neither in use nor "
                                                      "free"));
  return Status();
}

} // namespace attnc
