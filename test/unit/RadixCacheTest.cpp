//===- RadixCacheTest.cpp - the radix prefix cache ------------------------===//

#include "radix/RadixCache.h"
#include "TestPools.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
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

//===----------------------------------------------------------------------===//
// A host tier under the cache
//===----------------------------------------------------------------------===//

namespace {

/// A cache over a pool with a host tier of `hostPages` pages: an accounting
/// pool, or a host pool of `layers` layers whose pages hold bytes.
struct TierFixture {
  TierFixture(int64_t pages, int64_t pageSize, int64_t hostPages,
              PoolMemory memory = PoolMemory::AccountingOnly,
              int64_t layers = 1) {
    PoolConfig config;
    config.numPages = pages;
    config.pageSize = pageSize;
    config.numKVHeads = 2;
    config.headDim = 4;
    config.elementBytes = 2;
    config.numLayers = layers;
    config.memory = memory;
    pool = std::move(*PagedKVPool::create(config));
    tier = std::move(*HostTier::create(*pool, hostPages));
    cache = std::move(*RadixCache::withHostTier(*pool, *tier));
  }
  ~TierFixture() { cache.reset(); }
  /// As Fixture::insert.
  int64_t insert(const std::vector<Token> &tokens) {
    int64_t pages = static_cast<int64_t>(tokens.size()) / pool->pageSize();
    StatusOr<std::vector<PageId>> fresh = pool->allocate(pages);
    if (!fresh.ok())
      return -1;
    written(tokens, *fresh);
    int64_t present = *cache->insert(tokens, *fresh);
    std::vector<PageId> duplicate(fresh->begin(),
                                  fresh->begin() + present / pool->pageSize());
    EXPECT_TRUE(pool->release(duplicate).ok());
    return present;
  }
  /// A host pool's page k of `tokens` holds, in every layer, keys and
  /// values, bytes drawn from its prefix hash: what a model would compute
  /// for that prefix.
  void written(const std::vector<Token> &tokens,
               const std::vector<PageId> &pages) {
    if (pool->config().memory != PoolMemory::Host)
      return;
    std::vector<uint64_t> hashes = pagePrefixHashes(tokens, pool->pageSize());
    for (size_t k = 0; k < pages.size(); ++k)
      for (int64_t layer = 0; layer < pool->numLayers(); ++layer)
        for (int which = 0; which < 2; ++which)
          fillFrom(page(which, layer, pages[k]), hashes[k], layer, which);
  }
  /// Whether every device-resident page holds its prefix's bytes.
  bool contentsAreTheirPrefixes() const {
    std::vector<std::byte> expected(size_t(pool->pageBytes()));
    std::vector<const RadixCache::Node *> stack = {cache->root()};
    while (!stack.empty()) {
      const RadixCache::Node *node = stack.back();
      stack.pop_back();
      for (const auto &[key, child] : node->children)
        stack.push_back(child.get());
      for (size_t k = 0; k < node->pages.size(); ++k)
        for (int64_t layer = 0; layer < pool->numLayers(); ++layer)
          for (int which = 0; which < 2; ++which) {
            fillFrom(expected.data(), node->hashes[k], layer, which);
            if (std::memcmp(expected.data(), page(which, layer, node->pages[k]),
                            expected.size()) != 0)
              return false;
          }
    }
    return true;
  }
  std::byte *page(int which, int64_t layer, PageId id) const {
    uint64_t cache =
        which == 0 ? pool->keyCache(layer) : pool->valueCache(layer);
    return reinterpret_cast<std::byte *>(cache) + id * pool->pageBytes();
  }
  void fillFrom(std::byte *bytes, uint64_t hash, int64_t layer,
                int which) const {
    std::mt19937_64 rng(hash ^ uint64_t(layer * 2 + which));
    for (int64_t i = 0; i < pool->pageBytes(); ++i)
      bytes[i] = std::byte(rng());
  }
  std::unique_ptr<PagedKVPool> pool;
  std::unique_ptr<HostTier> tier;
  std::unique_ptr<RadixCache> cache;
};

/// Every device-resident whole-page prefix of namespace 0, as tokens: what
/// a cache without a tier would hold.
std::set<std::vector<Token>> devicePrefixes(const RadixCache &cache) {
  std::set<std::vector<Token>> prefixes;
  for (const std::vector<Token> &prefix : cachedPrefixes(cache))
    if (cache.matchLength(prefix.data(), prefix.size()) ==
        static_cast<int64_t>(prefix.size()))
      prefixes.insert(prefix);
  return prefixes;
}

std::vector<Token> iota(size_t count, Token first = 0) {
  std::vector<Token> tokens(count);
  for (size_t i = 0; i < count; ++i)
    tokens[i] = first + static_cast<Token>(i);
  return tokens;
}

} // namespace

TEST(RadixCacheHostTier, AttachesOnlyToItsOwnIdleTier) {
  TierFixture f(8, 2, 4);
  auto other = makeAccountingPool(8, 2);
  auto result = RadixCache::withHostTier(*other, *f.tier);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(result.status().message(), "the host tier belongs to another pool");
  std::vector<HostPageId> held = *f.tier->allocate(1);
  result = RadixCache::withHostTier(*f.pool, *f.tier);
  EXPECT_EQ(result.status().message(),
            "the host tier has 1 pages in use: a cache must be its only user");
  ASSERT_TRUE(f.tier->release(held).ok());
  EXPECT_EQ(f.cache->hostTier(), f.tier.get());
  EXPECT_EQ(RadixCache(*f.pool).hostTier(), nullptr);
}

// Evicted pages go to the tier; a match tells the device prefix from its
// host continuation, and a load back returns every byte of every layer.
TEST(RadixCacheHostTier, EvictedPagesLoadBackByteForByte) {
  TierFixture f(/*pages=*/16, /*pageSize=*/4, /*hostPages=*/16,
                PoolMemory::Host, /*layers=*/3);
  f.cache->recordChanges();
  std::vector<Token> tokens = iota(24); // 6 pages
  ASSERT_EQ(f.insert(tokens), 0);
  std::vector<uint64_t> hashes = pagePrefixHashes(tokens, 4);
  (void)f.cache->takeChanges();

  // Four pages from the leaf's tail: the device keeps two, the tier four.
  EXPECT_EQ(f.cache->evict(16), 16);
  EXPECT_EQ(f.cache->totalSize(), 8);
  EXPECT_EQ(f.cache->hostSize(), 16);
  EXPECT_EQ(f.pool->numFreePages(), 14);
  EXPECT_EQ(f.tier->numUsedPages(), 4);
  std::vector<PageTransfer> offloads = f.cache->takeTransfers();
  ASSERT_EQ(offloads.size(), 4u);
  for (const PageTransfer &t : offloads)
    EXPECT_EQ(t.direction, TransferDirection::Offload);
  // The journal says the four pages left the (device) cache.
  std::vector<RadixCache::PageChange> left = f.cache->takeChanges();
  ASSERT_EQ(left.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(left[k].hash, hashes[2 + k]);
    EXPECT_FALSE(left[k].added);
  }
  // Existing callers see the device only.
  EXPECT_EQ(f.cache->cachedPages(hashes, 6), 2);
  EXPECT_EQ(f.cache->hostCachedPages(hashes, 6), 4);
  EXPECT_EQ(f.cache->hostCachedPages(hashes, 5), 3);
  EXPECT_EQ(f.cache->nodeOfPage(hashes[3]), nullptr);
  EXPECT_EQ(f.cache->matchLength(tokens.data(), tokens.size()), 8);
  RadixCache::Match plain = f.cache->matchPrefix(tokens);
  EXPECT_EQ(plain.tokens, 8);
  EXPECT_EQ(plain.hostTokens, 0);
  EXPECT_EQ(plain.hostNode, nullptr);

  // The whole leaf to the tier: its device part goes too.
  EXPECT_EQ(f.cache->evict(1 << 20), 8);
  EXPECT_EQ(f.cache->totalSize(), 0);
  EXPECT_EQ(f.cache->hostSize(), 24);
  EXPECT_EQ(f.pool->numFreePages(), 16);
  // Other data over the freed device pages.
  std::vector<Token> other = iota(64, 1000);
  ASSERT_EQ(f.insert(other), 0);
  ASSERT_TRUE(f.cache->checkInvariants().ok());
  EXPECT_EQ(f.cache->totalSize(), 64);

  // Five pages of the prompt match in the tier, none on the device.
  std::vector<Token> prompt(tokens.begin(), tokens.begin() + 22);
  RadixCache::Match match =
      f.cache->matchThroughHost(prompt.data(), prompt.size());
  EXPECT_EQ(match.tokens, 0);
  EXPECT_EQ(match.node, f.cache->root());
  EXPECT_EQ(match.hostTokens, 20);
  ASSERT_NE(match.hostNode, nullptr);
  EXPECT_TRUE(match.pages.empty());
  (void)f.cache->takeTransfers();
  (void)f.cache->takeChanges();

  // Loading them back evicts five of `other`'s pages to the tier first.
  StatusOr<std::vector<PageTransfer>> loads = f.cache->loadBack(match);
  ASSERT_TRUE(loads.ok()) << loads.status().toString();
  ASSERT_EQ(loads->size(), 5u);
  EXPECT_EQ(match.tokens, 20);
  EXPECT_EQ(match.hostTokens, 0);
  ASSERT_EQ(match.pages.size(), 5u);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ((*loads)[k].direction, TransferDirection::Load);
    EXPECT_EQ((*loads)[k].devicePage, match.pages[k]);
  }
  EXPECT_TRUE(f.contentsAreTheirPrefixes());
  EXPECT_EQ(f.cache->matchPrefix(prompt).tokens, 20);
  EXPECT_EQ(f.cache->cachedPages(hashes, 6), 5);
  EXPECT_EQ(f.cache->hostCachedPages(hashes, 6), 1) << "the sixth page";
  std::vector<PageTransfer> all = f.cache->takeTransfers();
  ASSERT_EQ(all.size(), 10u) << "five offloads of other's, then the loads";
  for (size_t k = 0; k < 5; ++k)
    EXPECT_EQ(all[k].direction, TransferDirection::Offload);
  EXPECT_EQ(std::vector<PageTransfer>(all.begin() + 5, all.end()), *loads);
  size_t entered = 0;
  for (const RadixCache::PageChange &change : f.cache->takeChanges())
    entered += change.added ? 1 : 0;
  EXPECT_EQ(entered, 5u);
  // The loaded nodes are unlocked and evictable as any others.
  EXPECT_EQ(f.cache->protectedSize(), 0);
  EXPECT_EQ(f.cache->totalSize(), 64);
  EXPECT_TRUE(f.cache->checkInvariants().ok());
  // Other's tail loads back too, evicting the five pages just loaded.
  RadixCache::Match back =
      f.cache->matchThroughHost(other.data(), other.size());
  EXPECT_EQ(back.tokens, 44);
  EXPECT_EQ(back.hostTokens, 20);
  ASSERT_TRUE(f.cache->loadBack(back).ok());
  EXPECT_TRUE(f.contentsAreTheirPrefixes());
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

// A tier full of unlocked pages drops its least recently used leaves, by
// page from the tail, for each newly evicted page; one with no room at all
// (everything in it locked) drops the evicted pages as a cache without a
// tier does.
TEST(RadixCacheHostTier, AFullTierDropsItsLeastRecentlyUsedLeaves) {
  TierFixture f(/*pages=*/32, /*pageSize=*/2, /*hostPages=*/3);
  std::vector<Token> a = {1, 1, 2, 2}, b = {3, 3, 4, 4}, c = {5, 5, 6, 6};
  f.insert(a);
  f.insert(b);
  f.insert(c);
  EXPECT_EQ(f.cache->evict(4), 4); // a, whole, to the tier
  EXPECT_EQ(f.cache->evict(4), 4); // b: a's tail page gives it room
  EXPECT_EQ(f.cache->hostSize(), 6);
  EXPECT_EQ(f.tier->numFreePages(), 0);
  RadixCache::Match ma = f.cache->matchThroughHost(a.data(), a.size());
  EXPECT_EQ(ma.hostTokens, 2) << "a's first page is left";
  RadixCache::Match mb = f.cache->matchThroughHost(b.data(), b.size());
  EXPECT_EQ(mb.hostTokens, 4);
  ASSERT_TRUE(f.cache->checkInvariants().ok());

  // Locked in the tier: nothing there may go, and c is dropped outright.
  f.cache->lock(ma.hostNode);
  f.cache->lock(mb.hostNode);
  EXPECT_EQ(f.cache->evict(4), 4);
  EXPECT_EQ(f.cache->totalSize(), 0);
  EXPECT_EQ(f.cache->hostSize(), 6);
  EXPECT_EQ(f.cache->matchThroughHost(c.data(), c.size()).hostTokens, 0);
  ASSERT_TRUE(f.cache->unlock(ma.hostNode).ok());
  ASSERT_TRUE(f.cache->unlock(mb.hostNode).ok());
  ASSERT_TRUE(f.cache->checkInvariants().ok());
  EXPECT_EQ(f.pool->numFreePages(), 32);
}

// A device node whose children are all in the tier is a leaf for eviction;
// a lock on the device path pins it whatever lies below; host-resident
// nodes count in neither evictable nor protected sizes.
TEST(RadixCacheHostTier, HostNodesAndLocks) {
  TierFixture f(/*pages=*/32, /*pageSize=*/2, /*hostPages=*/32);
  std::vector<Token> base = {1, 1, 2, 2}, left = {1, 1, 2, 2, 3, 3},
                     right = {1, 1, 2, 2, 4, 4};
  f.insert(left);
  f.insert(right);
  RadixCache::Match shared = f.cache->matchPrefix(base);
  f.cache->lock(shared.node);
  EXPECT_EQ(f.cache->evict(100), 4) << "both tails, not the locked base";
  EXPECT_EQ(f.cache->protectedSize(), 4);
  EXPECT_EQ(f.cache->evictableSize(), 0);
  EXPECT_EQ(f.cache->hostSize(), 4);
  ASSERT_TRUE(f.cache->unlock(shared.node).ok());
  EXPECT_EQ(f.cache->evictableSize(), 4);
  // The base, a device node with two host children, is the leaf now.
  EXPECT_EQ(f.cache->evict(2), 2);
  EXPECT_EQ(f.cache->matchPrefix(left).tokens, 2);
  RadixCache::Match through = f.cache->matchThroughHost(left.data(), 6);
  EXPECT_EQ(through.tokens, 2);
  EXPECT_EQ(through.hostTokens, 4);
  ASSERT_TRUE(f.cache->checkInvariants().ok());

  // A host-resident node locked stays in the tier through a full eviction.
  f.cache->lock(through.hostNode);
  EXPECT_EQ(f.cache->protectedSize(), 2) << "the device part of the path";
  EXPECT_EQ(f.cache->evict(1 << 20), 0);
  EXPECT_EQ(f.cache->hostSize(), 6);
  ASSERT_TRUE(f.cache->unlock(through.hostNode).ok());
  EXPECT_EQ(f.cache->evict(1 << 20), 2);
  EXPECT_EQ(f.cache->hostSize(), 8);
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

// Load back fails cleanly: with no room on the device (nothing evicted,
// nothing loaded), with a match that no longer describes the tree, and
// without a tier.
TEST(RadixCacheHostTier, LoadBackFailsWithNothingChanged) {
  TierFixture f(/*pages=*/4, /*pageSize=*/2, /*hostPages=*/8);
  std::vector<Token> a = {1, 1, 2, 2, 3, 3};
  f.insert(a);
  EXPECT_EQ(f.cache->evict(6), 6);
  // The pool full with a locked sequence.
  std::vector<Token> b = {7, 7, 8, 8, 9, 9};
  f.insert(b);
  RadixCache::Match held = f.cache->matchPrefix(b);
  f.cache->lock(held.node);
  std::vector<PageId> extra = *f.pool->allocate(1);
  RadixCache::Match match = f.cache->matchThroughHost(a.data(), a.size());
  ASSERT_EQ(match.hostTokens, 6);
  f.cache->recordChanges();
  (void)f.cache->takeTransfers();
  StatusOr<std::vector<PageTransfer>> loads = f.cache->loadBack(match);
  ASSERT_FALSE(loads.ok());
  EXPECT_EQ(loads.status().code(), ErrorCode::OutOfMemory);
  EXPECT_EQ(loads.status().message(),
            "loading back 3 pages needs as many free or evictable device "
            "pages; the pool has 0 free and 0 evictable");
  EXPECT_EQ(match.hostTokens, 6) << "the match is as it was";
  EXPECT_EQ(f.cache->hostSize(), 6);
  EXPECT_EQ(f.cache->protectedSize(), 6);
  EXPECT_TRUE(f.cache->takeChanges().empty());
  EXPECT_TRUE(f.cache->takeTransfers().empty());
  EXPECT_TRUE(f.cache->checkInvariants().ok());

  // A copy that fails leaves the continuation in the tier.
  ASSERT_TRUE(f.cache->unlock(held.node).ok());
  ASSERT_TRUE(f.pool->release(extra).ok());
  f.tier->setFaultHook([](HostTier::Operation operation) {
    return operation == HostTier::Operation::Transfer
               ? Status::error(ErrorCode::CudaError, "injected")
               : Status();
  });
  match = f.cache->matchThroughHost(a.data(), a.size());
  loads = f.cache->loadBack(match);
  EXPECT_EQ(loads.status().message(), "injected");
  f.tier->setFaultHook(nullptr);
  EXPECT_EQ(f.cache->matchThroughHost(a.data(), a.size()).hostTokens, 6);
  EXPECT_EQ(f.pool->numUsedPages() * 2, f.cache->totalSize());
  EXPECT_TRUE(f.cache->checkInvariants().ok());

  // Stale: the continuation was loaded back by an insert of the same tokens.
  match = f.cache->matchThroughHost(a.data(), a.size());
  ASSERT_EQ(f.insert(a), 0);
  loads = f.cache->loadBack(match);
  EXPECT_EQ(loads.status().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(loads.status().message(), "the match's host-resident continuation "
                                      "is not in the cache as it was matched");

  Fixture plain;
  RadixCache::Match forged;
  forged.node = const_cast<RadixCache::Node *>(plain.cache->root());
  forged.hostTokens = 2;
  EXPECT_EQ(plain.cache->loadBack(forged).status().message(),
            "a load back needs a host tier, and none is attached");
  RadixCache::Match none = plain.cache->matchThroughHost(a.data(), a.size());
  EXPECT_TRUE(plain.cache->loadBack(none)->empty());
}

// Computing a host-resident continuation again (an insert of its tokens
// with fresh pages) makes the tree take the fresh pages, as it would
// without a tier, and give the host pages back.
TEST(RadixCacheHostTier, InsertOverHostContinuationTakesTheNewPages) {
  TierFixture f(/*pages=*/32, /*pageSize=*/2, /*hostPages=*/32);
  std::vector<Token> tokens = {1, 1, 2, 2, 3, 3, 4, 4};
  f.insert(tokens);
  EXPECT_EQ(f.cache->evict(6), 6);
  f.cache->recordChanges();
  // Ends inside the host continuation: its node splits there.
  std::vector<Token> shorter(tokens.begin(), tokens.begin() + 6);
  std::vector<PageId> fresh = *f.pool->allocate(3);
  EXPECT_EQ(*f.cache->insert(shorter, fresh), 2);
  ASSERT_TRUE(f.pool->release({fresh[0]}).ok());
  EXPECT_EQ(f.cache->matchPrefix(tokens).pages,
            (std::vector<PageId>{f.cache->matchPrefix(tokens).pages[0],
                                 fresh[1], fresh[2]}));
  EXPECT_EQ(f.cache->totalSize(), 6);
  EXPECT_EQ(f.cache->hostSize(), 2);
  EXPECT_EQ(f.tier->numUsedPages(), 1);
  EXPECT_EQ(f.cache->takeChanges().size(), 2u);
  // And past it, a new branch beside the host page.
  EXPECT_EQ(f.insert({1, 1, 2, 2, 3, 3, 9, 9}), 6);
  EXPECT_EQ(f.cache->matchThroughHost(tokens.data(), 8).hostTokens, 2);
  EXPECT_TRUE(f.cache->checkInvariants().ok());
}

// The same random inserts, matches, locks and evictions on two caches, one
// with a tier: the device holds the same prefixes in both, at every step,
// and eviction frees the same pages.
TEST(RadixCacheHostTier, DeviceContentsAreThoseOfACacheWithoutATier) {
  for (int64_t hostPages : {1, 8, 1024}) {
    Fixture plain(/*pages=*/128, /*pageSize=*/2);
    TierFixture tiered(/*pages=*/128, /*pageSize=*/2, hostPages);
    std::mt19937 rng(11 + unsigned(hostPages));
    std::vector<std::pair<RadixCache::Node *, RadixCache::Node *>> locked;
    for (int op = 0; op < 3000; ++op) {
      std::vector<Token> tokens(2 * (1 + rng() % 8));
      for (Token &token : tokens)
        token = static_cast<Token>(rng() % 3);
      switch (rng() % 6) {
      case 0:
      case 1:
        if (plain.pool->numFreePages() < 8)
          break;
        ASSERT_EQ(plain.insert(tokens), tiered.insert(tokens));
        break;
      case 2: {
        // Looking through the tier changes nothing on the device.
        ASSERT_EQ(plain.cache->matchLength(tokens.data(), tokens.size()),
                  tiered.cache->matchLength(tokens.data(), tokens.size()));
        std::vector<uint64_t> hashes = pagePrefixHashes(tokens, 2);
        ASSERT_EQ(plain.cache->cachedPages(hashes, 8),
                  tiered.cache->cachedPages(hashes, 8));
        RadixCache::Match a = plain.cache->matchPrefix(tokens);
        RadixCache::Match b =
            rng() % 2
                ? tiered.cache->matchPrefix(tokens)
                : tiered.cache->matchThroughHost(tokens.data(), tokens.size());
        ASSERT_EQ(a.tokens, b.tokens);
        ASSERT_EQ(a.pages.size(), b.pages.size());
        if (rng() % 2) {
          plain.cache->lock(a.node);
          tiered.cache->lock(b.node);
          locked.push_back({a.node, b.node});
        }
        break;
      }
      case 3:
        if (!locked.empty()) {
          size_t i = rng() % locked.size();
          ASSERT_TRUE(plain.cache->unlock(locked[i].first).ok());
          ASSERT_TRUE(tiered.cache->unlock(locked[i].second).ok());
          locked.erase(locked.begin() + ptrdiff_t(i));
        }
        break;
      default: {
        int64_t tokensAsked = 1 + rng() % 20;
        ASSERT_EQ(plain.cache->evict(tokensAsked),
                  tiered.cache->evict(tokensAsked));
        break;
      }
      }
      ASSERT_TRUE(tiered.cache->checkInvariants().ok()) << "after op " << op;
      ASSERT_EQ(cachedPrefixes(*plain.cache), devicePrefixes(*tiered.cache))
          << "after op " << op;
      ASSERT_EQ(plain.cache->evictableSize(), tiered.cache->evictableSize());
      ASSERT_EQ(plain.cache->protectedSize(), tiered.cache->protectedSize());
      ASSERT_EQ(plain.pool->numFreePages(), tiered.pool->numFreePages());
      ASSERT_LE(tiered.cache->hostSize(), hostPages * 2);
      ASSERT_EQ(tiered.tier->numUsedPages() * 2, tiered.cache->hostSize());
    }
    for (const auto &[a, b] : locked) {
      ASSERT_TRUE(plain.cache->unlock(a).ok());
      ASSERT_TRUE(tiered.cache->unlock(b).ok());
    }
  }
}

// Random inserts, matches through the tier, load backs, locks and
// evictions over a host pool: every device-resident page holds its own
// prefix's bytes in every layer, whatever trips it made, no page of either
// tier leaks, and the cache's invariants hold.
TEST(RadixCacheHostTier, RandomTripsKeepEveryByte) {
  TierFixture f(/*pages=*/48, /*pageSize=*/2, /*hostPages=*/24,
                PoolMemory::Host, /*layers=*/2);
  std::mt19937 rng(23);
  std::vector<RadixCache::Node *> locked;
  int64_t loadedBack = 0;
  for (int op = 0; op < 3000; ++op) {
    std::vector<Token> tokens(2 * (1 + rng() % 8));
    for (Token &token : tokens)
      token = static_cast<Token>(rng() % 3);
    switch (rng() % 7) {
    case 0:
    case 1:
      if (f.pool->numFreePages() < 8)
        f.cache->evict(16);
      if (f.pool->numFreePages() >= 8) {
        ASSERT_GE(f.insert(tokens), 0);
      }
      break;
    case 2:
    case 3: {
      RadixCache::Match match =
          f.cache->matchThroughHost(tokens.data(), tokens.size());
      int64_t whole = match.tokens + match.hostTokens;
      StatusOr<std::vector<PageTransfer>> loads = f.cache->loadBack(match);
      if (loads.ok()) {
        ASSERT_EQ(match.tokens, whole);
        loadedBack += static_cast<int64_t>(loads->size());
      } else {
        ASSERT_EQ(loads.status().code(), ErrorCode::OutOfMemory);
      }
      if (rng() % 2) {
        f.cache->lock(match.node);
        locked.push_back(match.node);
      }
      break;
    }
    case 4:
      if (!locked.empty()) {
        size_t i = rng() % locked.size();
        ASSERT_TRUE(f.cache->unlock(locked[i]).ok());
        locked.erase(locked.begin() + ptrdiff_t(i));
      }
      break;
    default:
      f.cache->evict(1 + rng() % 12);
      break;
    }
    ASSERT_TRUE(f.cache->checkInvariants().ok()) << "after op " << op;
    ASSERT_TRUE(f.contentsAreTheirPrefixes()) << "after op " << op;
    ASSERT_EQ(f.pool->numUsedPages() * 2, f.cache->totalSize());
    ASSERT_EQ(f.tier->numUsedPages() * 2, f.cache->hostSize());
  }
  EXPECT_GT(loadedBack, 100) << "the trips the test is about happened";
  for (RadixCache::Node *node : locked)
    ASSERT_TRUE(f.cache->unlock(node).ok());
  f.cache.reset();
  EXPECT_EQ(f.pool->numFreePages(), f.pool->numPages());
  EXPECT_EQ(f.tier->numFreePages(), f.tier->numPages());
}

// A user that drives the cache itself, for an engine whose caches are its
// own (an accounting pool), takes the journal and replays it before each
// write of its own: then every page, on the device or in the tier, holds
// in the engine's caches what the tree says, however seldom it takes it.
TEST(RadixCacheHostTier, ADirectUserReplayingTheJournalLosesNothing) {
  TierFixture f(/*pages=*/24, /*pageSize=*/2, /*hostPages=*/12);
  std::mt19937 rng(29);
  // The engine's caches: each page holds a prefix's KV, named by its hash.
  std::map<PageId, uint64_t> device;
  std::map<HostPageId, uint64_t> host;
  int64_t replayed = 0, loads = 0;
  auto replay = [&] {
    size_t pending = f.cache->numTransfers();
    std::vector<PageTransfer> transfers = f.cache->takeTransfers();
    ASSERT_EQ(transfers.size(), pending);
    EXPECT_EQ(f.cache->numTransfers(), 0u);
    for (const PageTransfer &t : transfers) {
      if (t.direction == TransferDirection::Offload) {
        ASSERT_EQ(device.count(t.devicePage), 1u) << "an unwritten page";
        host[t.hostPage] = device[t.devicePage];
      } else {
        ASSERT_EQ(host.count(t.hostPage), 1u) << "an unwritten host page";
        device[t.devicePage] = host[t.hostPage];
        ++loads;
      }
    }
    replayed += static_cast<int64_t>(transfers.size());
  };
  auto expectCachesHoldTheTree = [&] {
    std::vector<const RadixCache::Node *> stack = {f.cache->root()};
    while (!stack.empty()) {
      const RadixCache::Node *node = stack.back();
      stack.pop_back();
      for (const auto &[key, child] : node->children)
        stack.push_back(child.get());
      for (size_t k = 0; k < node->pages.size(); ++k)
        ASSERT_EQ(device[node->pages[k]], node->hashes[k]);
      for (size_t k = 0; k < node->hostPages.size(); ++k)
        ASSERT_EQ(host[node->hostPages[k]], node->hashes[k]);
    }
  };
  for (int op = 0; op < 2000; ++op) {
    std::vector<Token> tokens(2 * (1 + rng() % 6));
    for (Token &token : tokens)
      token = static_cast<Token>(rng() % 3);
    switch (rng() % 4) {
    case 0: {
      if (f.pool->numFreePages() < 6)
        f.cache->evict(12);
      int64_t count = static_cast<int64_t>(tokens.size()) / 2;
      StatusOr<std::vector<PageId>> fresh = f.pool->allocate(count);
      if (!fresh.ok())
        break;
      // Pages eviction freed may be among them: what it moved out of them
      // is replayed before the engine writes them.
      replay();
      std::vector<uint64_t> hashes = pagePrefixHashes(tokens, 2);
      for (size_t k = 0; k < fresh->size(); ++k)
        device[(*fresh)[k]] = hashes[k];
      int64_t present = *f.cache->insert(tokens, *fresh);
      ASSERT_TRUE(f.pool
                      ->release(std::vector<PageId>(
                          fresh->begin(), fresh->begin() + present / 2))
                      .ok());
      break;
    }
    case 1: {
      RadixCache::Match match =
          f.cache->matchThroughHost(tokens.data(), tokens.size());
      (void)f.cache->loadBack(match);
      break;
    }
    default:
      f.cache->evict(2 * (1 + rng() % 4));
      break;
    }
    if (rng() % 5 == 0) {
      replay();
      expectCachesHoldTheTree();
    }
    ASSERT_TRUE(f.cache->checkInvariants().ok()) << "after op " << op;
  }
  replay();
  expectCachesHoldTheTree();
  EXPECT_GT(loads, 50) << "the trips the test is about happened";
  EXPECT_GT(replayed, 2 * loads);
}

// The same trip over a device pool: offloads and loads on its stream, and
// the loaded pages hold the evicted bytes in every layer.
TEST(RadixCacheHostTier, DevicePoolLoadsBackByteForByte) {
  PoolConfig config;
  config.numPages = 8;
  config.pageSize = 4;
  config.numKVHeads = 2;
  config.headDim = 8;
  config.elementBytes = 2;
  config.numLayers = 2;
  config.memory = PoolMemory::Device;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  if (!pool.ok())
    GTEST_SKIP() << "no device pool here (" << pool.status().message() << ")";
  StatusOr<std::unique_ptr<HostTier>> tier = HostTier::create(**pool, 8);
  ASSERT_TRUE(tier.ok()) << tier.status().toString();
  std::unique_ptr<RadixCache> cache =
      std::move(*RadixCache::withHostTier(**pool, **tier));
  cuda::Driver *driver = *cuda::Driver::get();
  size_t bytes = size_t((*pool)->pageBytes());
  auto at = [&](int which, int64_t layer, PageId page) {
    return (which == 0 ? (*pool)->keyCache(layer)
                       : (*pool)->valueCache(layer)) +
           uint64_t(page) * bytes;
  };
  // written[k] holds page k's bytes, layer by layer, keys then values.
  std::vector<PageId> pages = *(*pool)->allocate(4);
  std::vector<std::vector<std::byte>> written;
  std::mt19937 rng(17);
  for (PageId page : pages)
    for (int64_t layer = 0; layer < 2; ++layer)
      for (int which = 0; which < 2; ++which) {
        std::vector<std::byte> data(bytes);
        for (std::byte &b : data)
          b = std::byte(rng());
        ASSERT_TRUE(
            driver->copyToDevice(at(which, layer, page), data.data(), bytes)
                .ok());
        written.push_back(std::move(data));
      }
  std::vector<Token> tokens = iota(16);
  ASSERT_EQ(*cache->insert(tokens, pages), 0);
  EXPECT_EQ(cache->evict(1 << 20), 16);
  // Other KV over the whole pool, then the first sequence's hit.
  std::vector<Token> other = iota(32, 100);
  std::vector<PageId> otherPages = *(*pool)->allocate(8);
  ASSERT_EQ(*cache->insert(other, otherPages), 0);
  RadixCache::Match match = cache->matchThroughHost(tokens.data(), 16);
  ASSERT_EQ(match.hostTokens, 16);
  StatusOr<std::vector<PageTransfer>> loads = cache->loadBack(match);
  ASSERT_TRUE(loads.ok()) << loads.status().toString();
  ASSERT_TRUE(driver->synchronize().ok());
  size_t k = 0;
  for (PageId page : match.pages)
    for (int64_t layer = 0; layer < 2; ++layer)
      for (int which = 0; which < 2; ++which) {
        std::vector<std::byte> back(bytes);
        ASSERT_TRUE(
            driver->copyToHost(back.data(), at(which, layer, page), bytes)
                .ok());
        EXPECT_EQ(back, written[k++]) << "page " << page << " layer " << layer;
      }
  EXPECT_TRUE(cache->checkInvariants().ok());
  cache.reset();
}
