//===- RadixCacheTest.cpp - the radix prefix cache ------------------------===//

#include "radix/RadixCache.h"
#include "TestPools.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <set>

using namespace attnc;

namespace {

struct Fixture {
  explicit Fixture(int64_t pages = 64, int64_t pageSize = 2)
      : pool(makeAccountingPool(pages, pageSize)),
        cache(std::make_unique<RadixCache>(*pool)) {}
  /// Inserts `tokens` (whole pages) as a request would: allocate, insert,
  /// give back what the tree already had.
  int64_t insert(const std::vector<Token> &tokens) {
    int64_t pages = static_cast<int64_t>(tokens.size()) / pool->pageSize();
    StatusOr<std::vector<PageId>> fresh = pool->allocate(pages);
    if (!fresh.ok())
      return -1;
    std::vector<PageId> allocated = *fresh;
    int64_t present = *cache->insert(tokens, allocated);
    std::vector<PageId> duplicate(
        allocated.begin(), allocated.begin() + present / pool->pageSize());
    EXPECT_TRUE(pool->release(duplicate).ok());
    return present;
  }
  std::unique_ptr<PagedKVPool> pool;
  std::unique_ptr<RadixCache> cache;
};

} // namespace

TEST(RadixCache, MatchesWholePagesOnly) {
  Fixture f;
  EXPECT_EQ(f.insert({1, 2, 3, 4, 5, 6}), 0);
  RadixCache::Match match = f.cache->matchPrefix({1, 2, 3, 4, 5});
  EXPECT_EQ(match.tokens, 4);
  EXPECT_EQ(match.pages.size(), 2u);
  EXPECT_EQ(f.cache->matchPrefix({1, 9}).tokens, 0);
  EXPECT_EQ(f.cache->matchPrefix({2, 1}).tokens, 0);
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

TEST(RadixCache, MatchEndingInsideANodeSplitsIt) {
  Fixture f;
  f.insert({1, 2, 3, 4, 5, 6});
  RadixCache::Match match = f.cache->matchPrefix({1, 2, 3, 4, 9, 9});
  EXPECT_EQ(match.tokens, 4);
  ASSERT_NE(match.node, nullptr);
  EXPECT_EQ(match.node->key, (std::vector<Token>{1, 2, 3, 4}));
  ASSERT_EQ(match.node->children.size(), 1u);
  EXPECT_EQ(match.node->children.begin()->second->key,
            (std::vector<Token>{5, 6}));
  EXPECT_EQ(f.cache->totalSize(), 6);
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

TEST(RadixCache, InsertReturnsWhatWasCached) {
  Fixture f;
  f.insert({1, 2, 3, 4});
  EXPECT_EQ(f.insert({1, 2, 3, 4, 7, 8}), 4);
  EXPECT_EQ(f.insert({1, 2, 5, 6}), 2);
  EXPECT_EQ(f.cache->totalSize(), 8);
  // The tree holds exactly one reference per page it keeps.
  EXPECT_EQ(f.pool->numUsedPages(), 4);
  EXPECT_EQ(f.cache->insert({1, 2}, {0, 1}).status().code(),
            ErrorCode::InvalidArgument);
}

TEST(RadixCache, LocksProtectTheWholePath) {
  Fixture f;
  f.insert({1, 2, 3, 4});
  f.insert({1, 2, 3, 4, 5, 6});
  RadixCache::Match match = f.cache->matchPrefix({1, 2, 3, 4, 5, 6});
  f.cache->lock(match.node);
  EXPECT_EQ(f.cache->protectedSize(), 6);
  EXPECT_EQ(f.cache->evictableSize(), 0);
  EXPECT_EQ(f.cache->evict(100), 0) << "locked nodes are never evicted";
  EXPECT_EQ(f.cache->totalSize(), 6);
  ASSERT_TRUE(f.cache->unlock(match.node).ok());
  EXPECT_EQ(f.cache->evictableSize(), 6);
  EXPECT_FALSE(f.cache->unlock(match.node).ok());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

TEST(RadixCache, EvictsLeastRecentlyUsedLeavesFirst) {
  Fixture f;
  f.insert({1, 1, 2, 2});
  f.insert({1, 1, 3, 3});
  f.insert({4, 4});
  // Touch {1,1,2,2} so {1,1,3,3}'s leaf is the oldest, then {4,4}.
  f.cache->matchPrefix({4, 4});
  f.cache->matchPrefix({1, 1, 2, 2});
  EXPECT_EQ(f.cache->evict(1), 2);
  EXPECT_EQ(f.cache->matchPrefix({1, 1, 3, 3}).tokens, 2);
  EXPECT_EQ(f.cache->matchPrefix({4, 4}).tokens, 2);
  // Evicting everything frees every page; a request of any size rounds
  // up to pages without overflowing (the fuzzer's INT64_MAX).
  int64_t cached = f.cache->totalSize();
  EXPECT_EQ(f.cache->evict(std::numeric_limits<int64_t>::max()), cached);
  EXPECT_EQ(f.cache->totalSize(), 0);
  EXPECT_EQ(f.pool->numFreePages(), f.pool->numPages());
}

TEST(RadixCache, ReturnsItsPagesWhenDestroyed) {
  Fixture f;
  f.insert({1, 2, 3, 4});
  f.cache.reset();
  EXPECT_EQ(f.pool->numFreePages(), f.pool->numPages());
}

// Random inserts, matches, locks, unlocks and evictions over a small token
// alphabet (so prefixes collide often), checked against a model: a locked
// sequence stays fully cached, every match is a prefix that was inserted,
// and no page leaks.
TEST(RadixCache, RandomOperationsKeepInvariants) {
  Fixture f(/*pages=*/4096, /*pageSize=*/2);
  std::mt19937 rng(99);
  std::set<std::vector<Token>> insertedPrefixes;
  std::vector<std::pair<std::vector<Token>, RadixCache::Node *>> locked;
  auto randomSequence = [&] {
    std::vector<Token> tokens(2 * (1 + rng() % 6));
    for (Token &token : tokens)
      token = static_cast<Token>(rng() % 3);
    return tokens;
  };
  for (int op = 0; op < 5000; ++op) {
    switch (rng() % 5) {
    case 0:
    case 1: {
      std::vector<Token> tokens = randomSequence();
      if (f.pool->numFreePages() < 6)
        f.cache->evict(12);
      if (f.insert(tokens) < 0)
        break;
      for (size_t n = 2; n <= tokens.size(); n += 2)
        insertedPrefixes.insert({tokens.begin(), tokens.begin() + n});
      break;
    }
    case 2: {
      std::vector<Token> tokens = randomSequence();
      RadixCache::Match match = f.cache->matchPrefix(tokens);
      std::vector<Token> prefix(tokens.begin(), tokens.begin() + match.tokens);
      ASSERT_TRUE(prefix.empty() || insertedPrefixes.count(prefix));
      if (rng() % 2) {
        f.cache->lock(match.node);
        locked.push_back({prefix, match.node});
      }
      break;
    }
    case 3:
      if (!locked.empty()) {
        size_t i = rng() % locked.size();
        ASSERT_TRUE(f.cache->unlock(locked[i].second).ok());
        locked.erase(locked.begin() + i);
      }
      break;
    case 4:
      f.cache->evict(1 + rng() % 10);
      break;
    }
    ASSERT_TRUE(f.cache->checkInvariants().ok()) << "after operation " << op;
    for (const auto &[prefix, node] : locked)
      ASSERT_EQ(f.cache->matchPrefix(prefix).tokens,
                static_cast<int64_t>(prefix.size()))
          << "a locked prefix was evicted";
    ASSERT_EQ(f.pool->numUsedPages() * 2, f.cache->totalSize())
        << "pages leaked or freed twice";
  }
  for (const auto &[prefix, node] : locked)
    ASSERT_TRUE(f.cache->unlock(node).ok());
  f.cache->evict(1 << 20);
  EXPECT_EQ(f.pool->numFreePages(), f.pool->numPages());
}

// Namespaces (LoRA adapters, tenants) hold separate trees: the same tokens
// cached in one are not found in another, and evicting one leaves the other.
TEST(RadixCache, NamespacesShareNothing) {
  Fixture f;
  std::vector<Token> tokens = {1, 2, 3, 4, 5, 6};
  std::vector<PageId> pages = *f.pool->allocate(3);
  ASSERT_EQ(*f.cache->insert(tokens, pages, /*space=*/7), 0);
  EXPECT_EQ(f.cache->matchPrefix(tokens).tokens, 0);
  EXPECT_EQ(f.cache->matchPrefix(tokens, 7).tokens, 6);
  EXPECT_EQ(f.cache->matchPrefix(tokens, 8).tokens, 0);
  EXPECT_NE(pagePrefixHashes(tokens, 2, -1, 7), pagePrefixHashes(tokens, 2));
  EXPECT_EQ(f.cache->cachedPages(pagePrefixHashes(tokens, 2), 3), 0);
  EXPECT_EQ(f.cache->cachedPages(pagePrefixHashes(tokens, 2, -1, 7), 3), 3);

  EXPECT_EQ(f.insert(tokens), 0); // namespace 0 computes its own
  EXPECT_EQ(f.cache->totalSize(), 12);
  EXPECT_EQ(f.pool->numUsedPages(), 6);
  EXPECT_EQ(f.cache->roots().size(), 2u); // 0 and 7: a lookup makes none
  EXPECT_TRUE(f.cache->checkInvariants().ok());

  RadixCache::Match held = f.cache->matchPrefix(tokens, 7);
  f.cache->lock(held.node);
  EXPECT_EQ(f.cache->evict(100), 6); // only namespace 0's, unlocked
  EXPECT_EQ(f.cache->matchPrefix(tokens, 7).tokens, 6);
  ASSERT_TRUE(f.cache->unlock(held.node).ok());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

namespace {

/// Every cached whole-page prefix of namespace 0, as tokens.
std::set<std::vector<Token>> cachedPrefixes(const RadixCache &cache) {
  std::set<std::vector<Token>> prefixes;
  std::vector<std::pair<const RadixCache::Node *, std::vector<Token>>> stack = {
      {cache.root(), {}}};
  while (!stack.empty()) {
    auto [node, path] = stack.back();
    stack.pop_back();
    for (const auto &[key, child] : node->children) {
      std::vector<Token> tokens = path;
      for (size_t page = 0; page < child->pages.size(); ++page) {
        size_t from = page * size_t(cache.pageSize());
        tokens.insert(tokens.end(), child->key.begin() + ptrdiff_t(from),
                      child->key.begin() +
                          ptrdiff_t(from + size_t(cache.pageSize())));
        prefixes.insert(tokens);
      }
      stack.push_back({child.get(), tokens});
    }
  }
  return prefixes;
}

} // namespace

// Asking for one page frees one page, not the whole leaf it ends: the
// leaf is shortened from its tail and the rest of it still hits.
TEST(RadixCache, EvictsPagesFromALeafsTail) {
  Fixture f(/*pages=*/128, /*pageSize=*/16);
  std::vector<Token> tokens(1600);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<Token>(i);
  ASSERT_EQ(f.insert(tokens), 0);
  ASSERT_EQ(f.pool->numFreePages(), 28);

  EXPECT_EQ(f.cache->evict(1), 16);
  EXPECT_EQ(f.pool->numFreePages(), 29);
  EXPECT_EQ(f.cache->totalSize(), 1584);
  EXPECT_EQ(f.cache->matchPrefix(tokens).tokens, 1584);
  EXPECT_TRUE(f.cache->checkInvariants().ok());

  EXPECT_EQ(f.cache->evict(3 * 16), 48);
  EXPECT_EQ(f.pool->numFreePages(), 32);
  EXPECT_EQ(f.cache->matchPrefix(tokens).tokens, 1536);
  // A part page counts as a page.
  EXPECT_EQ(f.cache->evict(17), 32);
  EXPECT_EQ(f.cache->matchPrefix(tokens).tokens, 1504);
  EXPECT_EQ(f.cache->evict(0), 0);
  EXPECT_TRUE(f.cache->checkInvariants().ok());

  // The shortened leaf is still the least recently used: after a newer
  // leaf, eviction goes on from its tail first.
  std::vector<Token> other(64, 7);
  ASSERT_EQ(f.insert(other), 0);
  f.cache->matchPrefix(other);
  EXPECT_EQ(f.cache->evict(1490), 1504);
  EXPECT_EQ(f.cache->matchPrefix(tokens).tokens, 0);
  EXPECT_EQ(f.cache->matchPrefix(other).tokens, 64);
  EXPECT_EQ(f.cache->evict(1 << 20), 64);
  EXPECT_EQ(f.pool->numFreePages(), f.pool->numPages());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

// Shortening a leaf journals exactly the pages that leave, and a locked
// path gives nothing: eviction stops at what is unlocked.
TEST(RadixCache, TailEvictionJournalsAndSparesLocks) {
  Fixture f(/*pages=*/64, /*pageSize=*/2);
  f.cache->recordChanges();
  std::vector<Token> tokens = {1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  ASSERT_EQ(f.insert(tokens), 0);
  std::vector<uint64_t> hashes = pagePrefixHashes(tokens, 2);
  EXPECT_EQ(f.cache->takeChanges().size(), 5u);
  RadixCache::Match held = f.cache->matchPrefix({1, 1, 2, 2});
  f.cache->lock(held.node);
  EXPECT_EQ(f.cache->evict(4), 4);
  std::vector<RadixCache::PageChange> changes = f.cache->takeChanges();
  ASSERT_EQ(changes.size(), 2u);
  std::set<uint64_t> left = {changes[0].hash, changes[1].hash};
  EXPECT_EQ(left, (std::set<uint64_t>{hashes[3], hashes[4]}));
  EXPECT_FALSE(changes[0].added || changes[1].added);
  EXPECT_EQ(f.cache->cachedPages(hashes, 5), 3);
  EXPECT_EQ(f.cache->evict(100), 2) << "only the one unlocked page is left";
  EXPECT_EQ(f.cache->matchPrefix(tokens).tokens, 4);
  ASSERT_TRUE(f.cache->unlock(held.node).ok());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

// Random inserts, locks and evictions of random page counts, against a
// model of the cached prefixes: an eviction of k pages frees exactly
// min(k, evictable pages) pool pages, removes exactly that many cached
// prefixes and adds none, never one a lock holds, and leaks nothing.
TEST(RadixCache, PageEvictionAgreesWithAModel) {
  for (int64_t pageSize : {1, 2, 4}) {
    Fixture f(/*pages=*/256, pageSize);
    std::mt19937 rng(7 + unsigned(pageSize));
    std::vector<std::pair<std::vector<Token>, RadixCache::Node *>> locked;
    for (int op = 0; op < 3000; ++op) {
      std::set<std::vector<Token>> before = cachedPrefixes(*f.cache);
      switch (rng() % 6) {
      case 0:
      case 1:
      case 2: {
        std::vector<Token> tokens(size_t(pageSize) * (1 + rng() % 12));
        for (Token &token : tokens)
          token = static_cast<Token>(rng() % 3);
        if (f.pool->numFreePages() < 12)
          break;
        ASSERT_GE(f.insert(tokens), 0);
        break;
      }
      case 3: {
        int64_t pages = 1 + rng() % 10;
        int64_t evictable = f.cache->evictableSize() / pageSize;
        int64_t freeBefore = f.pool->numFreePages();
        int64_t asked = pages * pageSize - int64_t(rng() % pageSize);
        int64_t freed = std::min(pages, evictable);
        ASSERT_EQ(f.cache->evict(asked), freed * pageSize);
        ASSERT_EQ(f.pool->numFreePages(), freeBefore + freed);
        std::set<std::vector<Token>> after = cachedPrefixes(*f.cache);
        ASSERT_EQ(int64_t(before.size() - after.size()), freed);
        for (const std::vector<Token> &prefix : after)
          ASSERT_TRUE(before.count(prefix)) << "eviction added a prefix";
        break;
      }
      case 4: {
        std::vector<Token> tokens(size_t(pageSize) * (1 + rng() % 6));
        for (Token &token : tokens)
          token = static_cast<Token>(rng() % 3);
        RadixCache::Match match = f.cache->matchPrefix(tokens);
        f.cache->lock(match.node);
        locked.push_back(
            {std::vector<Token>(tokens.begin(), tokens.begin() + match.tokens),
             match.node});
        break;
      }
      case 5:
        if (!locked.empty()) {
          size_t i = rng() % locked.size();
          ASSERT_TRUE(f.cache->unlock(locked[i].second).ok());
          locked.erase(locked.begin() + ptrdiff_t(i));
        }
        break;
      }
      ASSERT_TRUE(f.cache->checkInvariants().ok()) << "after operation " << op;
      for (const auto &[prefix, node] : locked)
        ASSERT_EQ(f.cache->matchPrefix(prefix).tokens,
                  static_cast<int64_t>(prefix.size()));
      ASSERT_EQ(f.pool->numUsedPages() * pageSize, f.cache->totalSize());
      ASSERT_EQ(int64_t(cachedPrefixes(*f.cache).size()) * pageSize,
                f.cache->totalSize());
    }
    for (const auto &[prefix, node] : locked)
      ASSERT_TRUE(f.cache->unlock(node).ok());
    f.cache->evict(1 << 20);
    EXPECT_EQ(f.pool->numFreePages(), f.pool->numPages());
  }
}
