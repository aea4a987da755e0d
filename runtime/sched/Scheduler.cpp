//===- Scheduler.cpp - cache-aware batch scheduling -----------------------===//

#include "sched/Scheduler.h"

#include <algorithm>
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

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<Token> head(const std::vector<Token> &tokens, int64_t count) {
  return std::vector<Token>(tokens.begin(), tokens.begin() + count);
}

} // namespace

Scheduler::Scheduler(const SchedulerConfig &config, PagedKVPool &pool,
                     RadixCache &cache)
    : config_(config), pool_(pool), cache_(cache) {}

Scheduler::~Scheduler() {
  for (RunningRequest &running : running_) {
    (void)cache_.unlock(running.locked);
    (void)pool_.release(std::vector<PageId>(
        running.pages.begin() + running.ownedFrom, running.pages.end()));
  }
}

Status Scheduler::add(const Request &request) {
  int64_t tokens =
      static_cast<int64_t>(request.prompt.size()) + request.outputLen;
  if (request.prompt.empty() || request.outputLen < 1)
    return Status::error(ErrorCode::InvalidArgument,
                         "request " + std::to_string(request.id) +
                             " needs a prompt and at least one output token");
  int64_t capacity = pool_.numPages() * pool_.pageSize();
  if (ceilDiv(tokens, pool_.pageSize()) > pool_.numPages())
    return Status::error(ErrorCode::OutOfMemory,
                         "request " + std::to_string(request.id) + " needs " +
                             std::to_string(tokens) +
                             " tokens of KV cache, the pool holds " +
                             std::to_string(capacity));
  waiting_.push_back(request);
  promptHashes_[request.id] =
      pagePrefixHashes(request.prompt, pool_.pageSize());
  admissionMayChange_ = true;
  return Status();
}

std::vector<Scheduler::Candidate> Scheduler::matchWaiting() {
  std::vector<Candidate> candidates;
  int64_t pageSize = cache_.pageSize();
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const std::vector<Token> &prompt = waiting_[i].prompt;
    // At least one prompt token is always computed: it yields the logits.
    int64_t matchable =
        (static_cast<int64_t>(prompt.size()) - 1) / pageSize * pageSize;
    candidates.push_back({i, cache_.matchPrefix(head(prompt, matchable))});
  }
  return candidates;
}

void Scheduler::sortByPolicy(std::vector<Candidate> &candidates) {
  switch (config_.policy) {
  case Policy::FCFS:
    return;
  case Policy::LongestPrefixMatch:
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate &a, const Candidate &b) {
                       return a.match.tokens > b.match.tokens;
                     });
    return;
  case Policy::DFSWeight: {
    // Weight of a node: waiting requests whose match ends in its subtree.
    // Visiting heavier subtrees first keeps requests that share a prefix
    // together, in a depth-first order of the tree.
    std::unordered_map<const RadixCache::Node *, int64_t> weight;
    std::unordered_map<const RadixCache::Node *, std::vector<Candidate>> at;
    for (Candidate &candidate : candidates) {
      at[candidate.match.node].push_back(candidate);
      for (const RadixCache::Node *node = candidate.match.node; node;
           node = node->parent)
        ++weight[node];
    }
    std::vector<Candidate> ordered;
    std::function<void(const RadixCache::Node *)> visit =
        [&](const RadixCache::Node *node) {
          std::vector<const RadixCache::Node *> children;
          for (const auto &[key, child] : node->children)
            if (weight.count(child.get()))
              children.push_back(child.get());
          std::stable_sort(children.begin(), children.end(),
                           [&](const auto *a, const auto *b) {
                             return weight[a] > weight[b];
                           });
          for (const RadixCache::Node *child : children)
            visit(child);
          // Deeper matches first: a node's own requests follow its subtree.
          auto here = at.find(node);
          if (here != at.end())
            ordered.insert(ordered.end(), here->second.begin(),
                           here->second.end());
        };
    visit(cache_.root());
    candidates = std::move(ordered);
    return;
  }
  }
}

std::vector<size_t> Scheduler::order() {
  std::vector<Candidate> candidates = matchWaiting();
  sortByPolicy(candidates);
  std::vector<size_t> indices;
  for (const Candidate &candidate : candidates)
    indices.push_back(candidate.index);
  return indices;
}

bool Scheduler::waitsForInFlight(const Request &request,
                                 int64_t cachedTokens) const {
  int64_t sharedPages =
      ceilDiv(config_.inFlightShareThreshold, cache_.pageSize());
  size_t probe = static_cast<size_t>(cachedTokens / cache_.pageSize() +
                                     std::max<int64_t>(sharedPages, 1));
  const std::vector<uint64_t> &hashes = promptHashes_.at(request.id);
  return probe <= hashes.size() && inFlight_.count(hashes[probe - 1]) > 0;
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

StatusOr<bool> Scheduler::admit(std::vector<Candidate> &candidates,
                                StepStats &stats, int64_t &budget,
                                std::vector<Fed> &fed) {
  int64_t pageSize = pool_.pageSize();
  // Unlocked prefixes that waiting requests match are about to be read:
  // spending them on another request would only compute them again. They
  // count as available only when nothing runs, which could otherwise stall.
  std::unordered_set<const RadixCache::Node *> wanted;
  int64_t wantedTokens = 0;
  if (config_.protectWaitingPrefixes && !running_.empty())
    for (const Candidate &candidate : candidates)
      for (const RadixCache::Node *node = candidate.match.node;
           node != cache_.root() && node->lockRef == 0; node = node->parent)
        if (wanted.insert(node).second)
          wantedTokens += static_cast<int64_t>(node->key.size());
  int64_t available =
      cache_.evictableSize() - wantedTokens + pool_.numFreePages() * pageSize;
  std::vector<size_t> admitted;
  std::vector<std::pair<size_t, int64_t>> allocations; // running index, pages
  bool retry = false;
  for (Candidate &candidate : candidates) {
    if (static_cast<int64_t>(running_.size()) >= config_.maxRunning ||
        budget <= 0) {
      retry = true;
      break;
    }
    const Request &request = waiting_[candidate.index];
    int64_t total =
        static_cast<int64_t>(request.prompt.size()) + request.outputLen;
    int64_t pages = ceilDiv(total, pageSize) -
                    static_cast<int64_t>(candidate.match.pages.size());
    // A request waiting for KV in flight keeps its place in the order: the
    // memory it will need is not given to requests behind it.
    if (waitsForInFlight(request, candidate.match.tokens)) {
      available -= pages * pageSize;
      continue;
    }
    // Locking the prefix takes its unlocked part out of what eviction can
    // free.
    int64_t pinned = 0;
    for (const RadixCache::Node *node = candidate.match.node;
         node != cache_.root(); node = node->parent)
      if (node->lockRef == 0 && !wanted.count(node))
        pinned += static_cast<int64_t>(node->key.size());
    if (pinned + pages * pageSize > available)
      break;
    available -= pinned + pages * pageSize;
    cache_.lock(candidate.match.node);

    RunningRequest running;
    running.request = request;
    running.pages = candidate.match.pages;
    running.ownedFrom = running.pages.size();
    running.locked = candidate.match.node;
    running.cachedTokens = candidate.match.tokens;
    int64_t extend =
        static_cast<int64_t>(request.prompt.size()) - candidate.match.tokens;
    int64_t now = std::min(extend, budget);
    running.prefilled = candidate.match.tokens + now;
    budget -= now;
    stats.prefillTokens += now;
    stats.admitted.push_back(request.id);

    totals_.promptTokens += static_cast<int64_t>(request.prompt.size());
    totals_.cachedTokens += candidate.match.tokens;
    totals_.computedPrefillTokens += extend;
    // What the request computes: its prompt, then each output token's KV.
    std::vector<uint64_t> computes =
        pagePrefixHashes(computedSequence(request), pageSize);
    inFlight_.insert(computes.begin(), computes.end());
    inFlightOf_[request.id] = std::move(computes);
    promptHashes_.erase(request.id);

    running_.push_back(std::move(running));
    allocations.push_back({running_.size() - 1, pages});
    fed.push_back({running_.size() - 1, candidate.match.tokens, now});
    admitted.push_back(candidate.index);
  }

  std::sort(admitted.begin(), admitted.end());
  for (auto it = admitted.rbegin(); it != admitted.rend(); ++it)
    waiting_.erase(waiting_.begin() + *it);
  for (auto [index, pages] : allocations)
    if (Status status = allocateFor(running_[index], pages); !status.ok())
      return status;
  return retry;
}

Status Scheduler::finishPrefill(RunningRequest &running) {
  const std::vector<Token> &prompt = running.request.prompt;
  int64_t pageSize = pool_.pageSize();
  int64_t full = static_cast<int64_t>(prompt.size()) / pageSize;
  std::vector<Token> tokens = head(prompt, full * pageSize);
  std::vector<PageId> pages(running.pages.begin(),
                            running.pages.begin() + full);
  StatusOr<int64_t> present = cache_.insert(tokens, pages);
  if (!present.ok())
    return present.status();
  // Pages someone else cached meanwhile are the tree's now: drop our copies.
  size_t cachedPages = static_cast<size_t>(*present / pageSize);
  if (cachedPages > running.ownedFrom)
    if (Status status = pool_.release(
            std::vector<PageId>(running.pages.begin() + running.ownedFrom,
                                running.pages.begin() + cachedPages));
        !status.ok())
      return status;
  RadixCache::Match match = cache_.matchPrefix(tokens);
  std::copy(match.pages.begin(), match.pages.end(), running.pages.begin());
  running.ownedFrom = static_cast<size_t>(full);
  cache_.lock(match.node);
  if (Status status = cache_.unlock(running.locked); !status.ok())
    return status;
  running.locked = match.node;

  // The forward pass that completes the prompt also yields the first token.
  running.generated = 1;
  return Status();
}

Status Scheduler::finish(RunningRequest &running) {
  std::vector<Token> tokens = computedSequence(running.request);
  int64_t pageSize = pool_.pageSize();
  int64_t full = static_cast<int64_t>(tokens.size()) / pageSize;
  std::vector<PageId> pages(running.pages.begin(),
                            running.pages.begin() + full);
  StatusOr<int64_t> present =
      cache_.insert(head(tokens, full * pageSize), pages);
  if (!present.ok())
    return present.status();
  size_t cachedPages = static_cast<size_t>(*present / pageSize);
  std::vector<PageId> drop(running.pages.begin() + running.ownedFrom,
                           running.pages.begin() +
                               std::max(running.ownedFrom, cachedPages));
  drop.insert(drop.end(), running.pages.begin() + full, running.pages.end());
  if (Status status = pool_.release(drop); !status.ok())
    return status;
  for (uint64_t hash : inFlightOf_.at(running.request.id))
    inFlight_.erase(inFlight_.find(hash));
  inFlightOf_.erase(running.request.id);
  ++totals_.finished;
  return cache_.unlock(running.locked);
}

EngineBatch Scheduler::batchOf(const std::vector<Fed> &fed) const {
  EngineBatch batch;
  int64_t pageSize = pool_.pageSize();
  batch.qoIndptr.push_back(0);
  batch.pageTable.indptr.push_back(0);
  for (const Fed &f : fed) {
    const RunningRequest &running = running_[f.index];
    batch.requests.push_back(running.request.id);
    for (int64_t position = f.begin; position < f.begin + f.count; ++position) {
      batch.tokens.push_back(tokenAt(running.request, position));
      batch.positions.push_back(static_cast<int32_t>(position));
      batch.slotMapping.push_back(
          poolSlot(running.pages[size_t(position / pageSize)], int(pageSize),
                   int(position % pageSize)));
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
  }
  return batch;
}

StatusOr<StepStats> Scheduler::step() {
  StepStats stats;
  int64_t budget = config_.prefillBudget;
  std::vector<Fed> fed;

  // Requests whose prompt is in the cache decode one token each: the last
  // token they sampled goes in, at the position after their keys.
  for (size_t i = 0; i < running_.size(); ++i) {
    RunningRequest &running = running_[i];
    if (running.prefillDone() && running.generated > 0) {
      fed.push_back({i,
                     static_cast<int64_t>(running.request.prompt.size()) +
                         running.generated - 1,
                     1});
      ++running.generated;
      ++stats.decodeTokens;
    }
  }
  int64_t decodes = static_cast<int64_t>(fed.size());
  // Chunked prompts continue before new requests start.
  for (size_t i = 0; i < running_.size(); ++i) {
    RunningRequest &running = running_[i];
    if (!running.prefillDone()) {
      int64_t now =
          std::min(static_cast<int64_t>(running.request.prompt.size()) -
                       running.prefilled,
                   budget);
      if (now > 0)
        fed.push_back({i, running.prefilled, now});
      running.prefilled += now;
      budget -= now;
      stats.prefillTokens += now;
    }
  }

  if (admissionMayChange_ && !waiting_.empty()) {
    std::vector<Candidate> candidates = matchWaiting();
    sortByPolicy(candidates);
    StatusOr<bool> retry = admit(candidates, stats, budget, fed);
    if (!retry.ok())
      return retry.status();
    admissionMayChange_ = *retry;
  }
  stats.batch = batchOf(fed);
  stats.batch.numDecodes = decodes;

  for (RunningRequest &running : running_)
    if (running.prefillDone() && running.generated == 0) {
      if (Status status = finishPrefill(running); !status.ok())
        return status;
      admissionMayChange_ = true;
    }

  std::vector<RunningRequest> stillRunning;
  for (RunningRequest &running : running_) {
    if (running.generated >= running.request.outputLen) {
      if (Status status = finish(running); !status.ok())
        return status;
      stats.finished.push_back(running.request.id);
      admissionMayChange_ = true;
    } else {
      stillRunning.push_back(std::move(running));
    }
  }
  running_ = std::move(stillRunning);
  return stats;
}

} // namespace attnc
