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
  while (!stack.empty()) {
    Node *node = stack.back();
    stack.pop_back();
    pages.insert(pages.end(), node->pages.begin(), node->pages.end());
    for (auto &[key, child] : node->children)
      stack.push_back(child.get());
  }
  (void)pool_.release(pages);
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
  upper->pages.assign(node->pages.begin(), node->pages.begin() + keepPages);
  upper->hashes.assign(node->hashes.begin(), node->hashes.begin() + keepPages);
  upper->parent = node->parent;
  upper->lockRef = node->lockRef;
  upper->lastAccess = node->lastAccess;
  upper->serial = ++serials_;
  for (uint64_t hash : upper->hashes)
    byHash_[hash] = upper.get();

  node->key.erase(node->key.begin(), node->key.begin() + keepTokens);
  node->pages.erase(node->pages.begin(), node->pages.begin() + keepPages);
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
  while (offset + pageSize_ <= count) {
    auto it = node->children.find(firstPage(tokens + offset));
    if (it == node->children.end())
      break;
    Node *child = it->second.get();
    int64_t pages = 1;
    int64_t childPages = static_cast<int64_t>(child->pages.size());
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
  match.node = node;
  match.tokens = static_cast<int64_t>(offset);
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
  int64_t cachedPages = match.tokens / pageSize_;
  if (cachedPages < numPages) {
    auto leaf = std::make_unique<Node>();
    leaf->key.assign(key.begin() + match.tokens, key.end());
    leaf->pages.assign(pages.begin() + cachedPages, pages.end());
    uint64_t hash = match.node->hashes.back(); // a root's: its namespace
    for (size_t offset = 0; offset < leaf->key.size(); offset += pageSize_) {
      hash = continuePrefixHash(hash, leaf->key.data() + offset, pageSize_);
      leaf->hashes.push_back(hash);
    }
    leaf->parent = match.node;
    leaf->lastAccess = clock_;
    leaf->serial = ++serials_;
    evictable_ += static_cast<int64_t>(leaf->key.size());
    // The parent is a leaf no more; the new leaf is one, unlocked.
    if (isEvictableLeaf(match.node))
      leaves_.erase({match.node->lastAccess, match.node->serial, match.node});
    Node *raw = leaf.get();
    match.node->children.emplace(firstPage(leaf->key, 0), std::move(leaf));
    addPages(raw);
    leaves_.insert({raw->lastAccess, raw->serial, raw});
  }
  checkInDebug();
  return match.tokens;
}

void RadixCache::lock(Node *node) {
  for (; node->parent; node = node->parent) {
    if (node->lockRef == 0) {
      if (node->children.empty())
        leaves_.erase({node->lastAccess, node->serial, node});
      int64_t size = static_cast<int64_t>(node->key.size());
      evictable_ -= size;
      protected_ += size;
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
      int64_t size = static_cast<int64_t>(node->key.size());
      evictable_ += size;
      protected_ -= size;
      if (node->children.empty())
        leaves_.insert({node->lastAccess, node->serial, node});
    }
  }
  checkInDebug();
  return Status();
}

int64_t RadixCache::evict(int64_t tokens) {
  // Whole pages, as few as cover `tokens`, each from the tail of the least
  // recently used unlocked leaf: a leaf longer than what is still wanted
  // gives only its last pages and stays a leaf, in its place in the LRU
  // order (what remains of it is the same prefix, just shorter).
  // Rounded up without adding to `tokens`, which may be INT64_MAX.
  int64_t wanted =
      tokens > 0 ? tokens / pageSize_ + (tokens % pageSize_ != 0) : 0;
  int64_t evictedPages = 0;
  while (evictedPages < wanted && !leaves_.empty()) {
    Node *leaf = std::get<2>(*leaves_.begin());
    int64_t leafPages = static_cast<int64_t>(leaf->pages.size());
    int64_t take = std::min(leafPages, wanted - evictedPages);
    if (take < leafPages) {
      size_t keep = static_cast<size_t>(leafPages - take);
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
      evictedPages += take;
      evictable_ -= take * pageSize_;
      continue;
    }
    leaves_.erase(leaves_.begin());
    Status released = pool_.release(leaf->pages);
    assert(released.ok() && "the tree's pages are in use");
    (void)released;
    removePages(leaf);
    evictedPages += leafPages;
    evictable_ -= leafPages * pageSize_;
    Node *parent = leaf->parent;
    parent->children.erase(firstPage(leaf->key, 0));
    if (isEvictableLeaf(parent))
      leaves_.insert({parent->lastAccess, parent->serial, parent});
  }
  checkInDebug();
  return evictedPages * pageSize_;
}

void RadixCache::touch(Node *node, uint64_t now) {
  if (node->lastAccess == now)
    return;
  bool listed = isEvictableLeaf(node);
  if (listed)
    leaves_.erase({node->lastAccess, node->serial, node});
  node->lastAccess = now;
  if (listed)
    leaves_.insert({node->lastAccess, node->serial, node});
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

int64_t RadixCache::cachedPages(const std::vector<uint64_t> &hashes,
                                int64_t limit) const {
  // Cached prefixes are closed under truncation: a binary search finds the
  // longest.
  int64_t lo = 0, hi = std::min<int64_t>(limit, hashes.size());
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (byHash_.count(hashes[size_t(mid - 1)]))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void RadixCache::touchPrefix(uint64_t hash) {
  auto it = byHash_.find(hash);
  if (it == byHash_.end())
    return;
  Node *node = it->second;
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
  auto it = byHash_.find(hash);
  return it == byHash_.end() ? nullptr : it->second;
}

Status RadixCache::checkInvariants() const {
  auto fail = [](std::string message) {
    return Status::error(ErrorCode::Internal, std::move(message));
  };
  int64_t evictable = 0, protectedSize = 0;
  std::unordered_map<PageId, int> seen;
  std::vector<const Node *> stack = roots();
  while (!stack.empty()) {
    const Node *node = stack.back();
    stack.pop_back();
    int64_t childLocks = 0;
    for (const auto &[key, child] : node->children) {
      if (child->parent != node)
        return fail("a child's parent link is wrong");
      if (child->key.empty() ||
          child->key.size() != child->pages.size() * pageSize_)
        return fail("a node's key is not its pages' tokens");
      if (key != firstPage(child->key, 0))
        return fail("a child is filed under the wrong first page");
      uint64_t hash = node->hashes.back(); // a root's: its namespace
      if (child->hashes.size() != child->pages.size())
        return fail("a node's page hashes are not one per page");
      for (size_t page = 0; page < child->pages.size(); ++page) {
        hash = continuePrefixHash(hash, child->key.data() + page * pageSize_,
                                  pageSize_);
        if (child->hashes[page] != hash)
          return fail("a page's prefix hash is not its prefix's");
        auto it = byHash_.find(hash);
        if (it == byHash_.end() || it->second != child.get())
          return fail("a page is not found by its prefix hash");
      }
      if (isEvictableLeaf(child.get()) !=
          (leaves_.count({child->lastAccess, child->serial, child.get()}) == 1))
        return fail("the LRU leaves are not the unlocked leaves");
      childLocks += child->lockRef;
      stack.push_back(child.get());
    }
    if (!node->parent)
      continue;
    if (node->lockRef < childLocks)
      return fail("a node is locked less than its children together");
    (node->lockRef > 0 ? protectedSize : evictable) +=
        static_cast<int64_t>(node->key.size());
    for (PageId page : node->pages) {
      if (++seen[page] > 1)
        return fail("page " + std::to_string(page) + " is in the tree twice");
      if (page < 0 || page >= pool_.numPages() || pool_.refCount(page) < 1)
        return fail("the tree holds page " + std::to_string(page) +
                    ", which the pool has free");
    }
  }
  if (seen.size() != byHash_.size())
    return fail("the prefix hashes name pages the tree does not hold");
  size_t leaves = 0;
  for (const auto &entry : leaves_)
    leaves += isEvictableLeaf(std::get<2>(entry)) ? 1 : 0;
  if (leaves != leaves_.size())
    return fail("the LRU leaves hold a node that is not an unlocked leaf");
  if (evictable != evictable_ || protectedSize != protected_)
    return fail("evictable/protected sizes are " + std::to_string(evictable_) +
                "/" + std::to_string(protected_) + ", the tree holds " +
                std::to_string(evictable) + "/" +
                std::to_string(protectedSize));
  return Status();
}

} // namespace attnc
