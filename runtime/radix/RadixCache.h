//===- RadixCache.h - a radix tree of cached prefixes -----------*- C++ -*-===//
//
// A radix tree over token ids whose edges are whole pages of the KV pool:
// a node's key is a run of tokens (a multiple of the page size) and its
// value the pages holding their keys and values. The tree holds one
// reference to each of its pages.
//
// Requests lock the node their prefix ends at; a lock pins the whole path
// to the root (reference counts up the path) so that eviction, which frees
// the least-recently-used unlocked leaves first, never takes a page in use.
// Sizes are in tokens: `evictable` counts unlocked nodes, `protected`
// locked ones.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_RADIX_RADIXCACHE_H
#define ATTNC_RUNTIME_RADIX_RADIXCACHE_H

#include "kv/PagedKVPool.h"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace attnc {

using Token = int32_t;

class RadixCache {
public:
  struct Node {
    std::vector<Token> key;
    std::vector<PageId> pages;
    Node *parent = nullptr;
    std::map<std::vector<Token>, std::unique_ptr<Node>> children;
    int64_t lockRef = 0;
    uint64_t lastAccess = 0;
  };

  struct Match {
    /// Pages of the matched prefix, root first.
    std::vector<PageId> pages;
    /// The node the match ends at (the root when nothing matched).
    Node *node = nullptr;
    int64_t tokens = 0;
  };

  explicit RadixCache(PagedKVPool &pool);
  ~RadixCache();
  RadixCache(const RadixCache &) = delete;
  RadixCache &operator=(const RadixCache &) = delete;

  int64_t pageSize() const { return pageSize_; }

  /// The longest cached prefix of `tokens` in whole pages. A match that
  /// ends inside a node splits it, so that `node` covers exactly the match.
  Match matchPrefix(const std::vector<Token> &tokens);

  /// Inserts the first `pages.size()` pages of `tokens`. Returns how many
  /// leading tokens were already cached: the tree takes over the caller's
  /// reference to every page after those, and the caller keeps (and must
  /// eventually release) its references to the pages before them.
  StatusOr<int64_t> insert(const std::vector<Token> &tokens,
                           const std::vector<PageId> &pages);

  void lock(Node *node);
  Status unlock(Node *node);

  /// Frees least-recently-used unlocked leaves until at least `tokens`
  /// tokens are evicted or nothing evictable remains. Returns the tokens
  /// evicted.
  int64_t evict(int64_t tokens);

  int64_t evictableSize() const { return evictable_; }
  int64_t protectedSize() const { return protected_; }
  int64_t totalSize() const { return evictable_ + protected_; }
  const Node *root() const { return root_.get(); }

  /// Recomputes sizes and lock counts from the tree and checks them, the
  /// keys, and the pages' reference counts in the pool.
  Status checkInvariants() const;

private:
  Node *splitNode(Node *node, int64_t keepPages);
  std::vector<Token> firstPage(const std::vector<Token> &tokens,
                               size_t offset) const;
  void checkInDebug() const;

  PagedKVPool &pool_;
  int64_t pageSize_;
  std::unique_ptr<Node> root_;
  int64_t evictable_ = 0;
  int64_t protected_ = 0;
  uint64_t clock_ = 0;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_RADIX_RADIXCACHE_H
