//===- CascadePlanner.h - shared-prefix levels of a step --------*- C++ -*-===//
//
// Groups a step's requests by the radix-tree prefixes they share, into the
// levels of cascade (shared-prefix) attention: each group at a level is a
// run of KV pages read once for every request in the group, whose partial
// attention states are merged afterwards. A request's own pages (those no
// group of it holds) form the last level.
//
// Every page of every request appears in exactly one group the request
// belongs to, in order: concatenating a request's groups level by level
// gives back its page list.
//
// planCascadeLevels writes a step's plan as FlashInfer's
// MultiLevelCascadeAttentionWrapper takes it (EngineBatch::cascade): the
// groups of a level must be contiguous runs of the step's rows, which the
// scheduler arranges by ordering its decodes, and separately its prefills,
// by cascadeOrderLess (a DFS order of the tree); a group that ordering
// cannot make contiguous (one shared by a decode and a prefill) is split
// into one group per contiguous run of its members.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SCHED_CASCADEPLANNER_H
#define ATTNC_RUNTIME_SCHED_CASCADEPLANNER_H

#include "attnc/device/abi.h"
#include "sched/Scheduler.h"

#include <vector>

namespace attnc {

struct CascadeGroup {
  std::vector<PageId> pages;
  std::vector<RequestId> requests;
};

struct CascadePlan {
  /// levels[0] holds the outermost shared prefixes; the last level holds
  /// one group per request with its unshared pages.
  std::vector<std::vector<CascadeGroup>> levels;
};

/// The plan of the running requests' whole page lists, every shared node
/// run a group (no cost rule).
CascadePlan planCascade(const RadixCache &cache,
                        const std::vector<RunningRequest> &batch);

/// The radix nodes (root's child first) of `running`'s locked prefix that a
/// step feeding it rows from `firstPosition` on may read in shared levels:
/// whole nodes, every page of them full and before that row (a shared level
/// is not causal), and their pages the first of `running.pages` (any node
/// after one that differs is left out).
std::vector<const RadixCache::Node *>
shareablePath(const RunningRequest &running, int64_t firstPosition,
              int64_t pageSize);

/// A DFS order of paths: sorted by it, the requests under any node of the
/// tree are contiguous (siblings by serial; a path before those it is a
/// prefix of).
bool cascadeOrderLess(const std::vector<const RadixCache::Node *> &a,
                      const std::vector<const RadixCache::Node *> &b);

/// When a group is worth a level of its own (SchedulerConfig::cascade*).
struct CascadeCost {
  int64_t minSharers = 2;
  int64_t minSharedTokens = 1;
  /// Levels in all, the last included: each is an attention state the
  /// kernels merge per row, and one merge takes at most this many. Groups
  /// deeper than that are read in their members' last level.
  int64_t maxLevels = limits::kMaxMergeStates;
};

/// The levels of `batch` (EngineBatch::cascade's form): paths[i] is
/// shareablePath of request i of the batch. A group is shared only if it
/// has `cost.minSharers` requests and `cost.minSharedTokens` tokens;
/// otherwise its pages go to its members' next group, or their last level.
/// Empty when nothing is shared.
std::vector<CascadeLevel> planCascadeLevels(
    const EngineBatch &batch,
    const std::vector<std::vector<const RadixCache::Node *>> &paths,
    int64_t pageSize, const CascadeCost &cost);

} // namespace attnc

#endif // ATTNC_RUNTIME_SCHED_CASCADEPLANNER_H
