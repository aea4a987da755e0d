//===- CascadePlanner.cpp - shared-prefix levels for decode ---------------===//

#include "sched/CascadePlanner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

namespace attnc {

CascadePlan planCascade(const RadixCache &cache,
                        const std::vector<RunningRequest> &batch) {
  using Node = RadixCache::Node;
  // Which requests' cached prefixes pass through each node.
  std::unordered_map<const Node *, std::vector<RequestId>> through;
  for (const RunningRequest &running : batch)
    for (const Node *node = running.locked; node && node != cache.root();
         node = node->parent)
      through[node].push_back(running.request.id);
  for (auto &[node, requests] : through)
    std::sort(requests.begin(), requests.end());

  CascadePlan plan;
  std::map<RequestId, std::vector<PageId>> unshared;
  std::function<void(const Node *, CascadeGroup *, size_t)> visit =
      [&](const Node *node, CascadeGroup *group, size_t level) {
        for (const auto &[key, child] : node->children) {
          auto it = through.find(child.get());
          if (it == through.end())
            continue;
          const std::vector<RequestId> &requests = it->second;
          if (requests.size() < 2) {
            std::vector<PageId> &pages = unshared[requests.front()];
            pages.insert(pages.end(), child->pages.begin(), child->pages.end());
            visit(child.get(), nullptr, level);
            continue;
          }
          // A child shared by the same requests extends its parent's run.
          if (group && group->requests == requests) {
            group->pages.insert(group->pages.end(), child->pages.begin(),
                                child->pages.end());
            visit(child.get(), group, level);
            continue;
          }
          size_t childLevel = group ? level + 1 : 0;
          if (plan.levels.size() <= childLevel)
            plan.levels.resize(childLevel + 1);
          plan.levels[childLevel].push_back({child->pages, requests});
          // Groups are filled depth-first; hold the index, not a pointer,
          // since the level's vector may grow.
          size_t index = plan.levels[childLevel].size() - 1;
          CascadeGroup copy = plan.levels[childLevel][index];
          visit(child.get(), &copy, childLevel);
          plan.levels[childLevel][index] = std::move(copy);
        }
      };
  visit(cache.root(), nullptr, 0);

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

} // namespace attnc
