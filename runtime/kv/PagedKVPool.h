//===- PagedKVPool.h - a paged key/value cache ------------------*- C++ -*-===//
//
// One allocation holds every page of keys and values, laid out
// [num_pages][2 (K, V)][page] where a page is [page_size][heads][dim] (NHD)
// or [heads][page_size][dim] (HND). Pages are reference counted: sequences
// forked for parallel sampling or beam search share their pages, and the
// radix prefix cache holds references of its own. A full page is immutable
// once written; the partial last page of a shared sequence is copied before
// it is written (copy-on-write).
//
// Every operation either succeeds completely or returns an error and changes
// nothing.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_KV_PAGEDKVPOOL_H
#define ATTNC_RUNTIME_KV_PAGEDKVPOOL_H

#include "attnc/device/abi.h"
#include "support/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace attnc {

using PageId = int32_t;
using SequenceId = int64_t;

enum class PoolMemory {
  /// Pages in host memory: tests and CPU-side tools.
  Host,
  /// Pages in device memory, written by the append kernel (needs the CUDA
  /// runtime of runtime/cuda).
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
  /// [numTokens][heads][dim] elements. Allocates pages as needed and copies
  /// a shared partial last page first.
  Status append(SequenceId sequence, const void *keys, const void *values,
                int64_t numTokens);
  /// Makes room for `numTokens` more tokens without writing them.
  Status reserve(SequenceId sequence, int64_t numTokens);
  /// A new sequence sharing every page of `sequence`.
  StatusOr<SequenceId> fork(SequenceId sequence);
  Status freeSequence(SequenceId sequence);

  StatusOr<int64_t> sequenceLength(SequenceId sequence) const;
  StatusOr<std::vector<PageId>> sequencePages(SequenceId sequence) const;
  StatusOr<PageTable> pageTable(const std::vector<SequenceId> &batch) const;

  //===--------------------------------------------------------------------===//
  // Data (host memory)
  //===--------------------------------------------------------------------===//

  /// Address of one token's head vector in a page; nullptr without host
  /// storage.
  const std::byte *keyAt(PageId page, int64_t slot, int64_t head) const;
  const std::byte *valueAt(PageId page, int64_t slot, int64_t head) const;
  const std::byte *data() const { return storage_.get(); }

  /// Checks that every page is either free (no references, on the free list
  /// once) or in use, and that sequences reference only pages in use.
  Status checkInvariants() const;

private:
  struct Sequence {
    std::vector<PageId> pages;
    int64_t length = 0;
  };

  explicit PagedKVPool(const PoolConfig &config);
  int64_t pageBytes() const;
  /// Pages holding at least one of the sequence's tokens.
  int64_t usedPages(const Sequence &sequence) const;
  int64_t slotOffset(int64_t slot, int64_t head) const;
  std::byte *pageData(PageId page, int which) const;
  Status checkPagesInUse(const std::vector<PageId> &pages) const;
  StatusOr<Sequence *> lookup(SequenceId sequence);
  StatusOr<const Sequence *> lookup(SequenceId sequence) const;
  void copyPage(PageId from, PageId to, int64_t tokens);
  void writeTokens(Sequence &sequence, const std::byte *keys,
                   const std::byte *values, int64_t numTokens);

  PoolConfig config_;
  std::unique_ptr<std::byte[]> storage_;
  std::vector<int32_t> refCounts_;
  std::vector<PageId> free_;
  std::unordered_map<SequenceId, Sequence> sequences_;
  SequenceId nextSequence_ = 0;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_KV_PAGEDKVPOOL_H
