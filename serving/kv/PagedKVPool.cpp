//===- PagedKVPool.cpp - a paged key/value cache --------------------------===//

#include "kv/PagedKVPool.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

namespace attnc {

namespace {
std::string str(int64_t value) { return std::to_string(value); }

Status invalid(std::string message) {
  return Status::error(ErrorCode::InvalidArgument, std::move(message));
}
} // namespace

StatusOr<std::unique_ptr<PagedKVPool>>
PagedKVPool::create(const PoolConfig &config) {
  if (config.numPages <= 0 || config.numPages > INT32_MAX)
    return invalid("a pool needs between 1 and 2^31-1 pages, got " +
                   str(config.numPages));
  // The pool holds pages the kernels read: the same limits as the IR's.
  if (config.pageSize < limits::kMinPageSize ||
      config.pageSize > limits::kMaxPageSize)
    return invalid("page size must be between " + str(limits::kMinPageSize) +
                   " and " + str(limits::kMaxPageSize) + ", got " +
                   str(config.pageSize));
  if (config.numKVHeads <= 0 || config.numKVHeads > limits::kMaxHeads ||
      config.headDim <= 0 || config.headDim > limits::kMaxHeadDim)
    return invalid("head count and head dim must be in [1, " +
                   str(limits::kMaxHeads) + "] and [1, " +
                   str(limits::kMaxHeadDim) + "], got " +
                   str(config.numKVHeads) + " and " + str(config.headDim));
  if (config.elementBytes != 1 && config.elementBytes != 2 &&
      config.elementBytes != 4)
    return invalid("elements are 1, 2 or 4 bytes, got " +
                   str(config.elementBytes));
  if (config.numLayers < 1 || config.numLayers > kMaxPoolLayers)
    return invalid("a pool holds between 1 and " + str(kMaxPoolLayers) +
                   " layers, got " + str(config.numLayers));

  // The caches first, then the per-page bookkeeping: a pool too large to
  // hold fails before anything big was touched. Within the limits above a
  // cache holds at most 2^31 pages x 2^30 bytes, and 2^17 of them would
  // overflow: the size is checked in wider arithmetic first.
  if (config.memory != PoolMemory::AccountingOnly &&
      static_cast<__int128>(cacheStrideOf(config)) * 2 * config.numLayers >
          static_cast<__int128>(INT64_MAX))
    return Status::error(ErrorCode::OutOfMemory,
                         "a pool of " + str(config.numLayers) + " layers of " +
                             str(config.numPages) + " pages of " +
                             str(pageBytesOf(config)) +
                             " bytes is past any memory");
  int64_t bytes =
      config.memory == PoolMemory::AccountingOnly
          ? 0
          : poolBytes(config.numLayers, config.numPages, pageBytesOf(config));
  std::unique_ptr<std::byte[]> storage;
  cuda::DeviceBuffer device;
  std::optional<PoolKernels> kernels;
  if (config.memory == PoolMemory::Host) {
    // Zeroed, like the device pool below.
    storage.reset(new (std::nothrow) std::byte[bytes]());
    if (!storage)
      return Status::error(ErrorCode::OutOfMemory,
                           "cannot allocate " + str(bytes) +
                               " bytes of host memory for the KV pool");
  } else if (config.memory == PoolMemory::Device) {
    StatusOr<cuda::Driver *> driver = cuda::Driver::get();
    if (!driver.ok())
      return driver.status();
    StatusOr<PoolKernels> loaded =
        PoolKernels::load(**driver, config, config.cacheDir);
    if (!loaded.ok())
      return loaded.status();
    kernels = *loaded;
    StatusOr<cuda::DeviceBuffer> buffer =
        cuda::DeviceBuffer::allocate(**driver, size_t(bytes));
    if (!buffer.ok())
      return Status::error(ErrorCode::OutOfMemory,
                           "cannot allocate " + str(bytes) +
                               " bytes of device memory for the KV pool: " +
                               buffer.status().message());
    device = std::move(*buffer);
    // Attention reads whole pages: the slots of a request's last page past
    // its end are masked, but a masked score times a NaN value is NaN.
    // Fresh device memory can hold any bits; zero is finite.
    if (Status zeroed = (*driver)->fill(device.get(), 0, size_t(bytes));
        !zeroed.ok())
      return zeroed;
  }
  std::unique_ptr<PagedKVPool> pool;
  try {
    pool.reset(new PagedKVPool(config));
  } catch (const std::bad_alloc &) {
    return Status::error(ErrorCode::OutOfMemory,
                         "cannot allocate the bookkeeping of " +
                             str(config.numPages) + " pages");
  }
  pool->storage_ = std::move(storage);
  pool->device_ = std::move(device);
  pool->kernels_ = std::move(kernels);
  return pool;
}

PagedKVPool::PagedKVPool(const PoolConfig &config)
    : config_(config), refCounts_(config.numPages, 0) {
  free_.reserve(config.numPages);
  // Lowest page ids first: pages are handed out in order on a fresh pool.
  for (int64_t page = config.numPages - 1; page >= 0; --page)
    free_.push_back(static_cast<PageId>(page));
}

int64_t PagedKVPool::pageBytesOf(const PoolConfig &config) {
  return poolPageBytes(config.pageSize, config.numKVHeads, config.headDim,
                       config.elementBytes);
}

int64_t PagedKVPool::cacheStrideOf(const PoolConfig &config) {
  return poolCacheStride(config.numPages, pageBytesOf(config));
}

int64_t PagedKVPool::cacheOffset(int which, int64_t layer) const {
  return poolCacheOffset(layer, which, cacheStrideOf(config_));
}

Status PagedKVPool::checkLayer(int64_t layer) const {
  if (layer < 0 || layer >= numLayers())
    return invalid("layer " + str(layer) + " is not in the pool's " +
                   str(numLayers()) + " layers");
  return Status();
}

int64_t PagedKVPool::usedPages(const Sequence &sequence) const {
  return (sequence.length + config_.pageSize - 1) / config_.pageSize;
}

int64_t PagedKVPool::rowOffset(int64_t slot, int64_t head) const {
  return poolRowOffset(slot, int(head), config_.order, int(config_.pageSize),
                       int(config_.numKVHeads), int(config_.headDim),
                       int(config_.elementBytes));
}

std::byte *PagedKVPool::hostCache(int which, int64_t layer) const {
  return storage_.get() + cacheOffset(which, layer);
}

uint64_t PagedKVPool::keyCache(int64_t layer) const {
  if (layer < 0 || layer >= numLayers())
    return 0;
  if (storage_)
    return reinterpret_cast<uint64_t>(hostCache(0, layer));
  return device_.get() ? device_.get() + uint64_t(cacheOffset(0, layer)) : 0;
}

uint64_t PagedKVPool::valueCache(int64_t layer) const {
  if (layer < 0 || layer >= numLayers())
    return 0;
  if (storage_)
    return reinterpret_cast<uint64_t>(hostCache(1, layer));
  return device_.get() ? device_.get() + uint64_t(cacheOffset(1, layer)) : 0;
}

const std::byte *PagedKVPool::keyAt(PageId page, int64_t inPage, int64_t head,
                                    int64_t layer) const {
  return storage_ && layer >= 0 && layer < numLayers()
             ? hostCache(0, layer) +
                   rowOffset(poolSlot(page, int(pageSize()), int(inPage)), head)
             : nullptr;
}

const std::byte *PagedKVPool::valueAt(PageId page, int64_t inPage, int64_t head,
                                      int64_t layer) const {
  return storage_ && layer >= 0 && layer < numLayers()
             ? hostCache(1, layer) +
                   rowOffset(poolSlot(page, int(pageSize()), int(inPage)), head)
             : nullptr;
}

StatusOr<std::vector<PageId>> PagedKVPool::allocate(int64_t count) {
  if (count < 0)
    return invalid("cannot allocate " + str(count) + " pages");
  if (Status status = injectedFault(Operation::Allocate); !status.ok())
    return status;
  if (count > numFreePages())
    return Status::error(ErrorCode::OutOfMemory,
                         "the pool has " + str(numFreePages()) +
                             " free pages, " + str(count) + " are needed");
  std::vector<PageId> pages(free_.end() - count, free_.end());
  std::reverse(pages.begin(), pages.end());
  free_.resize(free_.size() - count);
  for (PageId page : pages)
    refCounts_[page] = 1;
  return pages;
}

Status PagedKVPool::checkPagesInUse(const std::vector<PageId> &pages) const {
  for (PageId page : pages) {
    if (page < 0 || page >= numPages())
      return invalid("page " + str(page) + " is not in the pool of " +
                     str(numPages()) + " pages");
    if (refCounts_[page] == 0)
      return invalid("page " + str(page) + " is free");
  }
  return Status();
}

Status PagedKVPool::retain(const std::vector<PageId> &pages) {
  if (Status status = checkPagesInUse(pages); !status.ok())
    return status;
  for (PageId page : pages)
    ++refCounts_[page];
  return Status();
}

Status PagedKVPool::release(const std::vector<PageId> &pages) {
  if (Status status = checkPagesInUse(pages); !status.ok())
    return status;
  if (Status status = injectedFault(Operation::Release); !status.ok())
    return status;
  // A page listed more often than it is referenced would be freed twice.
  std::unordered_map<PageId, int32_t> drops;
  for (PageId page : pages)
    if (++drops[page] > refCounts_[page])
      return invalid("page " + str(page) +
                     " is released more often than it "
                     "is referenced");
  for (PageId page : pages)
    if (--refCounts_[page] == 0)
      free_.push_back(page);
  return Status();
}

SequenceId PagedKVPool::createSequence() {
  SequenceId id = nextSequence_++;
  sequences_.emplace(id, Sequence());
  return id;
}

StatusOr<PagedKVPool::Sequence *> PagedKVPool::lookup(SequenceId sequence) {
  auto it = sequences_.find(sequence);
  if (it == sequences_.end())
    return Status::error(ErrorCode::NotFound,
                         "no sequence " + str(sequence) + " in the pool");
  return &it->second;
}

StatusOr<const PagedKVPool::Sequence *>
PagedKVPool::lookup(SequenceId sequence) const {
  auto it = sequences_.find(sequence);
  if (it == sequences_.end())
    return Status::error(ErrorCode::NotFound,
                         "no sequence " + str(sequence) + " in the pool");
  return &it->second;
}

Status PagedKVPool::copyPageContents(PageId from, PageId to) {
  if (Status status = checkPagesInUse({from, to}); !status.ok())
    return status;
  if (Status status = injectedFault(Operation::CopyPage); !status.ok())
    return status;
  return copyUnchecked({{from, to}}, stream_);
}

Status PagedKVPool::copyPages(const std::vector<PageCopy> &copies,
                              cuda::CUstream stream) {
  for (size_t i = 0; i < copies.size(); ++i)
    for (PageId page : {copies[i].from, copies[i].to})
      if (page < 0 || page >= numPages())
        return invalid("copy " + str(int64_t(i)) + " names page " + str(page) +
                       ", which is not in the pool of " + str(numPages()) +
                       " pages");
  return copyUnchecked(copies, stream);
}

Status PagedKVPool::copyUnchecked(const std::vector<PageCopy> &copies,
                                  cuda::CUstream stream) {
  if (storage_) {
    // In order: a later copy may read what an earlier one wrote.
    for (const PageCopy &copy : copies)
      for (int64_t layer = 0; layer < numLayers(); ++layer)
        for (int which = 0; which < 2; ++which)
          std::memmove(hostCache(which, layer) + int64_t(copy.to) * pageBytes(),
                       hostCache(which, layer) +
                           int64_t(copy.from) * pageBytes(),
                       size_t(pageBytes()));
    return Status();
  }
  return launchCopies(pageStore(), pageStore(), copies, stream);
}

PageStore PagedKVPool::pageStore() const {
  return {reinterpret_cast<void *>(keyCache(0)),
          reinterpret_cast<void *>(valueCache(0)), layerBytes()};
}

Status PagedKVPool::copyPagesWith(const PageStore &store,
                                  const std::vector<PageCopy> &copies,
                                  bool fromPool) {
  if (!kernels_)
    return Status::error(ErrorCode::InvalidArgument,
                         "only a device pool copies pages with another store");
  return fromPool ? launchCopies(pageStore(), store, copies, stream_)
                  : launchCopies(store, pageStore(), copies, stream_);
}

Status PagedKVPool::launchCopies(const PageStore &source,
                                 const PageStore &destination,
                                 const std::vector<PageCopy> &copies,
                                 cuda::CUstream stream) {
  if (!kernels_ || copies.empty())
    return Status();
  // A launch's copies run at once: one that touches a page an earlier copy
  // of the same launch writes, or writes one it reads, goes in the next
  // (between two stores only the writes can collide; the check is the
  // same, and at worst splits a launch).
  CopyPagesParams params{};
  params.source = source;
  params.destination = destination;
  params.layers = int32_t(numLayers());
  auto flush = [&]() -> Status {
    if (params.count == 0)
      return Status();
    Status status = kernels_->copyPages(params, stream);
    params.count = 0;
    return status;
  };
  for (const PageCopy &copy : copies) {
    bool dependent = false;
    for (int32_t k = 0; k < params.count; ++k)
      dependent |= params.to[k] == copy.from || params.to[k] == copy.to ||
                   params.from[k] == copy.to;
    if (params.count == kMaxPageCopies || dependent)
      if (Status status = flush(); !status.ok())
        return status;
    params.from[params.count] = copy.from;
    params.to[params.count] = copy.to;
    ++params.count;
  }
  return flush();
}

Status PagedKVPool::reserve(SequenceId id, int64_t numTokens) {
  StatusOr<Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  Sequence &sequence = **found;
  if (numTokens < 0)
    return invalid("cannot reserve " + str(numTokens) + " tokens");
  if (numTokens == 0)
    return Status();
  int64_t pageSize = config_.pageSize;
  int64_t have = static_cast<int64_t>(sequence.pages.size());
  int64_t need = (sequence.length + numTokens + pageSize - 1) / pageSize;
  // The pages the new tokens go to must be the sequence's own: one it
  // shares since a fork (reserved, or holding its last tokens) is replaced,
  // the one holding tokens copied first.
  int64_t next = sequence.length / pageSize;
  std::vector<int64_t> shared;
  for (int64_t i = next; i < std::min(have, need); ++i)
    if (refCounts_[sequence.pages[size_t(i)]] > 1)
      shared.push_back(i);
  int64_t fresh = std::max<int64_t>(0, need - have);
  StatusOr<std::vector<PageId>> pages =
      allocate(fresh + static_cast<int64_t>(shared.size()));
  if (!pages.ok())
    return pages.status();
  // Copies first, so that a failed one changes nothing.
  for (size_t k = 0; k < shared.size(); ++k)
    if (shared[k] == next && sequence.length % pageSize != 0)
      if (Status status = copyUnchecked(
              {{sequence.pages[size_t(shared[k])], (*pages)[k]}}, stream_);
          !status.ok()) {
        (void)release(*pages);
        return status;
      }
  for (size_t k = 0; k < shared.size(); ++k) {
    PageId &page = sequence.pages[size_t(shared[k])];
    --refCounts_[page]; // still referenced by the other sequences
    page = (*pages)[k];
  }
  sequence.pages.insert(sequence.pages.end(), pages->begin() + shared.size(),
                        pages->end());
  return Status();
}

Status PagedKVPool::writeTokens(Sequence &sequence, const void *keys,
                                const void *values, int64_t numTokens) {
  if ((!storage_ && !kernels_) || numTokens == 0)
    return Status();
  std::vector<int64_t> targets;
  targets.reserve(size_t(numTokens));
  for (int64_t t = 0; t < numTokens; ++t)
    targets.push_back(
        slotOfPosition(sequence.pages, pageSize(), sequence.length + t));
  int64_t stride = config_.numKVHeads * config_.headDim;
  uint64_t slots = reinterpret_cast<uint64_t>(targets.data());
  // Every layer's rows of the tokens, layer by layer.
  uint64_t layerBytes =
      uint64_t(numTokens) * uint64_t(stride) * uint64_t(config_.elementBytes);
  if (kernels_) {
    // A device pool's kernel reads the slots from device memory.
    size_t bytes = size_t(numTokens) * sizeof(int64_t);
    StatusOr<cuda::Driver *> driver = cuda::Driver::get();
    if (!driver.ok())
      return driver.status();
    if (slotScratch_.size() < bytes) {
      StatusOr<cuda::DeviceBuffer> scratch =
          cuda::DeviceBuffer::allocate(**driver, bytes);
      if (!scratch.ok())
        return scratch.status();
      slotScratch_ = std::move(*scratch);
    }
    if (Status status =
            (*driver)->copyToDevice(slotScratch_.get(), targets.data(), bytes);
        !status.ok())
      return status;
    slots = slotScratch_.get();
  }
  for (int64_t layer = 0; layer < numLayers(); ++layer)
    if (Status status = appendSlots(
            layer,
            reinterpret_cast<uint64_t>(keys) + uint64_t(layer) * layerBytes,
            reinterpret_cast<uint64_t>(values) + uint64_t(layer) * layerBytes,
            stride, stride, slots, numTokens, stream_);
        !status.ok())
      return status;
  return Status();
}

Status PagedKVPool::checkRows(uint64_t keys, uint64_t values, int64_t keyStride,
                              int64_t valueStride) const {
  int64_t row = config_.numKVHeads * config_.headDim;
  if (keyStride < row || valueStride < row)
    return invalid("token strides must hold a token's " + str(row) +
                   " elements, got " + str(keyStride) + " and " +
                   str(valueStride));
  // Host rows are copied bytewise; the device kernel copies whole chunks.
  int64_t chunk =
      kernels_ ? poolChunkBytes(config_.headDim * config_.elementBytes) : 1;
  if (keys % chunk || values % chunk ||
      keyStride * config_.elementBytes % chunk ||
      valueStride * config_.elementBytes % chunk)
    return invalid("keys, values and their token strides must be aligned "
                   "to " +
                   str(chunk) + " bytes");
  return Status();
}

Status PagedKVPool::appendSlots(int64_t layer, uint64_t keys, uint64_t values,
                                int64_t keyStride, int64_t valueStride,
                                uint64_t slots, int64_t tokens,
                                cuda::CUstream stream) {
  if (Status status = checkLayer(layer); !status.ok())
    return status;
  if (!storage_ && !kernels_)
    return invalid("appendSlots writes K/V; this pool keeps only accounts");
  if (tokens < 0)
    return invalid("cannot append " + str(tokens) + " tokens");
  if (tokens == 0)
    return Status();
  if (!keys || !values || !slots)
    return invalid("appendSlots needs keys, values and slots");
  if (Status status = checkRows(keys, values, keyStride, valueStride);
      !status.ok())
    return status;
  if (slots % alignof(int64_t))
    return invalid("slots must be aligned to 8 bytes");
  int64_t slotCount = numPages() * pageSize();
  if (storage_) {
    // Host addresses: every slot is checked before anything is written.
    const auto *slotAt = reinterpret_cast<const int64_t *>(slots);
    for (int64_t t = 0; t < tokens; ++t)
      if (slotAt[t] >= slotCount)
        return invalid("slot " + str(slotAt[t]) + " of token " + str(t) +
                       " is past the pool's " + str(slotCount));
    int64_t rowBytes = config_.headDim * config_.elementBytes;
    for (int64_t t = 0; t < tokens; ++t) {
      if (slotAt[t] < 0)
        continue;
      for (int64_t head = 0; head < config_.numKVHeads; ++head) {
        int64_t target = rowOffset(slotAt[t], head);
        int64_t within = head * rowBytes;
        std::memcpy(hostCache(0, layer) + target,
                    reinterpret_cast<const std::byte *>(keys) +
                        t * keyStride * config_.elementBytes + within,
                    size_t(rowBytes));
        std::memcpy(hostCache(1, layer) + target,
                    reinterpret_cast<const std::byte *>(values) +
                        t * valueStride * config_.elementBytes + within,
                    size_t(rowBytes));
      }
    }
    return Status();
  }
  AppendParams params{};
  params.keys = reinterpret_cast<const void *>(keys);
  params.values = reinterpret_cast<const void *>(values);
  params.key_stride = keyStride;
  params.value_stride = valueStride;
  params.slots = reinterpret_cast<const i64 *>(slots);
  params.tokens = tokens;
  params.slot_count = slotCount;
  params.key_cache = reinterpret_cast<void *>(keyCache(layer));
  params.value_cache = reinterpret_cast<void *>(valueCache(layer));
  return kernels_->append(params, stream);
}

Status PagedKVPool::append(SequenceId id, const void *keys, const void *values,
                           int64_t numTokens) {
  if ((storage_ || kernels_) && numTokens > 0 && (!keys || !values))
    return invalid("append needs key and value data");
  if (numTokens < 0)
    return invalid("cannot append " + str(numTokens) + " tokens");
  StatusOr<Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  int64_t stride = config_.numKVHeads * config_.headDim;
  if (kernels_ && numTokens > 0)
    if (Status status =
            checkRows(reinterpret_cast<uint64_t>(keys),
                      reinterpret_cast<uint64_t>(values), stride, stride);
        !status.ok())
      return status;
  Sequence &sequence = **found;
  std::vector<PageId> before = sequence.pages;
  if (Status status = reserve(id, numTokens); !status.ok())
    return status;
  if (Status status = writeTokens(sequence, keys, values, numTokens);
      !status.ok()) {
    // Nothing was written that a reader sees: undo what reserve did (pages
    // it made the sequence's own, pages it added).
    for (size_t i = 0; i < before.size(); ++i)
      if (sequence.pages[i] != before[i]) {
        (void)release({sequence.pages[i]});
        ++refCounts_[before[i]];
        sequence.pages[i] = before[i];
      }
    (void)release(std::vector<PageId>(sequence.pages.begin() + before.size(),
                                      sequence.pages.end()));
    sequence.pages.resize(before.size());
    return status;
  }
  sequence.length += numTokens;
  return Status();
}

StatusOr<SequenceId> PagedKVPool::fork(SequenceId id) {
  StatusOr<Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  Sequence copy = **found;
  for (PageId page : copy.pages)
    ++refCounts_[page];
  SequenceId child = nextSequence_++;
  sequences_.emplace(child, std::move(copy));
  return child;
}

Status PagedKVPool::freeSequence(SequenceId id) {
  StatusOr<Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  Status status = release((*found)->pages);
  if (!status.ok())
    return status;
  sequences_.erase(id);
  return Status();
}

StatusOr<int64_t> PagedKVPool::sequenceLength(SequenceId id) const {
  StatusOr<const Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  return (*found)->length;
}

StatusOr<std::vector<PageId>> PagedKVPool::sequencePages(SequenceId id) const {
  StatusOr<const Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  return std::vector<PageId>((*found)->pages.begin(),
                             (*found)->pages.begin() + usedPages(**found));
}

StatusOr<std::vector<int64_t>> PagedKVPool::slots(SequenceId id, int64_t from,
                                                  int64_t count) const {
  StatusOr<const Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  const Sequence &sequence = **found;
  int64_t reserved = static_cast<int64_t>(sequence.pages.size()) * pageSize();
  if (from < 0 || count < 0 || from + count > reserved)
    return invalid("tokens [" + str(from) + ", " + str(from + count) +
                   ") of sequence " + str(id) + " are not reserved (" +
                   str(reserved) + " slots)");
  std::vector<int64_t> result;
  result.reserve(size_t(count));
  for (int64_t position = from; position < from + count; ++position)
    result.push_back(slotOfPosition(sequence.pages, pageSize(), position));
  return result;
}

StatusOr<PageTable>
PagedKVPool::pageTable(const std::vector<SequenceId> &batch) const {
  PageTable table;
  table.indptr.push_back(0);
  for (SequenceId id : batch) {
    StatusOr<const Sequence *> found = lookup(id);
    if (!found.ok())
      return found.status();
    const Sequence &sequence = **found;
    table.indices.insert(table.indices.end(), sequence.pages.begin(),
                         sequence.pages.begin() + usedPages(sequence));
    table.indptr.push_back(static_cast<int32_t>(table.indices.size()));
    int64_t last = sequence.length % config_.pageSize;
    table.lastPageLen.push_back(static_cast<int32_t>(
        sequence.length == 0 ? 0 : (last == 0 ? config_.pageSize : last)));
  }
  return table;
}

Status PagedKVPool::checkInvariants() const {
  std::vector<bool> isFree(numPages(), false);
  for (PageId page : free_) {
    if (page < 0 || page >= numPages())
      return Status::error(ErrorCode::Internal,
                           "free list holds page " + str(page));
    if (isFree[page])
      return Status::error(ErrorCode::Internal,
                           "page " + str(page) + " is on the free list twice");
    isFree[page] = true;
  }
  for (PageId page = 0; page < numPages(); ++page) {
    if (isFree[page] != (refCounts_[page] == 0))
      return Status::error(ErrorCode::Internal,
                           "page " + str(page) + " has " +
                               str(refCounts_[page]) + " references but is " +
                               (isFree[page] ? "" : "not ") + "free");
  }
  std::vector<int32_t> sequenceRefs(numPages(), 0);
  for (const auto &[id, sequence] : sequences_)
    for (PageId page : sequence.pages)
      ++sequenceRefs[page];
  for (PageId page = 0; page < numPages(); ++page)
    if (sequenceRefs[page] > refCounts_[page])
      return Status::error(ErrorCode::Internal,
                           "page " + str(page) + " is held by " +
                               str(sequenceRefs[page]) + " sequences but has " +
                               str(refCounts_[page]) + " references");
  return Status();
}

} // namespace attnc
