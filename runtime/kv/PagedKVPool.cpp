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
  if (config.memory == PoolMemory::Device)
    return Status::error(ErrorCode::Unsupported,
                         "a device-memory pool needs the CUDA runtime "
                         "(runtime/cuda), which this build does not have yet");

  // Page storage first, then the per-page bookkeeping: a pool too large to
  // hold fails before anything big was touched. Within the limits above the
  // size is at most 2^31 pages x 2 x 2^30 bytes, far from overflowing.
  int64_t pageBytes = config.pageSize * config.numKVHeads * config.headDim *
                      config.elementBytes;
  std::unique_ptr<std::byte[]> storage;
  if (config.memory == PoolMemory::Host) {
    int64_t bytes = config.numPages * 2 * pageBytes;
    storage.reset(new (std::nothrow) std::byte[bytes]);
    if (!storage)
      return Status::error(ErrorCode::OutOfMemory,
                           "cannot allocate " + str(bytes) +
                               " bytes of host memory for the KV pool");
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
  return pool;
}

PagedKVPool::PagedKVPool(const PoolConfig &config)
    : config_(config), refCounts_(config.numPages, 0) {
  free_.reserve(config.numPages);
  // Lowest page ids first: pages are handed out in order on a fresh pool.
  for (int64_t page = config.numPages - 1; page >= 0; --page)
    free_.push_back(static_cast<PageId>(page));
}

int64_t PagedKVPool::pageBytes() const {
  return config_.pageSize * config_.numKVHeads * config_.headDim *
         config_.elementBytes;
}

int64_t PagedKVPool::usedPages(const Sequence &sequence) const {
  return (sequence.length + config_.pageSize - 1) / config_.pageSize;
}

int64_t PagedKVPool::slotOffset(int64_t slot, int64_t head) const {
  int64_t row = config_.order == PageOrder::NHD
                    ? slot * config_.numKVHeads + head
                    : head * config_.pageSize + slot;
  return row * config_.headDim * config_.elementBytes;
}

std::byte *PagedKVPool::pageData(PageId page, int which) const {
  return storage_.get() + (int64_t(page) * 2 + which) * pageBytes();
}

const std::byte *PagedKVPool::keyAt(PageId page, int64_t slot,
                                    int64_t head) const {
  return storage_ ? pageData(page, 0) + slotOffset(slot, head) : nullptr;
}

const std::byte *PagedKVPool::valueAt(PageId page, int64_t slot,
                                      int64_t head) const {
  return storage_ ? pageData(page, 1) + slotOffset(slot, head) : nullptr;
}

StatusOr<std::vector<PageId>> PagedKVPool::allocate(int64_t count) {
  if (count < 0)
    return invalid("cannot allocate " + str(count) + " pages");
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

void PagedKVPool::copyPage(PageId from, PageId to, int64_t tokens) {
  if (!storage_)
    return;
  for (int which = 0; which < 2; ++which)
    for (int64_t slot = 0; slot < tokens; ++slot)
      for (int64_t head = 0; head < config_.numKVHeads; ++head)
        std::memcpy(pageData(to, which) + slotOffset(slot, head),
                    pageData(from, which) + slotOffset(slot, head),
                    config_.headDim * config_.elementBytes);
}

Status PagedKVPool::reserve(SequenceId id, int64_t numTokens) {
  StatusOr<Sequence *> found = lookup(id);
  if (!found.ok())
    return found.status();
  Sequence &sequence = **found;
  if (numTokens < 0)
    return invalid("cannot reserve " + str(numTokens) + " tokens");
  int64_t pageSize = config_.pageSize;
  int64_t used = sequence.length % pageSize;
  bool copyLast =
      used != 0 && numTokens > 0 && refCounts_[sequence.pages.back()] > 1;
  int64_t capacity =
      static_cast<int64_t>(sequence.pages.size()) * pageSize - sequence.length;
  int64_t newPages =
      std::max<int64_t>(0, (numTokens - capacity + pageSize - 1) / pageSize);
  StatusOr<std::vector<PageId>> pages = allocate(newPages + (copyLast ? 1 : 0));
  if (!pages.ok())
    return pages.status();
  if (copyLast) {
    PageId shared = sequence.pages.back();
    PageId own = pages->front();
    copyPage(shared, own, used);
    --refCounts_[shared]; // still referenced by the other sequence
    sequence.pages.back() = own;
    pages->erase(pages->begin());
  }
  sequence.pages.insert(sequence.pages.end(), pages->begin(), pages->end());
  return Status();
}

void PagedKVPool::writeTokens(Sequence &sequence, const std::byte *keys,
                              const std::byte *values, int64_t numTokens) {
  int64_t rowBytes = config_.headDim * config_.elementBytes;
  for (int64_t t = 0; t < numTokens; ++t) {
    int64_t position = sequence.length + t;
    PageId page = sequence.pages[position / config_.pageSize];
    int64_t slot = position % config_.pageSize;
    for (int64_t head = 0; head < config_.numKVHeads; ++head) {
      int64_t source = (t * config_.numKVHeads + head) * rowBytes;
      std::memcpy(pageData(page, 0) + slotOffset(slot, head), keys + source,
                  rowBytes);
      std::memcpy(pageData(page, 1) + slotOffset(slot, head), values + source,
                  rowBytes);
    }
  }
}

Status PagedKVPool::append(SequenceId id, const void *keys, const void *values,
                           int64_t numTokens) {
  if (storage_ && numTokens > 0 && (!keys || !values))
    return invalid("append needs key and value data");
  if (Status status = reserve(id, numTokens); !status.ok())
    return status;
  Sequence &sequence = sequences_.at(id);
  if (storage_)
    writeTokens(sequence, static_cast<const std::byte *>(keys),
                static_cast<const std::byte *>(values), numTokens);
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
