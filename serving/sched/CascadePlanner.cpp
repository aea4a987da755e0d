//===- CascadePlanner.cpp - shared-prefix levels of a step ----------------===//

#include "sched/CascadePlanner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

namespace attnc {

CascadePlan planCascade(const RadixCache &cache,
                        const std::vector<RunningRequest> &batch) {
  using Node = RadixCache::Node;
  // Which requests' cached prefixes pass through each node.
  std::unordered_map<const Node *, std::vector<RequestId>> through;
  for (const RunningRequest &running : batch)
    for (const Node *node = running.locked; node && node->parent;
         node = node->parent)
      through[node].push_back(running.request.id);
  for (auto &[node, requests] : through)
    std::sort(requests.begin(), requests.end());

  CascadePlan plan;
  std::map<RequestId, std::vector<PageId>> unshared;
  // The group a path is extending, as (level, index): groups are appended
  // while the walk goes on, so a pointer into a level would not stay valid.
  using GroupRef = std::optional<std::pair<size_t, size_t>>;
  std::function<void(const Node *, GroupRef)> visit = [&](const Node *node,
                                                          GroupRef group) {
    for (const auto &[key, child] : node->children) {
      auto it = through.find(child.get());
      if (it == through.end())
        continue;
      const std::vector<RequestId> &requests = it->second;
      if (requests.size() < 2) {
        std::vector<PageId> &pages = unshared[requests.front()];
        pages.insert(pages.end(), child->pages.begin(), child->pages.end());
        visit(child.get(), std::nullopt);
        continue;
      }
      // A child shared by the same requests extends its parent's run.
      if (group) {
        CascadeGroup &open = plan.levels[group->first][group->second];
        if (open.requests == requests) {
          open.pages.insert(open.pages.end(), child->pages.begin(),
                            child->pages.end());
          visit(child.get(), group);
          continue;
        }
      }
      size_t level = group ? group->first + 1 : 0;
      if (plan.levels.size() <= level)
        plan.levels.resize(level + 1);
      plan.levels[level].push_back({child->pages, requests});
      visit(child.get(), std::pair(level, plan.levels[level].size() - 1));
    }
  };
  for (const Node *root : cache.roots())
    visit(root, std::nullopt);

  std::vector<CascadeGroup> last;
  for (const RunningRequest &running : batch) {
    std::vector<PageId> pages = unshared[running.request.id];
    pages.insert(pages.end(), running.pages.begin() + running.ownedFrom,
                 running.pages.end());
    last.push_back({std::move(pages), {running.request.id}});
  }
  plan.levels.push_back(std::move(last));
  return plan;
}

std::vector<const RadixCache::Node *>
shareablePath(const RunningRequest &running, int64_t firstPosition,
              int64_t pageSize) {
  size_t depth = 0;
  for (const RadixCache::Node *node = running.locked; node && node->parent;
       node = node->parent)
    ++depth;
  std::vector<const RadixCache::Node *> path(depth);
  for (const RadixCache::Node *node = running.locked; node && node->parent;
       node = node->parent)
    path[--depth] = node;
  // Only pages wholly before the first row: a shared level is read without
  // a causal mask, so none of its keys may follow a row of the request.
  size_t limit = static_cast<size_t>(firstPosition / pageSize);
  size_t pages = 0, kept = 0;
  for (; kept < path.size(); ++kept) {
    const std::vector<PageId> &own = path[kept]->pages;
    if (pages + own.size() > limit ||
        pages + own.size() > running.pages.size() ||
        !std::equal(own.begin(), own.end(), running.pages.begin() + pages))
      break;
    pages += own.size();
  }
  path.resize(kept);
  return path;
}

bool cascadeOrderLess(const std::vector<const RadixCache::Node *> &a,
                      const std::vector<const RadixCache::Node *> &b) {
  return std::lexicographical_compare(
      a.begin(), a.end(), b.begin(), b.end(),
      [](const RadixCache::Node *x, const RadixCache::Node *y) {
        return x->serial < y->serial;
      });
}

namespace {

using Path = std::vector<const RadixCache::Node *>;

/// The groups of a step, found by walking its requests' paths from the
/// root: a group is a node run that the same requests go through, split
/// into contiguous runs of rows. A group's pages are the first pages of each
/// member's page table (paths are checked to be), so a group is kept as a
/// range of them, never copied until the levels are written.
class LevelPlanner {
public:
  /// usable[e]: how many nodes of paths[e] request e may share.
  LevelPlanner(const std::vector<Path> &paths, std::vector<size_t> usable,
               int64_t pageSize, const CascadeCost &cost)
      : paths_(paths), usable_(std::move(usable)), pageSize_(pageSize),
        cost_(cost), shared_(usable_.size(), 0) {}

  struct Group {
    /// Requests [first, end) of the batch, and pages [from, to) of each's
    /// page table.
    size_t first, end;
    size_t from, to;
  };

  /// Plans the groups of requests [first, end), whose paths agree up to
  /// node `depth`, which ends at page `at` of each; the pages from `from`
  /// on, held by no group of theirs yet, go to the next group down, at
  /// `level`.
  void visit(size_t depth, size_t first, size_t end, size_t from, size_t at,
             size_t level) {
    auto nodeAt = [&](size_t e, size_t d) {
      return d < usable_[e] ? paths_[e][d] : nullptr;
    };
    // Runs of consecutive requests through one next node (a group's rows
    // must be contiguous: a node whose requests are not is a group per
    // run); requests whose paths end here read [from, ...) last.
    for (size_t runFirst = first; runFirst < end;) {
      const RadixCache::Node *node = nodeAt(runFirst, depth);
      size_t runEnd = runFirst + 1;
      while (runEnd < end && nodeAt(runEnd, depth) == node)
        ++runEnd;
      if (node)
        visitRun(depth, runFirst, runEnd, from, at, level);
      runFirst = runEnd;
    }
  }

  const std::vector<std::vector<Group>> &levels() const { return levels_; }
  /// Pages of request e that its groups hold: its first ones.
  size_t shared(size_t e) const { return shared_[e]; }

private:
  /// Requests [first, end) all go through node `depth` of their paths.
  void visitRun(size_t depth, size_t first, size_t end, size_t from, size_t at,
                size_t level) {
    const Path &lead = paths_[first];
    // A node run the same requests go through is one group.
    size_t next = depth;
    for (bool same = true; same;) {
      at += lead[next]->pages.size();
      ++next;
      same = usable_[first] > next;
      for (size_t e = first + 1; same && e < end; ++e)
        same = usable_[e] > next && paths_[e][next] == lead[next];
    }
    bool worth =
        static_cast<int64_t>(level) + 1 < cost_.maxLevels &&
        static_cast<int64_t>(end - first) >= cost_.minSharers &&
        static_cast<int64_t>(at - from) * pageSize_ >= cost_.minSharedTokens;
    if (!worth) {
      visit(next, first, end, from, at, level);
      return;
    }
    if (levels_.size() <= level)
      levels_.resize(level + 1);
    levels_[level].push_back({first, end, from, at});
    for (size_t e = first; e < end; ++e)
      shared_[e] = at;
    visit(next, first, end, at, at, level + 1);
  }

  const std::vector<Path> &paths_;
  std::vector<size_t> usable_;
  int64_t pageSize_;
  CascadeCost cost_;
  std::vector<std::vector<Group>> levels_;
  std::vector<size_t> shared_;
};

} // namespace

std::vector<CascadeLevel> planCascadeLevels(const EngineBatch &batch,
                                            const std::vector<Path> &paths,
                                            int64_t pageSize,
                                            const CascadeCost &cost) {
  size_t count = batch.requests.size();
  const PageTable &table = batch.pageTable;
  // How much of each path agrees with the batch (its pages the first of
  // the request's, wholly before its first row, one page at least left):
  // what the scheduler passes does, this makes sure.
  std::vector<size_t> usable(count, 0);
  for (size_t e = 0; e < count && e < paths.size(); ++e) {
    const int32_t *pages = table.indices.data() + table.indptr[e];
    int64_t numPages = table.indptr[e + 1] - table.indptr[e];
    int64_t limit = std::min<int64_t>(
        batch.positions[size_t(batch.qoIndptr[e])] / pageSize, numPages - 1);
    int64_t at = 0;
    for (const RadixCache::Node *node : paths[e]) {
      int64_t size = static_cast<int64_t>(node->pages.size());
      if (at + size > limit ||
          !std::equal(node->pages.begin(), node->pages.end(), pages + at))
        break;
      ++usable[e];
      at += size;
    }
  }
  LevelPlanner planner(paths, std::move(usable), pageSize, cost);
  planner.visit(0, 0, count, 0, 0, 0);
  if (planner.levels().empty())
    return {};

  auto i32 = [](size_t value) { return static_cast<int32_t>(value); };
  auto pagesOf = [&](size_t e, size_t from, size_t to) {
    auto begin = table.indices.begin() + table.indptr[e];
    return std::pair(begin + ptrdiff_t(from), begin + ptrdiff_t(to));
  };
  std::vector<CascadeLevel> levels;
  std::vector<int> groupOf(count);
  for (const auto &groups : planner.levels()) {
    CascadeLevel level;
    level.qoIndptr.push_back(0);
    level.kvIndptr.push_back(0);
    std::fill(groupOf.begin(), groupOf.end(), -1);
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t e = groups[g].first; e < groups[g].end; ++e)
        groupOf[e] = static_cast<int>(g);
    // Requests of one group, or next to each other in none (a gap: no
    // pages), are one entry.
    for (size_t e = 0; e < count;) {
      int g = groupOf[e];
      while (e < count && groupOf[e] == g)
        ++e;
      level.qoIndptr.push_back(batch.qoIndptr[e]);
      if (g >= 0) {
        const auto &group = groups[size_t(g)];
        auto [begin, end] = pagesOf(group.first, group.from, group.to);
        level.kvIndices.insert(level.kvIndices.end(), begin, end);
      }
      level.kvIndptr.push_back(i32(level.kvIndices.size()));
      level.kvLastPageLen.push_back(g >= 0 ? int32_t(pageSize) : 0);
    }
    levels.push_back(std::move(level));
  }
  CascadeLevel last;
  last.qoIndptr = batch.qoIndptr;
  last.kvIndptr.push_back(0);
  last.kvIndices.reserve(table.indices.size());
  for (size_t e = 0; e < count; ++e) {
    size_t numPages = size_t(table.indptr[e + 1] - table.indptr[e]);
    auto [begin, end] = pagesOf(e, planner.shared(e), numPages);
    last.kvIndices.insert(last.kvIndices.end(), begin, end);
    last.kvIndptr.push_back(i32(last.kvIndices.size()));
  }
  last.kvLastPageLen = table.lastPageLen;
  levels.push_back(std::move(last));
  return levels;
}

} // namespace attnc
