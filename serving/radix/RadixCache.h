//===- RadixCache.h - a radix tree of cached prefixes -----------*- C++ -*-===//
//
// A radix tree over token ids whose edges are whole pages of the KV pool,
// one tree per cache namespace (requests of different namespaces, e.g. LoRA
// adapters, never share KV):
// a node's key is a run of tokens (a multiple of the page size) and its
// value the pages holding their keys and values. The tree holds one
// reference to each of its pages.
//
// Requests lock the node their prefix ends at; a lock pins the whole path
// to the root (reference counts up the path) so that eviction, which frees
// pages from the tail of the least-recently-used unlocked leaf, never takes
// a page in use.
// Sizes are in tokens: `evictable` counts unlocked nodes, `protected`
// locked ones.
//
// Each cached page is also known by the hash of the whole prefix it ends
// (pagePrefixHashes), so that a scheduler can tell how many pages of a
// prompt are cached without walking the tree, and follow what enters and
// leaves the cache (the change journal) instead of matching its queue
// again. The unlocked leaves are kept in LRU order as they change, so that
// eviction does not search the tree.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_RADIX_RADIXCACHE_H
#define ATTNC_RUNTIME_RADIX_RADIXCACHE_H

#include "kv/PagedKVPool.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnc {

using Token = int32_t;

/// Cached KV is shared only within a namespace: a LoRA adapter's id, or a
/// tenant's salt. Namespace 0 is the default.
using CacheNamespace = uint64_t;

/// A hash of each of the first `pages` page-aligned prefixes of `tokens`
/// (all whole pages when `pages` is negative) in namespace `space`: equal
/// prefixes of one namespace, equal hashes.
std::vector<uint64_t> pagePrefixHashes(const std::vector<Token> &tokens,
                                       int64_t pageSize, int64_t pages = -1,
                                       CacheNamespace space = 0);

/// The prefix hash namespace `space` starts from, and the hash of a prefix
/// continued by one more page of tokens: pagePrefixHashes one page at a
/// time, for a sequence that grows.
uint64_t emptyPrefixHash(CacheNamespace space);
uint64_t continuePrefixHash(uint64_t prefixHash, const Token *page,
                            int64_t pageSize);

class RadixCache {
public:
  struct Node {
    std::vector<Token> key;
    std::vector<PageId> pages;
    /// pagePrefixHashes of the tokens from the root to the end of each page
    /// (a root: the hash its namespace starts from).
    std::vector<uint64_t> hashes;
    Node *parent = nullptr;
    std::map<std::vector<Token>, std::unique_ptr<Node>> children;
    int64_t lockRef = 0;
    uint64_t lastAccess = 0;
    /// Creation order: ties of lastAccess evict deterministically.
    uint64_t serial = 0;
  };

  /// A page entering (added) or leaving the cache, by its prefix hash.
  struct PageChange {
    uint64_t hash;
    bool added;
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
  Match matchPrefix(const std::vector<Token> &tokens, CacheNamespace space = 0);
  /// The same over tokens[0 .. count), read only as far as the tree
  /// matches: a caller's array of any length costs the match, not a copy.
  Match matchPrefix(const Token *tokens, size_t count,
                    CacheNamespace space = 0);
  /// The tokens matchPrefix would match, without splitting or touching
  /// anything: what an insert of `tokens` would find cached already.
  int64_t matchLength(const Token *tokens, size_t count,
                      CacheNamespace space = 0) const;

  /// Inserts the first `pages.size()` pages of `tokens`. Returns how many
  /// leading tokens were already cached: the tree takes over the caller's
  /// reference to every page after those, and the caller keeps (and must
  /// eventually release) its references to the pages before them.
  StatusOr<int64_t> insert(const std::vector<Token> &tokens,
                           const std::vector<PageId> &pages,
                           CacheNamespace space = 0);

  void lock(Node *node);
  Status unlock(Node *node);

  /// Frees the pages covering `tokens` tokens (ceil(tokens / pageSize)
  /// pages), or every evictable page when there are fewer: the last pages
  /// of the least-recently-used unlocked leaf first. A leaf longer than
  /// what is still wanted is shortened from its tail (it keeps its place
  /// in the LRU order, and what remains of it still matches); a leaf given
  /// up whole leaves the tree, and its parent may become a leaf. Returns
  /// the tokens evicted: a whole number of pages, at most one page more
  /// than asked.
  int64_t evict(int64_t tokens);

  /// How many leading pages of a sequence whose page prefix hashes are
  /// `hashes` are cached, at most `limit`: what matchPrefix would match,
  /// without walking or changing the tree.
  int64_t cachedPages(const std::vector<uint64_t> &hashes, int64_t limit) const;
  /// The node holding the page whose prefix hash is `hash`, or null.
  const Node *nodeOfPage(uint64_t hash) const;
  /// What matchPrefix does to the tree for the cached prefix ending with
  /// the page whose prefix hash is `hash`: splits its node after that page
  /// and makes the path the most recently used.
  void touchPrefix(uint64_t hash);

  /// Starts recording every page that enters or leaves the cache; each
  /// call of takeChanges returns (and forgets) those since the last. One
  /// reader (the scheduler) takes them.
  void recordChanges() { recording_ = true; }
  void stopRecording() {
    recording_ = false;
    changes_.clear();
  }
  std::vector<PageChange> takeChanges() { return std::move(changes_); }

  int64_t evictableSize() const { return evictable_; }
  int64_t protectedSize() const { return protected_; }
  int64_t totalSize() const { return evictable_ + protected_; }
  /// The root of namespace 0's tree, and of every namespace's.
  const Node *root() const { return roots_.at(0).get(); }
  std::vector<const Node *> roots() const;
  /// The root of namespace `space`'s tree, or null when nothing made one.
  const Node *findRoot(CacheNamespace space) const {
    auto it = roots_.find(space);
    return it == roots_.end() ? nullptr : it->second.get();
  }

  /// Recomputes sizes and lock counts from the tree and checks them, the
  /// keys, and the pages' reference counts in the pool.
  Status checkInvariants() const;

private:
  Node *splitNode(Node *node, int64_t keepPages);
  bool isEvictableLeaf(const Node *node) const {
    return node->parent && node->children.empty() && node->lockRef == 0;
  }
  /// Sets a node's last access, keeping the LRU order of leaves.
  void touch(Node *node, uint64_t now);
  void addPages(Node *node);
  void removePages(const Node *node);
  std::vector<Token> firstPage(const std::vector<Token> &tokens,
                               size_t offset) const;
  std::vector<Token> firstPage(const Token *tokens) const {
    return std::vector<Token>(tokens, tokens + pageSize_);
  }
  void checkInDebug() const;

  PagedKVPool &pool_;
  int64_t pageSize_;
  /// A namespace's root, made on first use; roots stand locked.
  Node *rootOf(CacheNamespace space);
  std::map<CacheNamespace, std::unique_ptr<Node>> roots_;
  int64_t evictable_ = 0;
  int64_t protected_ = 0;
  uint64_t clock_ = 0;
  uint64_t serials_ = 0;
  std::unordered_map<uint64_t, Node *> byHash_;
  /// Unlocked leaves, least recently used first.
  std::set<std::tuple<uint64_t, uint64_t, Node *>> leaves_;
  bool recording_ = false;
  std::vector<PageChange> changes_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_RADIX_RADIXCACHE_H
