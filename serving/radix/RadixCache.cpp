//===- RadixCache.cpp - a radix tree of cached prefixes -------------------===//

#include "radix/RadixCache.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <unordered_map>

namespace attnc {

namespace {
constexpr uint64_t kEmptyPrefixHash = 0xcbf29ce484222325ull; // FNV-1a basis

} // namespace

/// Namespace 0 starts from the FNV-1a basis itself.
uint64_t emptyPrefixHash(CacheNamespace space) {
  if (space == 0)
    return kEmptyPrefixHash;
  uint64_t hash = kEmptyPrefixHash ^ 0x9E3779B97F4A7C15ull;
  for (int shift = 0; shift < 64; shift += 8)
    hash = (hash ^ ((space >> shift) & 0xff)) * 0x100000001b3ull;
  return hash;
}

uint64_t continuePrefixHash(uint64_t prefixHash, const Token *page,
                            int64_t pageSize) {
  for (int64_t i = 0; i < pageSize; ++i)
    prefixHash =
        (prefixHash ^ static_cast<uint32_t>(page[i])) * 0x100000001b3ull;
  return prefixHash;
}

std::vector<uint64_t> pagePrefixHashes(const std::vector<Token> &tokens,
                                       int64_t pageSize, int64_t pages,
                                       CacheNamespace space) {
  int64_t whole = static_cast<int64_t>(tokens.size()) / pageSize;
  if (pages < 0 || pages > whole)
    pages = whole;
  std::vector<uint64_t> hashes;
  uint64_t hash = emptyPrefixHash(space);
  for (int64_t page = 0; page < pages; ++page) {
    hash = continuePrefixHash(hash, tokens.data() + page * pageSize, pageSize);
    hashes.push_back(hash);
  }
  return hashes;
}

RadixCache::RadixCache(PagedKVPool &pool)
    : pool_(pool), pageSize_(pool.pageSize()) {
  rootOf(0);
}

StatusOr<std::unique_ptr<RadixCache>>
RadixCache::withHostTier(PagedKVPool &pool, HostTier &tier) {
  if (&tier.pool() != &pool)
    return Status::error(ErrorCode::InvalidArgument,
                         "the host tier belongs to another pool");
  if (tier.numUsedPages() != 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "the host tier has " +
                             std::to_string(tier.numUsedPages()) +
                             " pages in use: a cache must be its only user");
  auto cache = std::make_unique<RadixCache>(pool);
  cache->tier_ = &tier;
  return cache;
}

RadixCache::Node *RadixCache::rootOf(CacheNamespace space) {
  std::unique_ptr<Node> &root = roots_[space];
  if (!root) {
    root = std::make_unique<Node>();
    // A root is never evicted: it stands locked.
    root->lockRef = 1;
    root->hashes.push_back(emptyPrefixHash(space));
  }
  return root.get();
}

std::vector<const RadixCache::Node *> RadixCache::roots() const {
  std::vector<const Node *> all;
  for (const auto &[space, root] : roots_)
    all.push_back(root.get());
  return all;
}

RadixCache::~RadixCache() {
  // Return the tree's page references to the pool.
  std::vector<Node *> stack;
  for (auto &[space, root] : roots_)
    stack.push_back(root.get());
  std::vector<PageId> pages;
  std::vector<HostPageId> hostPages;
  while (!stack.empty()) {
    Node *node = stack.back();
    stack.pop_back();
    pages.insert(pages.end(), node->pages.begin(), node->pages.end());
    hostPages.insert(hostPages.end(), node->hostPages.begin(),
                     node->hostPages.end());
    for (auto &[key, child] : node->children)
      stack.push_back(child.get());
  }
  (void)pool_.release(pages);
  if (tier_)
    (void)tier_->release(hostPages);
}

std::vector<Token> RadixCache::firstPage(const std::vector<Token> &tokens,
                                         size_t offset) const {
  return std::vector<Token>(tokens.begin() + offset,
                            tokens.begin() + offset + pageSize_);
}

void RadixCache::checkInDebug() const {
#ifndef NDEBUG
  Status status = checkInvariants();
  assert(status.ok() && "radix cache invariant broken");
  (void)status;
#endif
}

RadixCache::Node *RadixCache::splitNode(Node *node, int64_t keepPages) {
  // `node` keeps its identity as the lower half so that handles to it (and
  // its children) stay valid; a new upper node takes the first pages.
  int64_t keepTokens = keepPages * pageSize_;
  auto upper = std::make_unique<Node>();
  upper->key.assign(node->key.begin(), node->key.begin() + keepTokens);
  if (onDevice(node))
    upper->pages.assign(node->pages.begin(), node->pages.begin() + keepPages);
  else
    upper->hostPages.assign(node->hostPages.begin(),
                            node->hostPages.begin() + keepPages);
  upper->hashes.assign(node->hashes.begin(), node->hashes.begin() + keepPages);
  upper->parent = node->parent;
  upper->deviceChildren = onDevice(node) ? 1 : 0;
  upper->lockRef = node->lockRef;
  upper->lastAccess = node->lastAccess;
  upper->serial = ++serials_;
  for (uint64_t hash : upper->hashes)
    byHash_[hash] = upper.get();

  node->key.erase(node->key.begin(), node->key.begin() + keepTokens);
  if (onDevice(node))
    node->pages.erase(node->pages.begin(), node->pages.begin() + keepPages);
  else
    node->hostPages.erase(node->hostPages.begin(),
                          node->hostPages.begin() + keepPages);
  node->hashes.erase(node->hashes.begin(), node->hashes.begin() + keepPages);

  Node *parent = node->parent;
  std::unique_ptr<Node> &slot = parent->children.at(firstPage(upper->key, 0));
  std::unique_ptr<Node> lower = std::move(slot);
  Node *upperRaw = upper.get();
  lower->parent = upperRaw;
  upperRaw->children.emplace(firstPage(lower->key, 0), std::move(lower));
  slot = std::move(upper);
  return upperRaw;
}

RadixCache::Match RadixCache::matchPrefix(const std::vector<Token> &tokens,
                                          CacheNamespace space) {
  return matchPrefix(tokens.data(), tokens.size(), space);
}

int64_t RadixCache::matchLength(const Token *tokens, size_t count,
                                CacheNamespace space) const {
  auto root = roots_.find(space);
  if (root == roots_.end())
    return 0;
  const Node *node = root->second.get();
  size_t offset = 0;
  while (offset + pageSize_ <= count) {
    auto it = node->children.find(firstPage(tokens + offset));
    if (it == node->children.end())
      break;
    const Node *child = it->second.get();
    if (!onDevice(child))
      break;
    size_t pages = 1, childPages = child->pages.size();
    while (pages < childPages && offset + (pages + 1) * pageSize_ <= count &&
           std::equal(child->key.begin() + pages * pageSize_,
                      child->key.begin() + (pages + 1) * pageSize_,
                      tokens + offset + pages * pageSize_))
      ++pages;
    offset += pages * pageSize_;
    if (pages < childPages)
      break;
    node = child;
  }
  return static_cast<int64_t>(offset);
}

RadixCache::Match RadixCache::matchPrefix(const Token *tokens, size_t count,
                                          CacheNamespace space) {
  return match(tokens, count, space, /*throughHost=*/false);
}

RadixCache::Match RadixCache::matchThroughHost(const Token *tokens,
                                               size_t count,
                                               CacheNamespace space) {
  return match(tokens, count, space, /*throughHost=*/true);
}

RadixCache::Match RadixCache::match(const Token *tokens, size_t count,
                                    CacheNamespace space, bool throughHost) {
  Match match;
  // A lookup does not make a namespace: one with nothing cached matches
  // nothing, at the default root (whose lock, like every root's, is a no-op).
  auto root = roots_.find(space);
  Node *node = (root != roots_.end() ? root : roots_.find(0))->second.get();
  if (root == roots_.end()) {
    match.node = node;
    return match;
  }
  uint64_t now = ++clock_;
  touch(node, now);
  size_t offset = 0;
  // Where the device-resident prefix ends, once the walk goes past it.
  Node *deviceEnd = nullptr;
  while (offset + pageSize_ <= count) {
    auto it = node->children.find(firstPage(tokens + offset));
    if (it == node->children.end())
      break;
    Node *child = it->second.get();
    if (!deviceEnd && !onDevice(child)) {
      if (!throughHost)
        break;
      deviceEnd = node;
      match.tokens = static_cast<int64_t>(offset);
    }
    int64_t pages = 1;
    int64_t childPages = pageCount(child);
    while (pages < childPages && offset + (pages + 1) * pageSize_ <= count &&
           std::equal(child->key.begin() + pages * pageSize_,
                      child->key.begin() + (pages + 1) * pageSize_,
                      tokens + offset + pages * pageSize_))
      ++pages;
    if (pages < childPages)
      child = splitNode(child, pages);
    touch(child, now);
    match.pages.insert(match.pages.end(), child->pages.begin(),
                       child->pages.end());
    offset += pages * pageSize_;
    node = child;
    if (pages < childPages)
      break;
  }
  if (deviceEnd) {
    match.node = deviceEnd;
    match.hostNode = node;
    match.hostTokens = static_cast<int64_t>(offset) - match.tokens;
  } else {
    match.node = node;
    match.tokens = static_cast<int64_t>(offset);
  }
  checkInDebug();
  return match;
}

StatusOr<int64_t> RadixCache::insert(const std::vector<Token> &tokens,
                                     const std::vector<PageId> &pages,
                                     CacheNamespace space) {
  int64_t numPages = static_cast<int64_t>(pages.size());
  if (numPages * pageSize_ > static_cast<int64_t>(tokens.size()))
    return Status::error(ErrorCode::InvalidArgument,
                         std::to_string(numPages) + " pages need " +
                             std::to_string(numPages * pageSize_) +
                             " tokens, got " + std::to_string(tokens.size()));
  std::vector<Token> key(tokens.begin(), tokens.begin() + numPages * pageSize_);
  rootOf(space);
  Match match = matchPrefix(key, space);
  Node *parent = match.node;
  size_t offset = static_cast<size_t>(match.tokens);
  // The caller computed the pages of a host-resident continuation again:
  // its nodes take the caller's pages (as a new leaf would) and give their
  // host pages back, so that the path is device-resident as without a tier.
  // Past the matched prefix a child with the key's next page is
  // host-resident: a device-resident one would have matched.
  while (tier_ && offset < key.size()) {
    auto it = parent->children.find(firstPage(key, offset));
    if (it == parent->children.end())
      break;
    Node *child = it->second.get();
    assert(!onDevice(child) && "a device-resident child would have matched");
    int64_t same = 1, childPages = pageCount(child);
    while (same < childPages &&
           offset + size_t(same + 1) * pageSize_ <= key.size() &&
           std::equal(child->key.begin() + same * pageSize_,
                      child->key.begin() + (same + 1) * pageSize_,
                      key.begin() + ptrdiff_t(offset) + same * pageSize_))
      ++same;
    if (same < childPages)
      child = splitNode(child, same);
    unlist(parent);
    unlist(child);
    Status released = tier_->release(child->hostPages);
    assert(released.ok() && "the tree's host pages are in use");
    (void)released;
    child->hostPages.clear();
    auto first = pages.begin() + ptrdiff_t(offset / size_t(pageSize_));
    child->pages.assign(first, first + same);
    ++parent->deviceChildren;
    int64_t size = static_cast<int64_t>(child->key.size());
    hostSize_ -= size;
    (child->lockRef > 0 ? protected_ : evictable_) += size;
    child->lastAccess = clock_; // the match's
    if (recording_)
      for (uint64_t hash : child->hashes)
        changes_.push_back({hash, true});
    relist(child);
    relist(parent);
    offset += size_t(same * pageSize_);
    parent = child;
    if (same < childPages)
      break;
  }
  if (offset < key.size()) {
    auto leaf = std::make_unique<Node>();
    leaf->key.assign(key.begin() + ptrdiff_t(offset), key.end());
    leaf->pages.assign(pages.begin() + ptrdiff_t(offset / size_t(pageSize_)),
                       pages.end());
    uint64_t hash = parent->hashes.back(); // a root's: its namespace
    for (size_t at = 0; at < leaf->key.size(); at += pageSize_) {
      hash = continuePrefixHash(hash, leaf->key.data() + at, pageSize_);
      leaf->hashes.push_back(hash);
    }
    leaf->parent = parent;
    leaf->lastAccess = clock_;
    leaf->serial = ++serials_;
    evictable_ += static_cast<int64_t>(leaf->key.size());
    // The parent is a leaf no more; the new leaf is one, unlocked.
    unlist(parent);
    Node *raw = leaf.get();
    parent->children.emplace(firstPage(leaf->key, 0), std::move(leaf));
    ++parent->deviceChildren;
    addPages(raw);
    leaves_.insert({raw->lastAccess, raw->serial, raw});
  }
  checkInDebug();
  return match.tokens;
}

void RadixCache::lock(Node *node) {
  for (; node->parent; node = node->parent) {
    if (node->lockRef == 0) {
      unlist(node);
      if (onDevice(node)) {
        int64_t size = static_cast<int64_t>(node->key.size());
        evictable_ -= size;
        protected_ += size;
      }
    }
    ++node->lockRef;
  }
  checkInDebug();
}

Status RadixCache::unlock(Node *node) {
  for (Node *check = node; check->parent; check = check->parent)
    if (check->lockRef <= 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "unlock of a node that is not locked");
  for (; node->parent; node = node->parent) {
    if (--node->lockRef == 0) {
      if (onDevice(node)) {
        int64_t size = static_cast<int64_t>(node->key.size());
        evictable_ += size;
        protected_ -= size;
      }
      relist(node);
    }
  }
  checkInDebug();
  return Status();
}

int64_t RadixCache::evict(int64_t tokens) {
  // Whole pages, as few as cover `tokens`, each from the tail of the least
  // recently used unlocked leaf: a leaf longer than what is still wanted
  // gives only its last pages and stays a leaf, in its place in the LRU
  // order (what remains of it is the same prefix, just shorter). With a
  // tier the pages move to host pages while it has room for them (the
  // leaf's device part keeps its place); the deepest of them are dropped
  // when it has room for only some.
  // Rounded up without adding to `tokens`, which may be INT64_MAX.
  int64_t wanted =
      tokens > 0 ? tokens / pageSize_ + (tokens % pageSize_ != 0) : 0;
  int64_t evictedPages = 0;
  while (evictedPages < wanted && !leaves_.empty()) {
    Node *leaf = std::get<2>(*leaves_.begin());
    int64_t take = std::min(pageCount(leaf), wanted - evictedPages);
    if (tier_) {
      int64_t room = makeHostRoom(take);
      if (room > 0 && room < take) {
        dropTail(leaf, take - room);
        evictedPages += take - room;
        take = room;
      }
      if (room > 0 && offloadTail(leaf, take)) {
        evictedPages += take;
        continue;
      }
    }
    int64_t leafPages = pageCount(leaf);
    if (take < leafPages) {
      dropTail(leaf, take);
      evictedPages += take;
      continue;
    }
    discardHostChildren(leaf);
    unlist(leaf);
    Status released = pool_.release(leaf->pages);
    assert(released.ok() && "the tree's pages are in use");
    (void)released;
    removePages(leaf);
    evictedPages += leafPages;
    evictable_ -= leafPages * pageSize_;
    Node *parent = leaf->parent;
    unlist(parent);
    parent->children.erase(firstPage(leaf->key, 0));
    --parent->deviceChildren;
    relist(parent);
  }
  checkInDebug();
  return evictedPages * pageSize_;
}

void RadixCache::dropTail(Node *leaf, int64_t count) {
  discardHostChildren(leaf);
  size_t keep = static_cast<size_t>(pageCount(leaf) - count);
  std::vector<PageId> tail(leaf->pages.begin() + ptrdiff_t(keep),
                           leaf->pages.end());
  Status released = pool_.release(tail);
  assert(released.ok() && "the tree's pages are in use");
  (void)released;
  for (size_t page = keep; page < leaf->hashes.size(); ++page) {
    byHash_.erase(leaf->hashes[page]);
    if (recording_)
      changes_.push_back({leaf->hashes[page], false});
  }
  leaf->pages.resize(keep);
  leaf->hashes.resize(keep);
  leaf->key.resize(keep * size_t(pageSize_));
  evictable_ -= count * pageSize_;
}

void RadixCache::discardHostChildren(Node *node) {
  if (node->children.empty())
    return;
  std::vector<Node *> stack;
  for (auto &[key, child] : node->children)
    stack.push_back(child.get());
  while (!stack.empty()) {
    Node *below = stack.back();
    stack.pop_back();
    unlist(below);
    Status released = tier_->release(below->hostPages);
    assert(released.ok() && "the tree's host pages are in use");
    (void)released;
    for (uint64_t hash : below->hashes)
      byHash_.erase(hash);
    hostSize_ -= static_cast<int64_t>(below->key.size());
    for (auto &[key, child] : below->children)
      stack.push_back(child.get());
  }
  unlist(node);
  node->children.clear();
  relist(node);
}

int64_t RadixCache::makeHostRoom(int64_t count) {
  while (tier_->numFreePages() < count && !hostLeaves_.empty()) {
    Node *leaf = std::get<2>(*hostLeaves_.begin());
    int64_t leafPages = pageCount(leaf);
    int64_t take = std::min(leafPages, count - tier_->numFreePages());
    size_t keep = static_cast<size_t>(leafPages - take);
    std::vector<HostPageId> tail(leaf->hostPages.begin() + ptrdiff_t(keep),
                                 leaf->hostPages.end());
    Status released = tier_->release(tail);
    assert(released.ok() && "the tree's host pages are in use");
    (void)released;
    for (size_t page = keep; page < leaf->hashes.size(); ++page)
      byHash_.erase(leaf->hashes[page]);
    hostSize_ -= take * pageSize_;
    if (keep > 0) {
      // Shortened from its tail, it keeps its place, as on the device.
      leaf->hostPages.resize(keep);
      leaf->hashes.resize(keep);
      leaf->key.resize(keep * size_t(pageSize_));
      continue;
    }
    hostLeaves_.erase(hostLeaves_.begin());
    Node *parent = leaf->parent;
    unlist(parent);
    parent->children.erase(firstPage(leaf->key, 0));
    relist(parent);
  }
  return std::min(count, tier_->numFreePages());
}

bool RadixCache::offloadTail(Node *leaf, int64_t count) {
  StatusOr<std::vector<HostPageId>> hostPages = tier_->allocate(count);
  if (!hostPages.ok())
    return false;
  int64_t leafPages = pageCount(leaf);
  std::vector<PageTransfer> moves;
  for (int64_t i = 0; i < count; ++i)
    moves.push_back({(*hostPages)[size_t(i)],
                     leaf->pages[size_t(leafPages - count + i)],
                     TransferDirection::Offload});
  if (!tier_->transfer(moves).ok()) {
    (void)tier_->release(*hostPages);
    return false;
  }
  unlist(leaf);
  if (count < leafPages) {
    // `leaf` becomes the host-resident tail; the device part above it takes
    // its place in the LRU order, as a leaf shortened without a tier keeps
    // its own.
    Node *upper = splitNode(leaf, leafPages - count);
    std::swap(upper->serial, leaf->serial);
  }
  Node *parent = leaf->parent;
  unlist(parent);
  Status released = pool_.release(leaf->pages);
  assert(released.ok() && "the tree's pages are in use");
  (void)released;
  if (recording_)
    for (uint64_t hash : leaf->hashes)
      changes_.push_back({hash, false});
  leaf->pages.clear();
  leaf->hostPages = std::move(*hostPages);
  --parent->deviceChildren;
  evictable_ -= count * pageSize_;
  hostSize_ += count * pageSize_;
  relist(leaf);
  relist(parent);
  transfers_.insert(transfers_.end(), moves.begin(), moves.end());
  return true;
}

StatusOr<std::vector<PageTransfer>> RadixCache::loadBack(Match &match) {
  auto invalid = [](std::string message) {
    return Status::error(ErrorCode::InvalidArgument, std::move(message));
  };
  if (match.hostTokens == 0)
    return std::vector<PageTransfer>();
  if (!tier_)
    return invalid("a load back needs a host tier, and none is attached");
  // The continuation, root first, as the match found it.
  std::vector<Node *> path;
  Node *node = match.hostNode;
  for (; node && node != match.node && !onDevice(node); node = node->parent)
    path.push_back(node);
  int64_t need = match.hostTokens / pageSize_;
  int64_t pathPages = 0;
  for (Node *onPath : path)
    pathPages += pageCount(onPath);
  if (!node || node != match.node || !onDevice(node) || pathPages != need ||
      match.hostTokens % pageSize_ != 0)
    return invalid("the match's host-resident continuation is not in the "
                   "cache as it was matched");
  std::reverse(path.begin(), path.end());

  // Locked, the continuation stays in the tier and its device prefix on
  // the device while eviction makes room.
  lock(match.hostNode);
  int64_t evictablePages = evictable_ / pageSize_;
  if (pool_.numFreePages() + evictablePages < need) {
    (void)unlock(match.hostNode);
    return Status::error(
        ErrorCode::OutOfMemory,
        "loading back " + std::to_string(need) +
            " pages needs as many free or evictable device pages; the pool "
            "has " +
            std::to_string(pool_.numFreePages()) + " free and " +
            std::to_string(evictablePages) + " evictable");
  }
  int64_t missing = need - pool_.numFreePages();
  if (missing > 0)
    evict(missing * pageSize_);
  StatusOr<std::vector<PageId>> devicePages = pool_.allocate(need);
  if (!devicePages.ok()) {
    (void)unlock(match.hostNode);
    return devicePages.status();
  }
  std::vector<PageTransfer> loads;
  size_t next = 0;
  for (Node *onPath : path)
    for (HostPageId hostPage : onPath->hostPages)
      loads.push_back(
          {hostPage, (*devicePages)[next++], TransferDirection::Load});
  if (Status status = tier_->transfer(loads); !status.ok()) {
    (void)pool_.release(*devicePages);
    (void)unlock(match.hostNode);
    return status;
  }
  next = 0;
  for (Node *onPath : path) {
    // Locked: in no LRU order, before or after.
    Status released = tier_->release(onPath->hostPages);
    assert(released.ok() && "the tree's host pages are in use");
    (void)released;
    int64_t pages = pageCount(onPath);
    onPath->hostPages.clear();
    onPath->pages.assign(devicePages->begin() + ptrdiff_t(next),
                         devicePages->begin() +
                             ptrdiff_t(next + size_t(pages)));
    next += size_t(pages);
    ++onPath->parent->deviceChildren;
    hostSize_ -= pages * pageSize_;
    protected_ += pages * pageSize_;
    if (recording_)
      for (uint64_t hash : onPath->hashes)
        changes_.push_back({hash, true});
  }
  transfers_.insert(transfers_.end(), loads.begin(), loads.end());
  (void)unlock(match.hostNode);
  match.pages.insert(match.pages.end(), devicePages->begin(),
                     devicePages->end());
  match.node = match.hostNode;
  match.tokens += match.hostTokens;
  match.hostNode = nullptr;
  match.hostTokens = 0;
  return loads;
}

void RadixCache::unlist(Node *node) {
  if (isEvictableLeaf(node))
    leaves_.erase({node->lastAccess, node->serial, node});
  else if (isDroppableHostLeaf(node))
    hostLeaves_.erase({node->lastAccess, node->serial, node});
}

void RadixCache::relist(Node *node) {
  if (isEvictableLeaf(node))
    leaves_.insert({node->lastAccess, node->serial, node});
  else if (isDroppableHostLeaf(node))
    hostLeaves_.insert({node->lastAccess, node->serial, node});
}

void RadixCache::touch(Node *node, uint64_t now) {
  if (node->lastAccess == now)
    return;
  unlist(node);
  node->lastAccess = now;
  relist(node);
}

void RadixCache::addPages(Node *node) {
  for (uint64_t hash : node->hashes) {
    byHash_[hash] = node;
    if (recording_)
      changes_.push_back({hash, true});
  }
}

void RadixCache::removePages(const Node *node) {
  for (uint64_t hash : node->hashes) {
    byHash_.erase(hash);
    if (recording_)
      changes_.push_back({hash, false});
  }
}

RadixCache::Node *RadixCache::deviceNodeOfPage(uint64_t hash) const {
  auto it = byHash_.find(hash);
  return it != byHash_.end() && onDevice(it->second) ? it->second : nullptr;
}

namespace {
/// The longest prefix of `hashes`, at most `limit` pages, whose pages all
/// pass `cached`: cached prefixes, device-resident or in either tier, are
/// closed under truncation, so a binary search finds it.
template <class Cached>
int64_t longestCached(const std::vector<uint64_t> &hashes, int64_t limit,
                      Cached &&cached) {
  int64_t lo = 0, hi = std::min<int64_t>(limit, hashes.size());
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (cached(hashes[size_t(mid - 1)]))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}
} // namespace

int64_t RadixCache::cachedPages(const std::vector<uint64_t> &hashes,
                                int64_t limit) const {
  return longestCached(hashes, limit, [&](uint64_t hash) {
    return deviceNodeOfPage(hash) != nullptr;
  });
}

int64_t RadixCache::hostCachedPages(const std::vector<uint64_t> &hashes,
                                    int64_t limit) const {
  if (!tier_)
    return 0;
  int64_t inEither = longestCached(
      hashes, limit, [&](uint64_t hash) { return byHash_.count(hash) != 0; });
  return inEither - cachedPages(hashes, limit);
}

void RadixCache::touchPrefix(uint64_t hash) {
  Node *node = deviceNodeOfPage(hash);
  if (!node)
    return;
  size_t page = static_cast<size_t>(
      std::find(node->hashes.begin(), node->hashes.end(), hash) -
      node->hashes.begin());
  if (page + 1 < node->pages.size())
    node = splitNode(node, static_cast<int64_t>(page + 1));
  uint64_t now = ++clock_;
  for (; node->parent; node = node->parent)
    touch(node, now);
  touch(node, now); // the root
  checkInDebug();
}

const RadixCache::Node *RadixCache::nodeOfPage(uint64_t hash) const {
  return deviceNodeOfPage(hash);
}

Status RadixCache::checkInvariants() const {
  auto fail = [](std::string message) {
    return Status::error(ErrorCode::Internal, std::move(message));
  };
  int64_t evictable = 0, protectedSize = 0, hostSize = 0;
  std::unordered_map<PageId, int> seen;
  std::unordered_map<HostPageId, int> seenHost;
  std::vector<const Node *> stack = roots();
  while (!stack.empty()) {
    const Node *node = stack.back();
    stack.pop_back();
    int64_t childLocks = 0, deviceChildren = 0;
    for (const auto &[key, child] : node->children) {
      if (child->parent != node)
        return fail("a child's parent link is wrong");
      size_t held =
          onDevice(child.get()) ? child->pages.size() : child->hostPages.size();
      if (child->key.empty() || child->key.size() != held * pageSize_ ||
          (!onDevice(child.get()) && !child->pages.empty()))
        return fail("a node's key is not its pages' tokens");
      if (key != firstPage(child->key, 0))
        return fail("a child is filed under the wrong first page");
      if (!onDevice(node) && onDevice(child.get()))
        return fail("a device-resident node is below a host-resident one");
      uint64_t hash = node->hashes.back(); // a root's: its namespace
      if (child->hashes.size() != held)
        return fail("a node's page hashes are not one per page");
      for (size_t page = 0; page < held; ++page) {
        hash = continuePrefixHash(hash, child->key.data() + page * pageSize_,
                                  pageSize_);
        if (child->hashes[page] != hash)
          return fail("a page's prefix hash is not its prefix's");
        auto it = byHash_.find(hash);
        if (it == byHash_.end() || it->second != child.get())
          return fail("a page is not found by its prefix hash");
      }
      std::tuple<uint64_t, uint64_t, Node *> entry = {
          child->lastAccess, child->serial, child.get()};
      if (isEvictableLeaf(child.get()) != (leaves_.count(entry) == 1))
        return fail("the LRU leaves are not the unlocked leaves");
      if (isDroppableHostLeaf(child.get()) != (hostLeaves_.count(entry) == 1))
        return fail("the host LRU leaves are not the unlocked host-resident "
                    "leaves");
      childLocks += child->lockRef;
      deviceChildren += onDevice(child.get()) ? 1 : 0;
      stack.push_back(child.get());
    }
    if (node->deviceChildren != deviceChildren)
      return fail("a node counts " + std::to_string(node->deviceChildren) +
                  " device-resident children, it has " +
                  std::to_string(deviceChildren));
    if (!node->parent)
      continue;
    if (node->lockRef < childLocks)
      return fail("a node is locked less than its children together");
    int64_t size = static_cast<int64_t>(node->key.size());
    if (!onDevice(node))
      hostSize += size;
    else
      (node->lockRef > 0 ? protectedSize : evictable) += size;
    for (PageId page : node->pages) {
      if (++seen[page] > 1)
        return fail("page " + std::to_string(page) + " is in the tree twice");
      if (page < 0 || page >= pool_.numPages() || pool_.refCount(page) < 1)
        return fail("the tree holds page " + std::to_string(page) +
                    ", which the pool has free");
    }
    for (HostPageId page : node->hostPages) {
      if (++seenHost[page] > 1)
        return fail("host page " + std::to_string(page) +
                    " is in the tree twice");
      if (!tier_ || !tier_->inUse(page))
        return fail("the tree holds host page " + std::to_string(page) +
                    ", which the tier has free");
    }
  }
  if (seen.size() + seenHost.size() != byHash_.size())
    return fail("the prefix hashes name pages the tree does not hold");
  if (tier_ && int64_t(seenHost.size()) != tier_->numUsedPages())
    return fail("the tier has " + std::to_string(tier_->numUsedPages()) +
                " pages in use, the tree holds " +
                std::to_string(seenHost.size()));
  size_t leaves = 0;
  for (const auto &entry : leaves_)
    leaves += isEvictableLeaf(std::get<2>(entry)) ? 1 : 0;
  if (leaves != leaves_.size())
    return fail("the LRU leaves hold a node that is not an unlocked leaf");
  size_t hostLeaves = 0;
  for (const auto &entry : hostLeaves_)
    hostLeaves += isDroppableHostLeaf(std::get<2>(entry)) ? 1 : 0;
  if (hostLeaves != hostLeaves_.size())
    return fail("the host LRU leaves hold a node that is not an unlocked "
                "host-resident leaf");
  if (evictable != evictable_ || protectedSize != protected_ ||
      hostSize != hostSize_)
    return fail("evictable/protected/host sizes are " +
                std::to_string(evictable_) + "/" + std::to_string(protected_) +
                "/" + std::to_string(hostSize_) + ", the tree holds " +
                std::to_string(evictable) + "/" +
                std::to_string(protectedSize) + "/" + std::to_string(hostSize));
  return Status();
}

} // namespace attnc
