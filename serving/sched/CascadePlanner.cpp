//===- CascadePlanner.cpp - shared-prefix levels for decode ---------------===//

#include "sched/CascadePlanner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

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

} // namespace attnc
