//===- CascadePlanner.h - shared-prefix levels for decode -------*- C++ -*-===//
//
// Groups a running decode batch by the radix-tree prefixes its requests
// share, into the levels of cascade (shared-prefix) attention: each group at
// a level is a run of KV pages read once for every request in the group,
// whose partial attention states are merged afterwards. A request's own
// pages (those no other running request shares) form the last level.
//
// Every page of every request appears in exactly one group the request
// belongs to, in order: concatenating a request's groups level by level
// gives back its page list.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SCHED_CASCADEPLANNER_H
#define ATTNC_RUNTIME_SCHED_CASCADEPLANNER_H

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

CascadePlan planCascade(const RadixCache &cache,
                        const std::vector<RunningRequest> &batch);

} // namespace attnc

#endif // ATTNC_RUNTIME_SCHED_CASCADEPLANNER_H
