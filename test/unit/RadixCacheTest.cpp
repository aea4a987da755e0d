//===- RadixCacheTest.cpp - the radix prefix cache ------------------------===//

#include "radix/RadixCache.h"
#include "TestPools.h"

#include <gtest/gtest.h>

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
  // Evicting everything frees every page.
  f.cache->evict(100);
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
