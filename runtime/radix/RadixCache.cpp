//===- RadixCache.cpp - a radix tree of cached prefixes -------------------===//

#include "radix/RadixCache.h"

#include <algorithm>
#include <queue>
#include <string>
#include <unordered_map>

namespace attnc {

RadixCache::RadixCache(PagedKVPool &pool)
    : pool_(pool), pageSize_(pool.pageSize()), root_(std::make_unique<Node>()) {
  // The root is never evicted: it stands locked.
  root_->lockRef = 1;
}

RadixCache::~RadixCache() {
  // Return the tree's page references to the pool.
  std::vector<Node *> stack{root_.get()};
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
  upper->parent = node->parent;
  upper->lockRef = node->lockRef;
  upper->lastAccess = node->lastAccess;

  node->key.erase(node->key.begin(), node->key.begin() + keepTokens);
  node->pages.erase(node->pages.begin(), node->pages.begin() + keepPages);

  Node *parent = node->parent;
  std::unique_ptr<Node> &slot = parent->children.at(firstPage(upper->key, 0));
  std::unique_ptr<Node> lower = std::move(slot);
  Node *upperRaw = upper.get();
  lower->parent = upperRaw;
  upperRaw->children.emplace(firstPage(lower->key, 0), std::move(lower));
  slot = std::move(upper);
  return upperRaw;
}

RadixCache::Match RadixCache::matchPrefix(const std::vector<Token> &tokens) {
  Match match;
  Node *node = root_.get();
  uint64_t now = ++clock_;
  node->lastAccess = now;
  size_t offset = 0;
  while (offset + pageSize_ <= tokens.size()) {
    auto it = node->children.find(firstPage(tokens, offset));
    if (it == node->children.end())
      break;
    Node *child = it->second.get();
    int64_t pages = 1;
    int64_t childPages = static_cast<int64_t>(child->pages.size());
    while (pages < childPages &&
           offset + (pages + 1) * pageSize_ <= tokens.size() &&
           std::equal(child->key.begin() + pages * pageSize_,
                      child->key.begin() + (pages + 1) * pageSize_,
                      tokens.begin() + offset + pages * pageSize_))
      ++pages;
    if (pages < childPages)
      child = splitNode(child, pages);
    child->lastAccess = now;
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
                                     const std::vector<PageId> &pages) {
  int64_t numPages = static_cast<int64_t>(pages.size());
  if (numPages * pageSize_ > static_cast<int64_t>(tokens.size()))
    return Status::error(ErrorCode::InvalidArgument,
                         std::to_string(numPages) + " pages need " +
                             std::to_string(numPages * pageSize_) +
                             " tokens, got " + std::to_string(tokens.size()));
  std::vector<Token> key(tokens.begin(), tokens.begin() + numPages * pageSize_);
  Match match = matchPrefix(key);
  int64_t cachedPages = match.tokens / pageSize_;
  if (cachedPages < numPages) {
    auto leaf = std::make_unique<Node>();
    leaf->key.assign(key.begin() + match.tokens, key.end());
    leaf->pages.assign(pages.begin() + cachedPages, pages.end());
    leaf->parent = match.node;
    leaf->lastAccess = clock_;
    evictable_ += static_cast<int64_t>(leaf->key.size());
    match.node->children.emplace(firstPage(leaf->key, 0), std::move(leaf));
  }
  checkInDebug();
  return match.tokens;
}

void RadixCache::lock(Node *node) {
  for (; node != root_.get(); node = node->parent) {
    if (node->lockRef++ == 0) {
      int64_t size = static_cast<int64_t>(node->key.size());
      evictable_ -= size;
      protected_ += size;
    }
  }
  checkInDebug();
}

Status RadixCache::unlock(Node *node) {
  for (Node *check = node; check != root_.get(); check = check->parent)
    if (check->lockRef <= 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "unlock of a node that is not locked");
  for (; node != root_.get(); node = node->parent) {
    if (--node->lockRef == 0) {
      int64_t size = static_cast<int64_t>(node->key.size());
      evictable_ += size;
      protected_ -= size;
    }
  }
  checkInDebug();
  return Status();
}

int64_t RadixCache::evict(int64_t tokens) {
  auto older = [](const Node *a, const Node *b) {
    return a->lastAccess > b->lastAccess;
  };
  std::priority_queue<Node *, std::vector<Node *>, decltype(older)> leaves(
      older);
  std::vector<Node *> stack{root_.get()};
  while (!stack.empty()) {
    Node *node = stack.back();
    stack.pop_back();
    if (node->children.empty() && node->lockRef == 0)
      leaves.push(node);
    for (auto &[key, child] : node->children)
      stack.push_back(child.get());
  }

  int64_t evicted = 0;
  while (evicted < tokens && !leaves.empty()) {
    Node *leaf = leaves.top();
    leaves.pop();
    Status released = pool_.release(leaf->pages);
    assert(released.ok() && "the tree's pages are in use");
    (void)released;
    int64_t size = static_cast<int64_t>(leaf->key.size());
    evicted += size;
    evictable_ -= size;
    Node *parent = leaf->parent;
    parent->children.erase(firstPage(leaf->key, 0));
    if (parent != root_.get() && parent->children.empty() &&
        parent->lockRef == 0)
      leaves.push(parent);
  }
  checkInDebug();
  return evicted;
}

Status RadixCache::checkInvariants() const {
  auto fail = [](std::string message) {
    return Status::error(ErrorCode::Internal, std::move(message));
  };
  int64_t evictable = 0, protectedSize = 0;
  std::unordered_map<PageId, int> seen;
  std::vector<const Node *> stack{root_.get()};
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
      childLocks += child->lockRef;
      stack.push_back(child.get());
    }
    if (node == root_.get())
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
  if (evictable != evictable_ || protectedSize != protected_)
    return fail("evictable/protected sizes are " + std::to_string(evictable_) +
                "/" + std::to_string(protected_) + ", the tree holds " +
                std::to_string(evictable) + "/" +
                std::to_string(protectedSize));
  return Status();
}

} // namespace attnc
