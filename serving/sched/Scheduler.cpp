//===- Scheduler.cpp - cache-aware batch scheduling -----------------------===//

#include "sched/Scheduler.h"
#include "sched/CascadePlanner.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace attnc {

const char *toString(Policy policy) {
  switch (policy) {
  case Policy::FCFS:
    return "fcfs";
  case Policy::LongestPrefixMatch:
    return "lpm";
  case Policy::DFSWeight:
    return "dfs-weight";
  }
  return "?";
}

StatusOr<Policy> parsePolicy(const std::string &name) {
  for (Policy policy :
       {Policy::FCFS, Policy::LongestPrefixMatch, Policy::DFSWeight})
    if (name == toString(policy))
      return policy;
  return Status::error(ErrorCode::InvalidArgument,
                       "unknown policy '" + name +
                           "': expected fcfs, lpm or dfs-weight");
}

Status checkConfig(const SchedulerConfig &config) {
  auto bad = [](const std::string &field, const std::string &range,
                const std::string &got) {
    return Status::error(ErrorCode::InvalidArgument, "scheduler " + field +
                                                         " must be " + range +
                                                         ", got " + got);
  };
  auto ratio = [](double value) { return value >= 0 && value <= 1; };
  if (config.tokenBudget < 1)
    return bad("token budget", "at least 1",
               std::to_string(config.tokenBudget));
  if (config.maxRunning < 1)
    return bad("running limit", "at least 1",
               std::to_string(config.maxRunning));
  if (config.inFlightShareThreshold < 1 ||
      config.inFlightShareThreshold > INT32_MAX)
    return bad("in-flight share threshold", "in [1, 2147483647]",
               std::to_string(config.inFlightShareThreshold));
  if (config.agingSteps < 0)
    return bad("aging steps", "0 (never) or more",
               std::to_string(config.agingSteps));
  if (!ratio(config.initialNewTokenRatio))
    return bad("initial new-token ratio", "in [0, 1]",
               std::to_string(config.initialNewTokenRatio));
  if (!ratio(config.minNewTokenRatio) ||
      config.minNewTokenRatio > config.initialNewTokenRatio)
    return bad("minimum new-token ratio", "in [0, initial ratio]",
               std::to_string(config.minNewTokenRatio));
  if (!(config.newTokenRatioDecay >= 0 && config.newTokenRatioDecay <= 1))
    return bad("new-token ratio decay", "in [0, 1]",
               std::to_string(config.newTokenRatioDecay));
  if (config.clipMaxNewTokens < 1)
    return bad("max_tokens clip", "at least 1",
               std::to_string(config.clipMaxNewTokens));
  if (config.dfsWeightWindow < 0)
    return bad("DFS-weight window", "0 (the whole queue) or more",
               std::to_string(config.dfsWeightWindow));
  if (config.speculativeTokens < 0 || config.speculativeTokens > INT32_MAX)
    return bad("speculative tokens", "in [0 (off), 2147483647]",
               std::to_string(config.speculativeTokens));
  if (config.cascadeMinSharers < 1 || config.cascadeMinSharers > INT32_MAX)
    return bad("cascade sharers", "in [1, 2147483647]",
               std::to_string(config.cascadeMinSharers));
  if (config.cascadeMinSharedTokens < 1 ||
      config.cascadeMinSharedTokens > INT32_MAX)
    return bad("cascade shared tokens", "in [1, 2147483647]",
               std::to_string(config.cascadeMinSharedTokens));
  return Status();
}

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string sequenceName(RequestId id, int32_t branch) {
  return "request " + std::to_string(id) +
         (branch ? " branch " + std::to_string(branch) : "");
}

/// The tokens a sampler's sample and the rows verified with it give its
/// sequence: the accepted ones, up to the first stop among them.
struct Verdict {
  std::vector<Token> tokens;
  bool stop = false;
};

Verdict verdictOf(const std::vector<Sample> &samples, size_t first,
                  size_t rows) {
  Verdict verdict;
  for (size_t k = first; k < first + rows && !samples[k].rejected; ++k) {
    verdict.tokens.push_back(samples[k].token);
    if ((verdict.stop = samples[k].stop))
      break;
  }
  return verdict;
}

} // namespace

std::vector<Token> RunningRequest::sequence() const {
  std::vector<Token> tokens = request.prompt;
  tokens.insert(tokens.end(), output.begin(), output.end());
  return tokens;
}

Scheduler::Scheduler(const SchedulerConfig &config, PagedKVPool &pool,
                     RadixCache &cache)
    : config_(config), pool_(pool), cache_(cache),
      newTokenRatio_(config.initialNewTokenRatio) {
  cache_.recordChanges();
}

Scheduler::~Scheduler() {
  cache_.stopRecording();
  for (RunningRequest &running : running_)
    (void)retire(running, 0);
}

Status Scheduler::checkRequest(RequestId id, int64_t prompt, int64_t maxTokens,
                               int64_t n) const {
  std::string name = "request " + std::to_string(id);
  if (prompt < 1 || maxTokens < 1)
    return Status::error(ErrorCode::InvalidArgument,
                         name + " needs a prompt and max_tokens of at least 1");
  // A step's positions are int32: so is every sequence. (Both are positive
  // here: the difference cannot overflow.)
  if (maxTokens > INT32_MAX - prompt)
    return Status::error(ErrorCode::InvalidArgument,
                         name + ": prompt (" + std::to_string(prompt) +
                             " tokens) and max_tokens (" +
                             std::to_string(maxTokens) +
                             ") exceed 2147483647 positions");
  if (n < 1 || n > kMaxParallelSamples)
    return Status::error(ErrorCode::InvalidArgument,
                         name + " asks for " + std::to_string(n) +
                             " parallel samples: n must be in [1, " +
                             std::to_string(kMaxParallelSamples) + "]");
  if (n > config_.maxRunning)
    return Status::error(ErrorCode::InvalidArgument,
                         name + " asks for " + std::to_string(n) +
                             " parallel samples, the scheduler runs at most " +
                             std::to_string(config_.maxRunning) + " sequences");
  // The prompt once, each branch's output, and a copy of the prompt's
  // partial last page for every branch but the first.
  int64_t pageSize = pool_.pageSize();
  int64_t pages = ceilDiv(prompt + maxTokens, pageSize) +
                  (n - 1) * (ceilDiv(maxTokens, pageSize) + 1);
  if (pages > pool_.numPages())
    return Status::error(
        ErrorCode::OutOfMemory,
        name + " needs " + std::to_string(pages) +
            " pages of KV cache (prompt, and max_tokens for each of its " +
            std::to_string(n) + " samples), the pool holds " +
            std::to_string(pool_.numPages()));
  if (liveBranches_.count(id))
    return Status::error(ErrorCode::InvalidArgument,
                         name + " is queued or running already");
  return Status();
}

Status Scheduler::add(const Request &request) {
  int64_t prompt = static_cast<int64_t>(request.prompt.size());
  if (Status status =
          checkRequest(request.id, prompt, request.maxTokens, request.n);
      !status.ok())
    return status;
  Waiter waiter;
  waiter.request = request;
  waiter.promptLength = prompt;
  waiter.arrivalStep = steps_;
  liveBranches_[request.id] = request.n;
  enqueue(std::move(waiter), arrivals_++ * kMaxParallelSamples);
  return Status();
}

void Scheduler::enqueue(Waiter waiter, Arrival arrival) {
  const std::vector<Token> &tokens = waiter.request.prompt;
  waiter.hashes = pagePrefixHashes(tokens, pool_.pageSize(), -1,
                                   waiter.request.cacheNamespace);
  waiter.matchable =
      (static_cast<int64_t>(tokens.size()) - 1) / pool_.pageSize();
  followCache(); // the cache as it is now, before this waiter's first look
  waiter.cached = cache_.cachedPages(waiter.hashes, waiter.matchable);
  arrivalOf_.emplace(waiter.request.id, arrival);
  index(arrival, waiter);
  waiting_.emplace(arrival, std::move(waiter));
  admissionMayChange_ = true;
}

void Scheduler::forgetArrival(RequestId id, Arrival arrival) {
  auto [begin, end] = arrivalOf_.equal_range(id);
  for (auto it = begin; it != end; ++it)
    if (it->second == arrival) {
      arrivalOf_.erase(it);
      return;
    }
}

void Scheduler::index(Arrival arrival, const Waiter &waiter) {
  byPriority_.insert({-int64_t(waiter.request.priority), arrival});
  byCachedPages_.insert(
      {-int64_t(waiter.request.priority), -waiter.cached, arrival});
  if (waiter.cached < waiter.matchable)
    byNextPage_[waiter.hashes[size_t(waiter.cached)]].insert(arrival);
  if (waiter.cached > 0)
    byLastPage_[waiter.hashes[size_t(waiter.cached - 1)]].insert(arrival);
}

void Scheduler::unindex(Arrival arrival, const Waiter &waiter) {
  byPriority_.erase({-int64_t(waiter.request.priority), arrival});
  byCachedPages_.erase(
      {-int64_t(waiter.request.priority), -waiter.cached, arrival});
  auto drop = [arrival](std::unordered_map<uint64_t, std::set<Arrival>> &map,
                        uint64_t hash) {
    auto it = map.find(hash);
    if (it == map.end())
      return;
    it->second.erase(arrival);
    if (it->second.empty())
      map.erase(it);
  };
  if (waiter.cached < waiter.matchable)
    drop(byNextPage_, waiter.hashes[size_t(waiter.cached)]);
  if (waiter.cached > 0)
    drop(byLastPage_, waiter.hashes[size_t(waiter.cached - 1)]);
}

void Scheduler::followCache() {
  // A page entering the cache can extend the match of the waiters that
  // lack exactly it; one leaving can shorten the match of those whose
  // deepest page it was (eviction takes leaves, deepest pages first).
  std::set<Arrival> stale;
  for (const RadixCache::PageChange &change : cache_.takeChanges()) {
    auto &byPage = change.added ? byNextPage_ : byLastPage_;
    auto it = byPage.find(change.hash);
    if (it != byPage.end())
      stale.insert(it->second.begin(), it->second.end());
  }
  for (Arrival arrival : stale) {
    Waiter &waiter = waiting_.at(arrival);
    int64_t cached = cache_.cachedPages(waiter.hashes, waiter.matchable);
    if (cached == waiter.cached)
      continue;
    unindex(arrival, waiter);
    waiter.cached = cached;
    index(arrival, waiter);
  }
}

std::vector<Scheduler::Arrival> Scheduler::dfsWeightOrder() {
  // Weight of a node: waiting requests whose match ends in its subtree.
  // Visiting heavier subtrees first keeps requests that share a prefix
  // together, in a depth-first order of the tree.
  //
  // Linear in the queue: the tree is touched and split where the waiters'
  // matches end once per distinct deepest page (as matching every waiter
  // again would), each waiter is filed under the node its match ends at
  // (the node of its deepest cached page, or its namespace's root), and
  // only the nodes on those paths are visited, each once: O(waiters +
  // path nodes), plus sorting each visited node's visited children.
  touchWaitingPrefixes();
  using Node = RadixCache::Node;
  struct Mark {
    std::vector<Arrival> own;
    std::vector<const Node *> children;
    int64_t weight = 0;
    bool linked = false;
  };
  std::unordered_map<const Node *, Mark> marks;
  std::vector<const Node *> ends;
  // The window: the first dfsWeightWindow waiters by priority, then
  // arrival (all of them when 0); visitInOrder follows with the rest.
  size_t window = config_.dfsWeightWindow > 0 ? size_t(config_.dfsWeightWindow)
                                              : waiting_.size();
  size_t filed = 0;
  for (const auto &[negPriority, arrival] : byPriority_) {
    if (filed++ == window)
      break;
    ++orderOperations_;
    const Waiter &waiter = waiting_.at(arrival);
    const Node *node =
        waiter.cached > 0
            ? cache_.nodeOfPage(waiter.hashes[size_t(waiter.cached - 1)])
            : cache_.findRoot(waiter.request.cacheNamespace);
    if (!node)
      node = cache_.root();
    Mark &mark = marks[node];
    if (mark.own.empty())
      ends.push_back(node);
    mark.own.push_back(arrival);
  }
  // Link every end to the root, stopping where an earlier path joined.
  for (const Node *node : ends)
    for (; node->parent; node = node->parent) {
      ++orderOperations_;
      Mark &mark = marks[node];
      if (mark.linked)
        break;
      mark.linked = true;
      marks[node->parent].children.push_back(node);
    }
  std::vector<const Node *> roots;
  for (const Node *root : cache_.roots())
    if (marks.count(root))
      roots.push_back(root);
  // Weights bottom-up: a pre-order, read backwards.
  std::vector<const Node *> preorder(roots.rbegin(), roots.rend());
  for (size_t i = 0; i < preorder.size(); ++i) {
    ++orderOperations_;
    const Mark &mark = marks.at(preorder[i]);
    preorder.insert(preorder.end(), mark.children.begin(), mark.children.end());
  }
  for (auto it = preorder.rbegin(); it != preorder.rend(); ++it) {
    Mark &mark = marks.at(*it);
    mark.weight += static_cast<int64_t>(mark.own.size());
    if ((*it)->parent)
      marks.at((*it)->parent).weight += mark.weight;
  }
  // Heavier children first, ties in the tree's (first page) order; a
  // node's own requests after its subtree: deeper matches first.
  int64_t pageSize = cache_.pageSize();
  auto sortChildren = [&](Mark &mark) {
    std::sort(mark.children.begin(), mark.children.end(),
              [&](const Node *a, const Node *b) {
                ++orderOperations_;
                int64_t wa = marks.at(a).weight, wb = marks.at(b).weight;
                if (wa != wb)
                  return wa > wb;
                return std::lexicographical_compare(
                    a->key.begin(), a->key.begin() + pageSize, b->key.begin(),
                    b->key.begin() + pageSize);
              });
  };
  std::vector<Arrival> ordered;
  ordered.reserve(std::min(window, waiting_.size()));
  std::vector<std::pair<const Node *, size_t>> stack;
  for (const Node *root : roots) {
    sortChildren(marks.at(root));
    stack.push_back({root, 0});
    while (!stack.empty()) {
      ++orderOperations_;
      auto [node, next] = stack.back();
      Mark &mark = marks.at(node);
      if (next < mark.children.size()) {
        ++stack.back().second;
        const Node *child = mark.children[next];
        sortChildren(marks.at(child));
        stack.push_back({child, 0});
        continue;
      }
      ordered.insert(ordered.end(), mark.own.begin(), mark.own.end());
      stack.pop_back();
    }
  }
  // Priorities first; the tree's order within each.
  if (!byPriority_.empty() &&
      byPriority_.begin()->first != byPriority_.rbegin()->first) {
    std::vector<std::pair<int64_t, Arrival>> keyed;
    keyed.reserve(ordered.size());
    for (Arrival arrival : ordered)
      keyed.push_back(
          {-int64_t(waiting_.at(arrival).request.priority), arrival});
    std::stable_sort(
        keyed.begin(), keyed.end(),
        [](const auto &a, const auto &b) { return a.first < b.first; });
    for (size_t i = 0; i < keyed.size(); ++i)
      ordered[i] = keyed[i].second;
  }
  return ordered;
}

void Scheduler::touchWaitingPrefixes() {
  // As if every waiting request were matched again in arrival order: each
  // cached prefix a waiter reads is split where the match ends and made as
  // recent as the latest waiter that reads it, so that eviction takes
  // what nobody waits for first. One touch per distinct deepest page.
  std::vector<std::pair<Arrival, uint64_t>> latest;
  for (const auto &[hash, arrivals] : byLastPage_)
    latest.push_back({*arrivals.rbegin(), hash});
  std::sort(latest.begin(), latest.end());
  for (const auto &[arrival, hash] : latest)
    cache_.touchPrefix(hash);
}

std::vector<Scheduler::Arrival> Scheduler::prepareOrder() {
  followCache();
  if (config_.policy == Policy::DFSWeight)
    return dfsWeightOrder(); // touches as the others do
  touchWaitingPrefixes();
  return {};
}

void Scheduler::visitInOrder(const std::vector<Arrival> &dfsOrder,
                             const std::function<bool(Arrival)> &visit) {
  // The aged first, oldest first: a prefix of the arrival order.
  for (const auto &[arrival, waiter] : waiting_) {
    if (!aged(waiter))
      break;
    if (!visit(arrival))
      return;
  }
  auto fresh = [&](Arrival arrival) { return !aged(waiting_.at(arrival)); };
  switch (config_.policy) {
  case Policy::FCFS:
    for (const auto &[negPriority, arrival] : byPriority_)
      if (fresh(arrival) && !visit(arrival))
        return;
    return;
  case Policy::LongestPrefixMatch:
    for (const auto &[negPriority, negCached, arrival] : byCachedPages_)
      if (fresh(arrival) && !visit(arrival))
        return;
    return;
  case Policy::DFSWeight: {
    for (Arrival arrival : dfsOrder)
      if (fresh(arrival) && !visit(arrival))
        return;
    // Past the window, by priority and arrival.
    auto rest = byPriority_.begin();
    for (size_t k = 0; k < dfsOrder.size() && rest != byPriority_.end(); ++k)
      ++rest;
    for (; rest != byPriority_.end(); ++rest)
      if (fresh(rest->second) && !visit(rest->second))
        return;
    return;
  }
  }
}

std::vector<size_t> Scheduler::order() {
  std::map<Arrival, size_t> position;
  for (const auto &[arrival, waiter] : waiting_)
    position.emplace(arrival, position.size());
  std::vector<size_t> indices;
  visitInOrder(prepareOrder(), [&](Arrival arrival) {
    indices.push_back(position.at(arrival));
    return true;
  });
  return indices;
}

bool Scheduler::waitsForInFlight(const Waiter &waiter) const {
  // The pages of the waiter's prompt past its cached prefix that running
  // requests are computing: a prefix of them, as hashes are of prefixes.
  int64_t pageSize = cache_.pageSize();
  int64_t known = waiter.cached;
  while (known < waiter.matchable &&
         inFlight_.count(waiter.hashes[size_t(known)]))
    ++known;
  int64_t sharedPages = ceilDiv(config_.inFlightShareThreshold, pageSize);
  if (known - waiter.cached >= std::max<int64_t>(sharedPages, 1))
    return true;
  // A running request whose whole sequence so far is where the waiter's
  // prompt goes (a conversation's next turn queued while the answer it
  // quotes is being generated) is still computing that prompt: wait while
  // what it produced matches, so that the answer is read from the cache.
  if (known >= waiter.matchable)
    return false;
  auto it = frontiers_.find(
      known > 0 ? waiter.hashes[size_t(known - 1)]
                : emptyPrefixHash(waiter.request.cacheNamespace));
  if (it == frontiers_.end())
    return false;
  const std::vector<Token> &prompt = waiter.request.prompt;
  for (size_t index : it->second) {
    const RunningRequest &running = running_[index];
    int64_t to = running.length();
    if (to >= static_cast<int64_t>(prompt.size()) ||
        running.request.cacheNamespace != waiter.request.cacheNamespace)
      continue;
    bool matches = true;
    for (int64_t position = known * pageSize; position < to && matches;
         ++position)
      matches = running.tokenAt(position) == prompt[size_t(position)];
    if (matches)
      return true;
  }
  return false;
}

uint64_t RunningRequest::frontier() const {
  return hashes.empty() ? emptyPrefixHash(request.cacheNamespace)
                        : hashes.back();
}

void Scheduler::findFrontiers() {
  frontiers_.clear();
  for (size_t i = 0; i < running_.size(); ++i)
    frontiers_[running_[i].frontier()].push_back(i);
}

Status Scheduler::allocateFor(RunningRequest &running, int64_t pages) {
  int64_t missing = pages - pool_.numFreePages();
  if (missing > 0)
    totals_.evictedTokens += cache_.evict(missing * pool_.pageSize());
  StatusOr<std::vector<PageId>> allocated = pool_.allocate(pages);
  if (!allocated.ok())
    return Status::error(ErrorCode::Internal,
                         "admission promised memory eviction could not free: " +
                             allocated.status().message());
  running.pages.insert(running.pages.end(), allocated->begin(),
                       allocated->end());
  return Status();
}

StatusOr<bool> Scheduler::admit(StepStats &stats, int64_t &budget,
                                std::vector<Fed> &fed) {
  std::vector<Arrival> dfsOrder = prepareOrder();
  findFrontiers();
  int64_t pageSize = pool_.pageSize();
  auto forUnlockedPages = [&](const Waiter &waiter, auto &&visit) {
    visitUnlockedPages(waiter, visit);
  };
  // Unlocked prefixes that waiting requests match are about to be read:
  // spending them on another request would only compute them again. They
  // count as available only when nothing runs, which could otherwise stall.
  // Every waiter with the same deepest page has the same path: one walk
  // each, stopping where an earlier walk went.
  std::unordered_set<uint64_t> wanted;
  if (config_.protectWaitingPrefixes && !running_.empty())
    for (const auto &[hash, arrivals] : byLastPage_)
      forUnlockedPages(waiting_.at(*arrivals.begin()), [&](uint64_t page) {
        return wanted.insert(page).second;
      });
  int64_t available = cache_.evictableSize() -
                      static_cast<int64_t>(wanted.size()) * pageSize +
                      pool_.numFreePages() * pageSize - reservedOutputTokens();
  // Running sequences, each request's branches to fork counted.
  int64_t sequences = 0;
  for (const RunningRequest &running : running_)
    sequences += running.request.n;
  std::vector<Arrival> admitted;
  struct Allocation {
    size_t index; // in running_
    int64_t pages, prefilled, extend;
    bool preempted;
  };
  std::vector<Allocation> allocations;
  bool retry = false;
  std::vector<std::pair<Arrival, int64_t>> misfiled; // arrival, cached pages
  // Admits one waiter; false stops the pass.
  auto admitOne = [&](Arrival arrival) {
    if (sequences + waiting_.at(arrival).request.n > config_.maxRunning ||
        budget <= 0) {
      retry = true;
      return false;
    }
    const Waiter &waiter = waiting_.at(arrival);
    const Request &request = waiter.request;
    int64_t length = static_cast<int64_t>(request.prompt.size());
    int64_t needed = pagesNeeded(waiter);
    // A request waiting for KV in flight keeps its place in the order: the
    // memory it will need is not given to requests behind it.
    if (waitsForInFlight(waiter)) {
      // What it waits for changes with every token generated: look again
      // at the next step.
      retry = true;
      available -= needed * pageSize;
      // Every request needs a page at least: with less left the pass is
      // over (the cap and the budget, checked first, have not changed).
      return available >= pageSize;
    }
    // Locking the prefix takes its unlocked part out of what eviction can
    // free. A request that outranks a running one may spend the prefixes
    // other waiters match (preemptForPriority counted them available to
    // it); what it takes is taken from what the others may spend, which
    // leaves theirs conservative.
    bool outranks = priorityAdmission_ && *priorityAdmission_ == arrival;
    int64_t pinned = 0;
    forUnlockedPages(waiter, [&](uint64_t page) {
      pinned += wanted.count(page) && !outranks ? 0 : pageSize;
      return true;
    });
    int64_t wantedTokens = static_cast<int64_t>(wanted.size()) * pageSize;
    if (pinned + needed * pageSize > available + (outranks ? wantedTokens : 0))
      return false;
    available -= pinned + needed * pageSize;
    // The pages of its prompt the host tier continues its cached prefix
    // with are loaded back, not computed: their device pages come out of
    // `needed` as the prompt's own would.
    int64_t host = cache_.hostCachedPages(waiter.hashes, waiter.matchable);
    RadixCache::Match match = cache_.matchThroughHost(
        request.prompt.data(), size_t((waiter.cached + host) * pageSize),
        request.cacheNamespace);
    if (match.tokens != waiter.cached * pageSize) {
      // Two prefixes of one page hash (a collision): the tree is right.
      // The waiter is filed again after the pass and tried at the next.
      available += pinned + needed * pageSize;
      misfiled.push_back({arrival, match.tokens / pageSize});
      return true;
    }
    // A load that fails (the tier's copy) leaves the continuation in the
    // tier: the prompt computes it instead, in pages of its own. What a
    // load evicts to make room is what left the device beyond what it
    // brought in.
    int64_t hostTokens = match.hostTokens;
    int64_t deviceTokens = cache_.totalSize();
    bool loaded = cache_.loadBack(match).ok();
    if (loaded)
      totals_.hostLoadedTokens += hostTokens;
    totals_.evictedTokens +=
        deviceTokens + (loaded ? hostTokens : 0) - cache_.totalSize();
    cache_.lock(match.node);
    // Pages for what the prefill computes now; the room its output needs
    // is allocated as decode reaches it.
    int64_t pages = ceilDiv(length, pageSize) - match.tokens / pageSize;

    RunningRequest running;
    running.request = request;
    running.branch = waiter.branch;
    running.request.prompt.resize(size_t(waiter.promptLength));
    running.output.assign(request.prompt.begin() + waiter.promptLength,
                          request.prompt.end());
    running.pages = match.pages;
    running.ownedFrom = running.pages.size();
    running.locked = match.node;
    running.cachedTokens = match.tokens;
    running.prefillEnd = length;
    int64_t extend = length - match.tokens;
    int64_t now = std::min(extend, budget);
    running.fed = match.tokens + now;
    running.computed = match.tokens;
    running.admission = admissions_++;
    running.incarnation = running.admission;
    running.arrival = arrival - uint64_t(waiter.branch);
    running.arrivalStep = waiter.arrivalStep;
    budget -= now;
    stats.prefillTokens += now;
    stats.admitted.push_back(request.id);

    running.recomputing = waiter.preempted();
    (running.recomputing ? totals_.recomputedTokens
                         : totals_.computedPrefillTokens) += now;
    if (!running.recomputing) {
      totals_.promptTokens += length;
      totals_.cachedTokens += match.tokens;
    }
    // What the request computes: the tokens it prefills, then its output's
    // pages as they are sampled.
    running.hashes = waiter.hashes;
    inFlight_.insert(running.hashes.begin(), running.hashes.end());

    sequences += request.n;
    running_.push_back(std::move(running));
    // Later waiters of this pass see what it computes.
    frontiers_[running_.back().frontier()].push_back(running_.size() - 1);
    allocations.push_back(
        {running_.size() - 1, pages, now, extend, waiter.preempted()});
    fed.push_back({running_.size() - 1, match.tokens, now});
    admitted.push_back(arrival);
    return true;
  };
  visitInOrder(dfsOrder, admitOne);
  for (auto [arrival, cached] : misfiled) {
    Waiter &waiter = waiting_.at(arrival);
    unindex(arrival, waiter);
    waiter.cached = cached;
    index(arrival, waiter);
  }

  std::vector<std::pair<Arrival, Waiter>> taken;
  for (Arrival arrival : admitted) {
    auto it = waiting_.find(arrival);
    forgetArrival(it->second.request.id, arrival);
    unindex(arrival, it->second);
    taken.emplace_back(arrival, std::move(it->second));
    waiting_.erase(it);
  }
  for (size_t k = 0; k < allocations.size(); ++k) {
    Status status =
        allocateFor(running_[allocations[k].index], allocations[k].pages);
    if (status.ok())
      continue;
    // Admission promised memory that eviction could not free (a bug): the
    // requests not given theirs go back to the queue as they were.
    for (size_t j = allocations.size(); j-- > k;) {
      const Allocation &a = allocations[j];
      RunningRequest &running = running_[a.index];
      (void)cache_.unlock(running.locked);
      withdrawInFlight(running);
      (a.preempted ? totals_.recomputedTokens
                   : totals_.computedPrefillTokens) -= a.prefilled;
      if (!a.preempted) {
        totals_.promptTokens -= running.prefillEnd;
        totals_.cachedTokens -= running.cachedTokens;
      }
      stats.prefillTokens -= a.prefilled;
      budget += a.prefilled;
      running_.erase(running_.begin() + static_cast<ptrdiff_t>(a.index));
      fed.pop_back();
      stats.admitted.pop_back();
      auto &[arrival, waiter] = taken[j];
      arrivalOf_.emplace(waiter.request.id, arrival);
      index(arrival, waiter);
      waiting_.emplace(arrival, std::move(waiter));
    }
    return status;
  }
  return retry;
}

int64_t Scheduler::reservedOutputTokens() const {
  int64_t pageSize = pool_.pageSize();
  int64_t reserved = 0;
  for (const RunningRequest &running : running_) {
    int64_t produced = running.known() - int64_t(running.request.prompt.size());
    int64_t left = std::min(running.request.maxTokens - produced,
                            config_.clipMaxNewTokens);
    int64_t output =
        static_cast<int64_t>(std::ceil(newTokenRatio_ * double(left)));
    int64_t have = static_cast<int64_t>(running.pages.size()) * pageSize;
    reserved += std::max<int64_t>(
        0, ceilDiv(running.known() + output, pageSize) * pageSize - have);
    // Branches not forked yet: their outputs, and each a copy of the
    // prompt's partial page.
    reserved += int64_t(running.request.n - 1) *
                (ceilDiv(output, pageSize) + 1) * pageSize;
  }
  return reserved;
}

void Scheduler::visitUnlockedPages(
    const Waiter &waiter, const std::function<bool(uint64_t)> &visit) const {
  // Deepest first; a locked page's ancestors are locked too.
  for (int64_t page = waiter.cached - 1; page >= 0; --page) {
    uint64_t hash = waiter.hashes[size_t(page)];
    const RadixCache::Node *node = cache_.nodeOfPage(hash);
    if (!node || node->lockRef > 0 || !visit(hash))
      return;
  }
}

int64_t Scheduler::pagesNeeded(const Waiter &waiter) const {
  int64_t pageSize = pool_.pageSize();
  const Request &request = waiter.request;
  int64_t length = static_cast<int64_t>(request.prompt.size());
  int64_t outputSoFar = length - waiter.promptLength;
  // Its uncached prompt, and room for the output the new-token ratio
  // expects; branches yet to fork expect their outputs too, and copies of
  // the prompt's partial last page.
  int64_t expectedOutput = static_cast<int64_t>(
      std::ceil(newTokenRatio_ *
                static_cast<double>(std::min(request.maxTokens - outputSoFar,
                                             config_.clipMaxNewTokens))));
  return ceilDiv(length + expectedOutput, pageSize) - waiter.cached +
         int64_t(request.n - 1) * (ceilDiv(expectedOutput, pageSize) + 1);
}

std::optional<size_t> Scheduler::preemptionVictim(int64_t below) const {
  std::optional<size_t> victim;
  for (size_t j = 0; j < running_.size(); ++j) {
    const RunningRequest &a = running_[j];
    if (a.request.priority >= below)
      continue;
    if (!victim || std::pair(-a.request.priority, a.admission) >
                       std::pair(-running_[*victim].request.priority,
                                 running_[*victim].admission))
      victim = j;
  }
  return victim;
}

Status Scheduler::preemptForPriority(StepStats &stats) {
  priorityAdmission_.reset();
  if (waiting_.empty() || running_.empty())
    return Status();
  followCache();
  // The waiter admission would try first among the highest priority.
  Arrival arrival = config_.policy == Policy::LongestPrefixMatch
                        ? std::get<2>(*byCachedPages_.begin())
                        : byPriority_.begin()->second;
  const Waiter &waiter = waiting_.at(arrival);
  int32_t priority = waiter.request.priority;
  if (!preemptionVictim(priority))
    return Status(); // it outranks nobody
  int64_t sequences = 0;
  for (const RunningRequest &running : running_)
    sequences += running.request.n;
  findFrontiers();
  // Held back by the running cap or by KV it waits for, not by pages.
  if (sequences + waiter.request.n > config_.maxRunning ||
      waitsForInFlight(waiter))
    return Status();
  priorityAdmission_ = arrival;
  int64_t pageSize = pool_.pageSize();
  auto shortfall = [&] {
    int64_t pinned = 0;
    visitUnlockedPages(waiter, [&](uint64_t) {
      pinned += pageSize;
      return true;
    });
    return pinned + pagesNeeded(waiter) * pageSize -
           (cache_.evictableSize() + pool_.numFreePages() * pageSize -
            reservedOutputTokens());
  };
  while (shortfall() > 0) {
    std::optional<size_t> victim = preemptionVictim(priority);
    if (!victim)
      break;
    stats.preempted.push_back(running_[*victim].request.id);
    if (Status status = preempt(*victim); !status.ok())
      return status;
    admissionMayChange_ = true;
  }
  return Status();
}

Status Scheduler::growDecodes(StepStats &stats) {
  int64_t pageSize = pool_.pageSize();
  for (size_t i = 0; i < running_.size();) {
    RunningRequest &running = running_[i];
    // Its next token and its drafts.
    int64_t feeds = 1 + static_cast<int64_t>(running.drafts.size());
    bool needsPage = decodesNext(running) &&
                     running.fed + feeds >
                         static_cast<int64_t>(running.pages.size()) * pageSize;
    if (!needsPage) {
      ++i;
      continue;
    }
    if (pool_.numFreePages() == 0)
      totals_.evictedTokens += cache_.evict(pageSize);
    if (pool_.numFreePages() > 0) {
      StatusOr<std::vector<PageId>> page = pool_.allocate(1);
      if (!page.ok())
        return page.status();
      running.pages.push_back(page->front());
      continue; // drafts may need more
    }
    // Nothing left to evict: the latest-admitted request of the lowest
    // priority goes back to the queue (vLLM's recompute preemption), this
    // one possibly.
    size_t victim = *preemptionVictim(INT64_MAX);
    stats.preempted.push_back(running_[victim].request.id);
    if (Status status = preempt(victim); !status.ok())
      return status;
    if (victim < i)
      --i;
  }
  return Status();
}

Status Scheduler::preempt(size_t index) {
  RunningRequest &running = running_[index];
  // The waiter is made first (a copy: what can throw comes before any
  // change), and retire is all or nothing: an error leaves the request
  // running as it was.
  bool awaitsSample = running.pendingSamples > 0;
  Waiter waiter = awaitsSample ? Waiter() : continuation(running);
  Arrival arrival = running.arrival + uint64_t(running.branch);
  // What committed steps computed stays in the cache, unlocked: its
  // recomputation reads whatever eviction leaves of it. The KV of a step
  // still uncommitted is given up with its pages: those go only to steps
  // formed from now on, which run after it.
  if (Status status = retire(running, running.computed); !status.ok())
    return status;
  // A sample on its way is output like any other: the request rejoins the
  // queue with it, at the commit that brings it.
  if (awaitsSample) {
    running.pages.clear(); // its prefix's, unlocked: the cache's to evict
    running.locked = nullptr;
    parked_.push_back(std::move(running));
  }
  running_.erase(running_.begin() + static_cast<ptrdiff_t>(index));
  ++totals_.preemptions;
  newTokenRatio_ = config_.initialNewTokenRatio;
  if (!awaitsSample)
    enqueue(std::move(waiter), arrival);
  return Status();
}

Status Scheduler::checkHolds(const RunningRequest &running) const {
  auto broken = [&](const std::string &what) {
    return Status::error(ErrorCode::Internal,
                         "request " + std::to_string(running.request.id) +
                             " branch " + std::to_string(running.branch) +
                             ": " + what);
  };
  auto inUse = [&](PageId page) {
    return page >= 0 && page < pool_.numPages() && pool_.refCount(page) > 0;
  };
  for (size_t i = running.ownedFrom; i < running.pages.size(); ++i)
    if (!inUse(running.pages[i]))
      return broken("holds page " + std::to_string(running.pages[i]) +
                    ", which the pool has free");
  for (PageId page : running.forkPages)
    if (!inUse(page))
      return broken("reserved page " + std::to_string(page) +
                    ", which the pool has free");
  if (!running.locked)
    return broken("locks no prefix");
  for (const RadixCache::Node *node = running.locked; node->parent;
       node = node->parent)
    if (node->lockRef <= 0)
      return broken("its prefix is not locked");
  return Status();
}

Scheduler::Waiter Scheduler::continuation(RunningRequest running) const {
  Waiter waiter;
  waiter.promptLength = static_cast<int64_t>(running.request.prompt.size());
  waiter.branch = running.branch;
  waiter.request = std::move(running.request);
  waiter.request.prompt.insert(waiter.request.prompt.end(),
                               running.output.begin(), running.output.end());
  waiter.arrivalStep = running.arrivalStep;
  return waiter;
}

Status Scheduler::cacheComputed(RunningRequest &running, int64_t tokens,
                                std::vector<PageId> alsoRelease) {
  // Everything is read and checked first and the pool's release, which is
  // all or nothing, goes before any change: the cache's steps after it
  // cannot fail.
  int64_t pageSize = pool_.pageSize();
  int64_t full = tokens / pageSize;
  bool inserts = full > static_cast<int64_t>(running.ownedFrom);
  CacheNamespace space = running.request.cacheNamespace;
  std::vector<Token> cached;
  if (inserts) {
    cached = running.sequence();
    cached.resize(size_t(full * pageSize));
    // Pages someone else cached meanwhile are the tree's: drop our copies.
    size_t presentPages = static_cast<size_t>(
        cache_.matchLength(cached.data(), cached.size(), space) / pageSize);
    if (presentPages > running.ownedFrom)
      alsoRelease.insert(alsoRelease.end(),
                         running.pages.begin() + running.ownedFrom,
                         running.pages.begin() + presentPages);
  }
  for (const RadixCache::Node *node = running.locked; node && node->parent;
       node = node->parent)
    if (node->lockRef <= 0)
      return Status::error(ErrorCode::Internal,
                           "request " + std::to_string(running.request.id) +
                               ": its prefix is not locked");
  if (!alsoRelease.empty())
    if (Status status = pool_.release(alsoRelease); !status.ok())
      return status;
  if (!inserts)
    return Status();
  std::vector<PageId> pages(running.pages.begin(),
                            running.pages.begin() + full);
  // Cannot fail: there are exactly the pages' tokens.
  (void)cache_.insert(cached, pages, space);
  RadixCache::Match match = cache_.matchPrefix(cached, space);
  std::copy(match.pages.begin(), match.pages.end(), running.pages.begin());
  running.ownedFrom = static_cast<size_t>(full);
  cache_.lock(match.node);
  (void)cache_.unlock(running.locked); // checked above
  running.locked = match.node;
  return Status();
}

Status Scheduler::retire(RunningRequest &running, int64_t computed) {
  // Every page after the cached whole pages returns with the duplicates,
  // in cacheComputed's one release.
  size_t kept = std::max(running.ownedFrom,
                         static_cast<size_t>(computed / pool_.pageSize()));
  kept = std::min(kept, running.pages.size());
  std::vector<PageId> release(running.pages.begin() + kept,
                              running.pages.end());
  release.insert(release.end(), running.forkPages.begin(),
                 running.forkPages.end());
  if (Status status = cacheComputed(running, computed, std::move(release));
      !status.ok())
    return status;
  running.pages.resize(running.ownedFrom);
  running.forkPages.clear();
  withdrawInFlight(running);
  (void)cache_.unlock(running.locked); // locked by cacheComputed, or checked
  return Status();
}

Status Scheduler::reserveForkPages(const std::vector<Fed> &fed) {
  int64_t pageSize = pool_.pageSize();
  for (const Fed &f : fed) {
    RunningRequest &running = running_[f.index];
    int64_t length = running.length();
    if (running.request.n <= 1 || f.begin + f.count != length ||
        length % pageSize == 0)
      continue;
    // The branches' copies of the partial last page; those that find no
    // page are computed again from the cache (fork).
    int64_t wanted = running.request.n - 1;
    int64_t missing = wanted - pool_.numFreePages();
    if (missing > 0)
      totals_.evictedTokens += cache_.evict(missing * pageSize);
    int64_t count = std::min(wanted, pool_.numFreePages());
    if (count == 0)
      continue;
    StatusOr<std::vector<PageId>> pages = pool_.allocate(count);
    if (!pages.ok())
      return pages.status();
    running.forkPages = std::move(*pages);
  }
  return Status();
}

void Scheduler::fork(size_t index) {
  int32_t n = running_[index].request.n;
  running_[index].request.n = 1;
  std::vector<PageId> reserved = std::move(running_[index].forkPages);
  running_[index].forkPages.clear();
  size_t used = 0;
  for (int32_t branch = 1; branch < n; ++branch) {
    const RunningRequest &parent = running_[index];
    RunningRequest child = parent;
    child.branch = branch;
    child.admission = admissions_++; // the incarnation stays the parent's
    child.pages.resize(parent.ownedFrom);
    bool partial = parent.pages.size() > parent.ownedFrom;
    if (partial && used == reserved.size()) {
      // No page to copy into: the branch is computed again from the
      // cache once it has its first token (commit queues it).
      unforked_.push_back(std::move(child));
      continue;
    }
    if (partial)
      child.pages.push_back(reserved[used++]); // copied by commit
    cache_.lock(child.locked);
    inFlight_.insert(child.hashes.begin(), child.hashes.end());
    running_.push_back(std::move(child));
  }
  // The step reserves exactly the copies a partial page needs; should the
  // two ever disagree, what is left over goes back rather than leaking.
  if (used < reserved.size())
    (void)pool_.release(std::vector<PageId>(
        reserved.begin() + static_cast<ptrdiff_t>(used), reserved.end()));
}

void Scheduler::withdrawInFlight(const RunningRequest &running) {
  for (uint64_t hash : running.hashes)
    inFlight_.erase(inFlight_.find(hash));
}

Status Scheduler::abort(RequestId id) {
  if (!liveBranches_.count(id))
    return Status::error(ErrorCode::NotFound,
                         "request " + std::to_string(id) +
                             " is neither queued nor running");
  liveBranches_.erase(id);
  auto [begin, end] = arrivalOf_.equal_range(id);
  for (auto it = begin; it != end; ++it) {
    auto waiter = waiting_.find(it->second);
    unindex(waiter->first, waiter->second);
    waiting_.erase(waiter);
  }
  arrivalOf_.erase(id);
  parked_.erase(std::remove_if(parked_.begin(), parked_.end(),
                               [id](const RunningRequest &parked) {
                                 return parked.request.id == id;
                               }),
                parked_.end());
  Status result;
  std::vector<RunningRequest> stillRunning;
  for (RunningRequest &running : running_) {
    if (running.request.id != id) {
      stillRunning.push_back(std::move(running));
      continue;
    }
    // Nothing it computed is cached beyond what its prompt chunks put
    // there.
    Status retired = retire(running, 0);
    if (result.ok())
      result = retired;
  }
  running_ = std::move(stillRunning);
  // Its memory and the prefixes it held may admit others now; a request
  // the queue's head could not fit may have been blocking it.
  admissionMayChange_ = true;
  return result;
}

EngineBatch Scheduler::batchOf(const std::vector<Fed> &fed) const {
  EngineBatch batch;
  int64_t pageSize = pool_.pageSize();
  batch.qoIndptr.push_back(0);
  batch.pageTable.indptr.push_back(0);
  for (const Fed &f : fed) {
    const RunningRequest &running = running_[f.index];
    batch.requests.push_back(running.request.id);
    batch.branches.push_back(running.branch);
    for (int64_t position = f.begin; position < f.begin + f.count; ++position) {
      // Past what is committed: its drafts, or else the pending sample of
      // the step formed before this one (decodesNext feeds nothing
      // further).
      int64_t past = position - running.length();
      bool pending = past >= 0 && running.verifying.empty();
      batch.tokens.push_back(pending    ? kPendingSampleToken
                             : past < 0 ? running.tokenAt(position)
                                        : running.verifying[size_t(past)]);
      batch.tokenFromSample.push_back(pending ? running.pendingSampler : -1);
      batch.positions.push_back(static_cast<int32_t>(position));
      batch.slotMapping.push_back(
          slotOfPosition(running.pages, pageSize, position));
    }
    batch.qoIndptr.push_back(static_cast<int32_t>(batch.tokens.size()));
    int64_t keys = f.begin + f.count;
    int64_t pages = ceilDiv(keys, pageSize);
    batch.pageTable.indices.insert(batch.pageTable.indices.end(),
                                   running.pages.begin(),
                                   running.pages.begin() + pages);
    batch.pageTable.indptr.push_back(
        static_cast<int32_t>(batch.pageTable.indices.size()));
    batch.pageTable.lastPageLen.push_back(
        static_cast<int32_t>(keys - (pages - 1) * pageSize));
    // A verification samples every row: each the token where the next
    // row's draft stands, the last the one after every draft.
    int32_t drafts = static_cast<int32_t>(running.verifying.size());
    batch.numDrafts.push_back(drafts);
    for (int32_t row = drafts; row > 0; --row) {
      batch.samplers.push_back(running.request.id);
      batch.samplerBranches.push_back(running.branch);
      batch.sampleRows.push_back(batch.qoIndptr.back() - 1 - row);
    }
    // Everything known is fed: the pass yields the next token.
    if (keys == running.known() + drafts)
      for (int32_t branch = 0; branch < running.request.n; ++branch) {
        batch.samplers.push_back(running.request.id);
        batch.samplerBranches.push_back(running.branch + branch);
        batch.sampleRows.push_back(batch.qoIndptr.back() - 1);
      }
  }
  return batch;
}

std::vector<std::vector<const RadixCache::Node *>>
Scheduler::orderForCascade(std::vector<Fed> &fed, size_t decodes) const {
  using Path = std::vector<const RadixCache::Node *>;
  struct Keyed {
    Fed fed;
    Path path;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(fed.size());
  for (const Fed &f : fed)
    keyed.push_back(
        {f, shareablePath(running_[f.index], f.begin, pool_.pageSize())});
  // Decodes stay first; the order within each part is free (a step's
  // samplers and records follow whatever order it has), and stable.
  auto byKey = [](const Keyed &a, const Keyed &b) {
    return cascadeOrderLess(a.path, b.path);
  };
  std::stable_sort(keyed.begin(), keyed.begin() + ptrdiff_t(decodes), byKey);
  std::stable_sort(keyed.begin() + ptrdiff_t(decodes), keyed.end(), byKey);
  std::vector<Path> paths;
  paths.reserve(keyed.size());
  for (size_t k = 0; k < keyed.size(); ++k) {
    fed[k] = keyed[k].fed;
    paths.push_back(std::move(keyed[k].path));
  }
  return paths;
}

bool Scheduler::decodesNext(const RunningRequest &running) const {
  int64_t produced =
      running.known() - static_cast<int64_t>(running.request.prompt.size());
  // Drafts follow committed tokens only; a verification's outcome is
  // unknown until its commit.
  bool draftsWait = !running.drafts.empty() && running.pendingSamples > 0;
  return running.prefillDone() && running.fed == running.known() - 1 &&
         running.request.n == 1 && produced < running.request.maxTokens &&
         running.verifying.empty() && !draftsWait;
}

void Scheduler::clipDrafts() {
  int64_t budget = config_.tokenBudget;
  for (const RunningRequest &running : running_)
    budget -= decodesNext(running);
  for (RunningRequest &running : running_) {
    if (running.drafts.empty() || !decodesNext(running))
      continue;
    // The verification yields up to one token more than its drafts.
    int64_t produced =
        running.length() - static_cast<int64_t>(running.request.prompt.size());
    int64_t room = running.request.maxTokens - produced - 1;
    int64_t fed = std::min({static_cast<int64_t>(running.drafts.size()), room,
                            std::max<int64_t>(budget, 0)});
    running.drafts.resize(size_t(fed));
    budget -= fed;
  }
}

StatusOr<StepStats> Scheduler::step() {
  // Two uncommitted steps would make a third read samples two steps back,
  // and leave preemption unable to say which step a sample comes from.
  if (uncommitted_.size() >= 2)
    return Status::error(
        ErrorCode::InvalidArgument,
        "two steps await their samples: commit the oldest's " +
            std::to_string(uncommitted_.front().samplers.size()) +
            " samples before forming another step");
  StepStats stats;
  std::vector<Fed> fed;
  ++steps_;
  newTokenRatio_ = std::max(config_.minNewTokenRatio,
                            newTokenRatio_ - config_.newTokenRatioDecay);
  // The oldest waiter coming of age changes the order: look again.
  if (!waiting_.empty() && config_.agingSteps > 0 &&
      steps_ - waiting_.begin()->second.arrivalStep >= config_.agingSteps)
    admissionMayChange_ = true;

  clipDrafts();
  if (Status status = growDecodes(stats); !status.ok())
    return status;
  if (Status status = preemptForPriority(stats); !status.ok())
    return status;
  if (!stats.preempted.empty())
    admissionMayChange_ = true;
  // Requests whose prefill is done decode one token each: the last token
  // they sampled (or will have: a pending sample) goes in, at the position
  // after their keys, followed by their drafts, which the step verifies.
  for (size_t i = 0; i < running_.size(); ++i) {
    RunningRequest &running = running_[i];
    if (decodesNext(running)) {
      int64_t count = 1 + static_cast<int64_t>(running.drafts.size());
      fed.push_back({i, running.fed, count});
      running.fed += count;
      stats.decodeTokens += count;
      running.verifying = std::move(running.drafts);
      running.drafts.clear();
    }
  }
  int64_t decodes = static_cast<int64_t>(fed.size());
  int64_t budget = config_.tokenBudget - stats.decodeTokens;
  // Chunked prompts continue before new requests start.
  for (size_t i = 0; i < running_.size(); ++i) {
    RunningRequest &running = running_[i];
    if (!running.prefillDone()) {
      int64_t now = std::min(running.prefillEnd - running.fed, budget);
      if (now > 0)
        fed.push_back({i, running.fed, now});
      now = std::max<int64_t>(now, 0);
      running.fed += now;
      budget -= now;
      stats.prefillTokens += now;
      (running.recomputing ? totals_.recomputedTokens
                           : totals_.computedPrefillTokens) += now;
    }
  }

  if (admissionMayChange_ && !waiting_.empty()) {
    StatusOr<bool> retry = admit(stats, budget, fed);
    if (!retry.ok())
      return retry.status();
    admissionMayChange_ = *retry;
  }
  // Nobody waits: what entered or left the cache concerns no one (a new
  // request reads the cache as it is when it arrives).
  if (waiting_.empty())
    (void)cache_.takeChanges();
  // The pages a fork copies into are taken now, while the step may still
  // evict, so that commit changes nothing before its copies succeed.
  if (Status status = reserveForkPages(fed); !status.ok())
    return status;
  std::vector<std::vector<const RadixCache::Node *>> paths;
  if (config_.cascade) {
    paths = orderForCascade(fed, size_t(decodes));
    // A prompt chunk's rows are compute-bound against their prefix: read
    // once or per request, its keys cost the same, while a shared level's
    // mma.sync tiles run them at a fraction of the prefill schedule's
    // rate (H200: an engine loop whose prefill rows shared too spent as
    // long in attention as without sharing; docs/perf-log/
    // 2026-11-28-5-twenty-third-session.md). Only decodes share.
    for (size_t i = size_t(decodes); i < paths.size(); ++i)
      paths[i].clear();
  }
  stats.batch = batchOf(fed);
  stats.batch.numDecodes = decodes;
  if (config_.cascade)
    stats.batch.cascade = planCascadeLevels(
        stats.batch, paths, pool_.pageSize(),
        {config_.cascadeMinSharers, config_.cascadeMinSharedTokens});
  stats.batch.pageCopies = std::move(pendingCopies_);
  pendingCopies_.clear();
  // The transfers between the tiers since the last step was formed (the
  // scheduler evicts and loads only while forming one; commit does
  // neither): after the copies above, made by commits before them, and
  // before anything this step writes.
  stats.batch.pageTransfers = cache_.takeTransfers();
  // Only a step that was formed awaits a commit: a failed one leaves the
  // scheduler able to step again. Prompt chunks enter the cache once the
  // pass has computed them (commit).
  FormedStep formed;
  size_t sampler = 0;
  for (size_t k = 0; k < fed.size(); ++k) {
    RunningRequest &running = running_[fed[k].index];
    int64_t end = fed[k].begin + fed[k].count;
    int64_t drafts = k < size_t(decodes)
                         ? static_cast<int64_t>(running.verifying.size())
                         : 0;
    bool samples = end == running.known() + drafts; // as batchOf decided
    formed.fed.push_back({{running.incarnation, running.branch},
                          end,
                          k >= size_t(decodes),
                          samples,
                          drafts});
    if (!samples)
      continue;
    running.pendingSampler = static_cast<int32_t>(sampler);
    ++running.pendingSamples;
    for (int32_t row = 0; row < drafts; ++row, ++sampler)
      formed.samplers.push_back(
          {running.request.id, running.branch, running.incarnation,
           row == 0 ? running.verifying : std::vector<Token>()});
    for (int32_t branch = 0; branch < running.request.n; ++branch, ++sampler)
      formed.samplers.push_back({running.request.id,
                                 running.branch + branch,
                                 running.incarnation,
                                 {}});
  }
  uncommitted_.push_back(std::move(formed));
  return stats;
}

const RunningRequest *Scheduler::runningSequence(RequestId id,
                                                 int32_t branch) const {
  // An unforked prompt of n > 1 runs as its branch 0, standing for all.
  auto it = std::find_if(
      running_.begin(), running_.end(), [&](const RunningRequest &running) {
        return running.request.id == id && branch >= running.branch &&
               branch < running.branch + running.request.n;
      });
  return it == running_.end() ? nullptr : &*it;
}

Status Scheduler::checkProposal(RequestId id, int32_t branch,
                                int64_t count) const {
  std::string name = sequenceName(id, branch);
  const RunningRequest *running = runningSequence(id, branch);
  if (!running)
    return Status::error(ErrorCode::NotFound,
                         name + " is not running (queued, preempted, "
                                "finished, aborted or never added)");
  if (!running->decoding())
    return Status::error(ErrorCode::InvalidArgument,
                         name + " computes its prompt still: drafts follow its "
                                "first committed sample");
  if (count > config_.speculativeTokens)
    return Status::error(ErrorCode::InvalidArgument,
                         name + " is given " + std::to_string(count) +
                             " drafts, a step verifies at most " +
                             std::to_string(config_.speculativeTokens) +
                             " (speculativeTokens)");
  return Status();
}

Status Scheduler::propose(RequestId id, int32_t branch,
                          std::vector<Token> drafts) {
  if (Status status =
          checkProposal(id, branch, static_cast<int64_t>(drafts.size()));
      !status.ok())
    return status;
  std::string name = sequenceName(id, branch);
  for (size_t i = 0; i < drafts.size(); ++i)
    if (drafts[i] < 0)
      return Status::error(ErrorCode::InvalidArgument,
                           name + "'s draft " + std::to_string(i) +
                               " is token " + std::to_string(drafts[i]) +
                               ": tokens are not negative");
  // Found by checkProposal; running_ is this object's own.
  auto *it = const_cast<RunningRequest *>(runningSequence(id, branch));
  it->drafts = std::move(drafts);
  return Status();
}

Status Scheduler::checkSampleCount(int64_t count) const {
  size_t awaited =
      uncommitted_.empty() ? 0 : uncommitted_.front().samplers.size();
  if (count != static_cast<int64_t>(awaited))
    return Status::error(ErrorCode::InvalidArgument,
                         std::string(uncommitted_.size() > 1
                                         ? "the oldest of 2 uncommitted steps"
                                         : "the last step") +
                             " has " + std::to_string(awaited) +
                             " samplers, got " + std::to_string(count) +
                             " samples");
  return Status();
}

std::vector<RunningRequest> Scheduler::branchesOf(RunningRequest parent) {
  std::vector<RunningRequest> branches;
  int32_t n = parent.request.n;
  parent.request.n = 1;
  for (int32_t branch = 0; branch < n; ++branch) {
    branches.push_back(parent);
    branches.back().branch = parent.branch + branch;
  }
  return branches;
}

void markRejectedDrafts(const EngineBatch &batch,
                        std::vector<Sample> &samples) {
  if (samples.size() != batch.samplers.size() ||
      batch.numDrafts.size() != batch.requests.size())
    return; // commit refuses the count
  size_t request = 0;
  for (size_t k = 0; k < samples.size();) {
    int32_t row = batch.sampleRows[k];
    while (request + 1 < batch.qoIndptr.size() &&
           batch.qoIndptr[request + 1] <= row)
      ++request;
    int32_t drafts = batch.numDrafts[request];
    if (drafts == 0) {
      ++k;
      continue;
    }
    // Rows [row, row + drafts] verify the drafts at rows row + 1 on.
    bool rejecting = false;
    for (int32_t i = 0; i <= drafts; ++i) {
      Sample &sample = samples[k + size_t(i)];
      sample.rejected = rejecting;
      rejecting = rejecting || sample.stop || i == drafts ||
                  sample.token != batch.tokens[size_t(row + i + 1)];
    }
    k += size_t(drafts) + 1;
  }
}

Status Scheduler::checkVerdicts(const FormedStep &step,
                                const std::vector<Sample> &samples) {
  auto bad = [&](size_t k, const std::string &what) {
    return Status::error(ErrorCode::InvalidArgument,
                         "sample " + std::to_string(k) + " " + what);
  };
  for (size_t k = 0; k < samples.size();) {
    const std::vector<Token> &drafts = step.samplers[k].drafts;
    std::string name = sequenceName(samples[k].request, samples[k].branch);
    if (drafts.empty()) {
      if (samples[k].rejected)
        return bad(k, "rejects the token of " + name +
                          ", whose row verifies no draft");
      ++k;
      continue;
    }
    if (samples[k].rejected)
      return bad(k, "rejects the first token of " + name +
                        "'s verification: the target's token after its "
                        "last sample is always taken");
    for (size_t i = 1; i <= drafts.size(); ++i) {
      const Sample &before = samples[k + i - 1], &sample = samples[k + i];
      if (sample.rejected)
        continue;
      if (before.rejected)
        return bad(k + i, "accepts a token of " + name + " after sample " +
                              std::to_string(k + i - 1) +
                              " rejected one: the accepted samples are the "
                              "first of a verification");
      if (before.token != drafts[i - 1])
        return bad(k + i - 1,
                   "accepts token " + std::to_string(before.token) + " of " +
                       name + " where the step fed draft " +
                       std::to_string(drafts[i - 1]) + ", and sample " +
                       std::to_string(k + i) +
                       " is accepted after it: only the draft itself may be "
                       "followed by another accepted token");
    }
    k += drafts.size() + 1;
  }
  return Status();
}

StatusOr<std::vector<RequestId>>
Scheduler::commit(const std::vector<Sample> &samples) {
  // Checked first: every error below returns before anything changes.
  if (Status status = checkSampleCount(static_cast<int64_t>(samples.size()));
      !status.ok())
    return status;
  if (uncommitted_.empty())
    return std::vector<RequestId>(); // no step, no samples: nothing to do
  const FormedStep &oldest = uncommitted_.front();
  auto name = sequenceName;
  for (size_t k = 0; k < samples.size(); ++k)
    if (samples[k].request != oldest.samplers[k].request ||
        samples[k].branch != oldest.samplers[k].branch)
      return Status::error(
          ErrorCode::InvalidArgument,
          "sample " + std::to_string(k) + " is for " +
              name(samples[k].request, samples[k].branch) +
              ", the step's sampler " + std::to_string(k) + " is " +
              name(oldest.samplers[k].request, oldest.samplers[k].branch));
  if (Status status = checkVerdicts(oldest, samples); !status.ok())
    return status;
  auto keyOf = [](const RunningRequest &running) {
    return SequenceKey{running.incarnation, running.branch};
  };
  // By incarnation: a sequence preempted, aborted or finished since the
  // step was formed, and admitted again, is not the one the step fed.
  auto indexOf = [&] {
    std::map<SequenceKey, size_t> index;
    for (size_t i = 0; i < running_.size(); ++i)
      index.emplace(keyOf(running_[i]), i);
    return index;
  };
  std::map<SequenceKey, size_t> index = indexOf();
  auto samplerKey = [](const FormedStep &formed, size_t k) {
    return SequenceKey{formed.samplers[k].incarnation,
                       formed.samplers[k].branch};
  };
  // What the commit lets go of (the pages and locks of the requests it
  // caches or retires) must be held: a broken reference is found here, not
  // half way through. (Every sampler's sequence is among those fed.)
  std::set<size_t> touched;
  for (const FormedStep::Fed &f : oldest.fed)
    if (auto it = index.find(f.sequence); it != index.end())
      touched.insert(it->second);
  for (size_t i : touched)
    if (Status status = checkHolds(running_[i]); !status.ok())
      return status;
  // The forks' copies of the partial prompt page, into the pages the step
  // reserved: the one step that can fail on its own (a device copy), so it
  // goes before any change. Copying again on a retry is harmless. A parent
  // is found by its branch 0's sampler; its prompt's last chunk was its
  // last row, and the step formed since did not feed it (decodesNext).
  std::map<RequestId, SequenceKey> forking;
  std::vector<PageCopy> copies;
  for (size_t k = 0; k < samples.size(); ++k) {
    auto it = index.find(samplerKey(oldest, k));
    if (it == index.end() || running_[it->second].request.n <= 1)
      continue;
    const RunningRequest &parent = running_[it->second];
    forking.emplace(parent.request.id, keyOf(parent));
    if (parent.forkPages.empty())
      continue;
    PageId partial = parent.pages[size_t(parent.length() / pool_.pageSize())];
    for (PageId page : parent.forkPages) {
      if (Status status = pool_.copyPageContents(partial, page); !status.ok())
        return status;
      copies.push_back({partial, page});
    }
  }
  FormedStep step = std::move(uncommitted_.front());
  uncommitted_.pop_front();
  // Each sequence's tokens from this step: one sample, or a verification's
  // accepted samples (the first rows of its group).
  struct Group {
    size_t first, rows;
  };
  std::vector<Group> groups;
  std::map<SequenceKey, int64_t> accepted;
  for (size_t k = 0; k < samples.size();) {
    size_t rows = 1 + step.samplers[k].drafts.size();
    int64_t taken = 0;
    while (taken < int64_t(rows) && !samples[k + size_t(taken)].rejected)
      ++taken;
    groups.push_back({k, rows});
    if (rows > 1)
      accepted[samplerKey(step, k)] = taken;
    k += rows;
  }
  // The engine's own caches get them before the next step formed runs.
  pendingCopies_.insert(pendingCopies_.end(), copies.begin(), copies.end());
  // The step ran: what it fed is computed, and the prompt chunks enter the
  // cache for the requests that share them (up to the step's end of each:
  // a step formed since may have fed more). A request aborted or preempted
  // since has none.
  for (const FormedStep::Fed &f : step.fed) {
    auto it = index.find(f.sequence);
    if (it == index.end())
      continue;
    RunningRequest &running = running_[it->second];
    running.computed = f.end;
    if (f.samples)
      --running.pendingSamples;
    if (f.drafts > 0) {
      // The KV of the rejected drafts is dropped: what is computed ends
      // before the last accepted token, which the next step feeds, and the
      // pages past it return (checkHolds found them in use).
      running.computed = f.end - f.drafts + accepted.at(f.sequence) - 1;
      running.fed = running.computed;
      running.verifying.clear();
      size_t kept = std::max(
          running.ownedFrom,
          static_cast<size_t>(ceilDiv(running.computed, pool_.pageSize())));
      if (kept < running.pages.size()) {
        if (Status status = pool_.release(std::vector<PageId>(
                running.pages.begin() + static_cast<ptrdiff_t>(kept),
                running.pages.end()));
            !status.ok())
          return status;
        running.pages.resize(kept);
      }
    }
    if (!f.prefill)
      continue;
    if (Status status = cacheComputed(running, f.end); !status.ok())
      return status;
    admissionMayChange_ = true;
  }
  // Prompts this step completed fork into their branches first (by id, as
  // they always have).
  for (const auto &[id, key] : forking)
    fork(index.at(key));
  if (!forking.empty())
    index = indexOf();
  // Sequences that hold no pages and await this step's sample: branches the
  // fork found no page for, and those preempted since the step was formed.
  std::map<SequenceKey, RunningRequest> outOfPool;
  for (RunningRequest &branch : unforked_)
    outOfPool.emplace(keyOf(branch), std::move(branch));
  unforked_.clear();
  for (RunningRequest &parked : parked_)
    for (RunningRequest &branch : branchesOf(std::move(parked)))
      outOfPool.emplace(keyOf(branch), std::move(branch));
  parked_.clear();

  int64_t pageSize = pool_.pageSize();
  std::vector<bool> done(running_.size(), false);
  std::vector<RequestId> finished;
  auto branchFinished = [&](RequestId id) {
    auto live = liveBranches_.find(id);
    if (live != liveBranches_.end() && --live->second == 0) {
      liveBranches_.erase(live);
      finished.push_back(id);
      ++totals_.finished;
    }
    admissionMayChange_ = true;
  };
  for (const Group &group : groups) {
    Verdict verdict = verdictOf(samples, group.first, group.rows);
    RequestId id = samples[group.first].request;
    SequenceKey key = samplerKey(step, group.first);
    // Appends the verdict's tokens to `sequence` up to its stop or its
    // max_tokens, calling `appended` after each; whether it ends there.
    auto append = [&](RunningRequest &sequence, auto &&appended) {
      for (size_t t = 0; t < verdict.tokens.size(); ++t) {
        sequence.output.push_back(verdict.tokens[t]);
        appended(verdict.tokens[t]);
        if (static_cast<int64_t>(sequence.output.size()) >=
                sequence.request.maxTokens ||
            (verdict.stop && t + 1 == verdict.tokens.size()))
          return true;
      }
      return false;
    };
    auto it = index.find(key);
    if (it == index.end()) {
      auto out = outOfPool.find(key);
      if (out == outOfPool.end())
        continue; // aborted, or stopped by an earlier sample, since the step
      // Its KV up to this sample is in the cache as far as eviction left
      // it: the rest, and its next token, are computed again from there.
      RunningRequest branch = std::move(out->second);
      outOfPool.erase(out);
      if (append(branch, [](Token) {})) {
        branchFinished(id);
        continue;
      }
      Arrival arrival = branch.arrival + uint64_t(branch.branch);
      enqueue(continuation(std::move(branch)), arrival);
      continue;
    }
    RunningRequest &running = running_[it->second];
    bool ends = append(running, [&](Token token) {
      // Drafts proposed before this sample was known hold as far as it
      // agrees with them.
      if (!running.drafts.empty() && running.drafts.front() == token)
        running.drafts.erase(running.drafts.begin());
      else
        running.drafts.clear();
      // A page of output completed: its KV may be waited for from now on.
      int64_t length = running.length();
      if (length % pageSize == 0 &&
          static_cast<int64_t>(running.hashes.size()) < length / pageSize) {
        std::vector<Token> page;
        for (int64_t p = length - pageSize; p < length; ++p)
          page.push_back(running.tokenAt(p));
        uint64_t hash =
            continuePrefixHash(running.frontier(), page.data(), pageSize);
        running.hashes.push_back(hash);
        inFlight_.insert(hash);
      }
    });
    if (ends) {
      // The last sampled token's KV does not exist, or is being written by
      // a step formed since (wasted: its sample will be ignored) into a
      // page released here, which only steps formed later, running after
      // it, get; that page is never cached (it holds no whole page of the
      // tokens computed).
      if (Status status = retire(running, running.length() - 1); !status.ok())
        return status;
      done[it->second] = true;
      branchFinished(id);
    }
  }
  // None by construction (every parked sequence is sampled by the oldest
  // step); should one be left, it is queued rather than lost.
  for (auto &[key, branch] : outOfPool) {
    Arrival arrival = branch.arrival + uint64_t(branch.branch);
    enqueue(continuation(std::move(branch)), arrival);
  }
  std::vector<RunningRequest> stillRunning;
  for (size_t i = 0; i < running_.size(); ++i)
    if (!done[i])
      stillRunning.push_back(std::move(running_[i]));
  running_ = std::move(stillRunning);
  return finished;
}

} // namespace attnc
