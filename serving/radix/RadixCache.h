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
// A host tier (kv/HostTier.h) may be attached: eviction then moves the pages
// it takes to host pages instead of dropping them, and the nodes holding
// them stay in the tree, host-resident, until the tier needs their room
// (its least-recently-used host-resident leaves go first, by page from the
// tail) or a hit loads them back (loadBack). Residency is one per node and
// follows the paths: below a host-resident node everything is host-resident,
// so that a prefix is a device-resident part and a host-resident
// continuation. Everything existing callers see counts the device only:
// matchPrefix, matchLength, cachedPages, nodeOfPage, touchPrefix, the sizes
// and the change journal (a page offloaded leaves the cache, one loaded back
// enters it), whether or not a tier is attached; matchThroughHost and
// hostCachedPages see the continuation. A lock on a host-resident node
// (matchThroughHost's hostNode; loadBack locks what it loads) keeps it in
// the tier; an unlocked device-resident node whose children are all
// host-resident is a leaf for eviction.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_RADIX_RADIXCACHE_H
#define ATTNC_RUNTIME_RADIX_RADIXCACHE_H

#include "kv/HostTier.h"
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
    /// A host-resident node's pages in the host tier, one per page of its
    /// key, and then `pages` is empty; empty for a device-resident node.
    std::vector<HostPageId> hostPages;
    /// pagePrefixHashes of the tokens from the root to the end of each page
    /// (a root: the hash its namespace starts from).
    std::vector<uint64_t> hashes;
    Node *parent = nullptr;
    std::map<std::vector<Token>, std::unique_ptr<Node>> children;
    /// Children that are device-resident: with none, an unlocked
    /// device-resident node is a leaf for eviction.
    int64_t deviceChildren = 0;
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
    /// matchThroughHost's host-resident continuation after `tokens`: its
    /// tokens and the node it ends at (null when there is none). Plain
    /// matches leave them empty.
    int64_t hostTokens = 0;
    Node *hostNode = nullptr;
  };

  explicit RadixCache(PagedKVPool &pool);
  /// A cache with `tier` attached (see above), which must outlive it:
  /// InvalidArgument when the tier is another pool's, or has pages in use
  /// (the cache must be its only user).
  static StatusOr<std::unique_ptr<RadixCache>> withHostTier(PagedKVPool &pool,
                                                            HostTier &tier);
  ~RadixCache();
  RadixCache(const RadixCache &) = delete;
  RadixCache &operator=(const RadixCache &) = delete;

  int64_t pageSize() const { return pageSize_; }
  /// The attached host tier, or null.
  const HostTier *hostTier() const { return tier_; }

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
  /// matchPrefix, and past the device-resident prefix its host-resident
  /// continuation (hostTokens, hostNode), split and touched the same way:
  /// what loadBack can make device-resident. Without a tier, matchPrefix.
  Match matchThroughHost(const Token *tokens, size_t count,
                         CacheNamespace space = 0);

  /// Makes `match`'s host-resident continuation (matchThroughHost's, with
  /// nothing changed in the cache since) device-resident: allocates its
  /// device pages, evicting as needed (which may offload other pages), and
  /// loads each page into one of them, on the pool's stream. On success
  /// `match` covers the whole prefix (pages, node, tokens; no continuation
  /// left) and the result lists the loads, in order; the continuation's
  /// nodes become device-resident, as locked as they were and touched as
  /// the match did. A match without a continuation loads nothing. All or
  /// nothing for the continuation: InvalidArgument when no tier is attached
  /// or `match` no longer describes the tree, OutOfMemory when the pool
  /// cannot give the pages even after evicting everything unlocked (nothing
  /// evicted then), and an allocation or copy failure leaves the
  /// continuation host-resident (what eviction moved before stays moved).
  StatusOr<std::vector<PageTransfer>> loadBack(Match &match);
  /// How many pages of a sequence whose page prefix hashes are `hashes`
  /// continue its device-resident prefix (cachedPages) in the host tier, up
  /// to page `limit`: what matchThroughHost finds past matchPrefix, without
  /// walking or changing the tree.
  int64_t hostCachedPages(const std::vector<uint64_t> &hashes,
                          int64_t limit) const;

  /// Every transfer between the tiers since the last call (offloads of the
  /// pages eviction moved, loads of loadBack), in the order they were
  /// issued, and forgets them: what an engine whose caches are its own
  /// applies, in that order, before the next step's writes.
  ///
  /// The journal has one reader, who must take it: a scheduler serving the
  /// cache at each step (EngineBatch::pageTransfers), else the cache's
  /// direct user, who applies what it takes (caches of its own) or drops it
  /// (an engine over the pool, which the tier moved already). Nothing is
  /// dropped for them: an offload nobody replayed leaves a host page that a
  /// later load back would read unwritten in an engine's own caches, so
  /// what nobody took when a scheduler starts serving goes to its first
  /// step. The journal holds one entry per page moved since the last take.
  std::vector<PageTransfer> takeTransfers() {
    return std::exchange(transfers_, {});
  }
  /// How many transfers takeTransfers would return.
  size_t numTransfers() const { return transfers_.size(); }

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
  /// than asked. With a tier the pages taken go to it as far as it has (or
  /// can make) room, and their nodes stay as host-resident (see above).
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
  /// Tokens of host-resident nodes.
  int64_t hostSize() const { return hostSize_; }
  /// The root of namespace 0's tree, and of every namespace's.
  const Node *root() const { return roots_.at(0).get(); }
  std::vector<const Node *> roots() const;
  /// The root of namespace `space`'s tree, or null when nothing made one.
  const Node *findRoot(CacheNamespace space) const {
    auto it = roots_.find(space);
    return it == roots_.end() ? nullptr : it->second.get();
  }

  /// Recomputes sizes and lock counts from the tree and checks them, the
  /// keys, the pages' reference counts in the pool, and with a tier the
  /// residency of each path and the host pages in use.
  Status checkInvariants() const;

private:
  Node *splitNode(Node *node, int64_t keepPages);
  static bool onDevice(const Node *node) { return node->hostPages.empty(); }
  int64_t pageCount(const Node *node) const {
    return static_cast<int64_t>(node->key.size()) / pageSize_;
  }
  bool isEvictableLeaf(const Node *node) const {
    return node->parent && node->deviceChildren == 0 && node->lockRef == 0 &&
           onDevice(node);
  }
  bool isDroppableHostLeaf(const Node *node) const {
    return node->children.empty() && node->lockRef == 0 && !onDevice(node);
  }
  /// Takes a node out of the LRU order it is in (device or host leaves),
  /// and files it where it belongs: around a change of its lock, residency
  /// or children.
  void unlist(Node *node);
  void relist(Node *node);
  Match match(const Token *tokens, size_t count, CacheNamespace space,
              bool throughHost);
  /// Frees the last `count` pages of a device leaf, fewer than it has.
  void dropTail(Node *leaf, int64_t count);
  /// Drops the least-recently-used unlocked host-resident leaves' pages,
  /// from their tails, until the tier has `count` pages free or nothing
  /// unlocked is left there; returns the free pages, at most `count`.
  int64_t makeHostRoom(int64_t count);
  /// Moves the last `count` pages of a device leaf to free host pages;
  /// false, with nothing changed, when the tier refuses.
  bool offloadTail(Node *leaf, int64_t count);
  /// The node a page of `hash` belongs to when it is device-resident.
  Node *deviceNodeOfPage(uint64_t hash) const;
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
  /// Releases the host pages of the subtrees below a device node (all
  /// host-resident) and takes them out of the tree: before the node's own
  /// pages, which they continue, are dropped.
  void discardHostChildren(Node *node);

  PagedKVPool &pool_;
  HostTier *tier_ = nullptr;
  int64_t pageSize_;
  /// A namespace's root, made on first use; roots stand locked.
  Node *rootOf(CacheNamespace space);
  std::map<CacheNamespace, std::unique_ptr<Node>> roots_;
  int64_t evictable_ = 0;
  int64_t protected_ = 0;
  int64_t hostSize_ = 0;
  uint64_t clock_ = 0;
  uint64_t serials_ = 0;
  /// Every page of the tree by its prefix hash, host-resident ones too.
  std::unordered_map<uint64_t, Node *> byHash_;
  /// Unlocked leaves, least recently used first.
  std::set<std::tuple<uint64_t, uint64_t, Node *>> leaves_;
  /// Unlocked host-resident leaves, least recently used first.
  std::set<std::tuple<uint64_t, uint64_t, Node *>> hostLeaves_;
  /// Transfers issued since takeTransfers last took them.
  std::vector<PageTransfer> transfers_;
  bool recording_ = false;
  std::vector<PageChange> changes_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_RADIX_RADIXCACHE_H
