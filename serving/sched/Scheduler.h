//===- Scheduler.h - cache-aware batch scheduling ---------------*- C++ -*-===//
//
// Forms the batch of each forward pass the way a cache-aware serving engine
// does (DESIGN.md, serving/sched), knowing of each request only its prompt
// and its max_tokens, never how long its answer will be:
//
//   1. give each running request that decodes the page its next token
//      goes to, evicting cached pages (from the tail of the least-recently
//      used leaf: as many pages as it needs, not whole leaves), and when
//      nothing is left to evict, preempting the latest-admitted request of
//      the lowest priority: what it computed enters the cache unlocked, its
//      sampled tokens are kept, and it goes back to its place in the queue
//      to be computed again (recompute, not swap: recomputation reads
//      what the cache kept, in the device pool or, loaded back, in its
//      host tier); and
//      when the waiter admission tries first outranks a running request
//      and its pages do not fit, preempting running requests of lower
//      priority alike (never of its own or higher) until they do (vLLM's
//      priority scheduling), its admission counting the prefixes other
//      waiters match as available;
//   2. feed one token per decode and continue chunked prompts within the
//      step's token budget, which counts the decodes;
//   3. match every waiting request against the radix cache and order them
//      by the policy (FCFS, longest prefix match, DFS weight);
//   4. available = evictable + free - the output the running requests are
//      expected to add; admit requests in order while what each needs (its
//      uncached prompt, and the new-token ratio times its max_tokens
//      clipped to clipMaxNewTokens, in whole pages) fits, locking each matched
//      prefix; prefixes other waiting requests match are not counted as
//      available while anything runs; load back from the cache's host
//      tier (RadixCache::withHostTier) the part of each admitted prompt it
//      continues the device-resident prefix with (its device pages come out
//      of what the request needs, as its computed pages would); allocate
//      the admitted prompts' pages;
//   5. insert every prompt chunk the pass computes into the cache, so that
//      requests sharing it read it from there;
//   6. commit: take the tokens the engine sampled; a request finishes when
//      the engine says stop or at its max_tokens, and what it computed
//      (every token but the last sampled) enters the cache.
//
// Overlap (vLLM's async scheduling, SGLang's overlap scheduler): the next
// step may be formed while the last one runs, before its samples are
// committed, so that the CPU's scheduling hides behind the GPU's step:
//
//   s1 = step(); launch(s1);
//   loop { s2 = step(); wait(s1); commit(samples of s1);
//          launch(s2, reading s1's samples); s1 = s2; }
//
// At most two steps are uncommitted at once (a third is refused), and
// commit always takes the oldest. A step formed over an uncommitted one
// knows everything about a decode whose input is that step's pending sample
// but its value: the row's position, slot and pages are those of the next
// token, its token is kPendingSampleToken, and
// EngineBatch::tokenFromSample names the sample the engine reads it from.
// What a pending sample decides waits for its commit: a request whose
// pending sample reaches its max_tokens is not scheduled again; one whose
// pending sample says stop finishes at that commit (the next step's row
// for it was wasted work, its sample is ignored); a prompt of n > 1 forks
// at the commit of its last chunk (its branches are not scheduled before);
// a page's prefix hash, when its last token is a sample, is computed at
// that sample's commit; only committed steps' KV enters the cache. A
// request preempted while a step that samples it is uncommitted gives up
// its pages at once, keeping only the KV of committed steps, and rejoins
// the queue at that step's commit with the sample appended: every sample
// the engine commits is output, except those of a request it aborted and
// those after a stop it reported (so it may stream them as they come).
// The synchronous loop (step, commit, step, ...) is the special case with
// nothing pending: it behaves as it always has.
//
// Speculative decoding (SchedulerConfig::speculativeTokens > 0; vLLM's
// spec_token_ids, SGLang's EAGLE verify): the engine proposes a decoding
// request's next tokens (propose: a chain of drafts continuing its
// committed sequence, from a draft model, n-grams, ...), and the next step
// feeds that request its last sample and its d drafts at consecutive
// positions, with pages for all of them (allocated, evicting and
// preempting, as a decode's page is; the token budget counts the drafts,
// and drops those it has no room for, as max_tokens does those that could
// only overshoot it), every one of the d + 1 rows a sampler: the
// verification rows (EngineBatch::numDrafts). Its commit takes the
// engine's verdict (Sample::rejected, markRejectedDrafts for greedy
// verification): 1 to d + 1 tokens, the drafts the target agreed with and
// the target's own token after them; the KV of the rejected drafts is
// dropped: the sequence's computed length goes back to its accepted
// tokens and the pages only rejected drafts wrote return to the pool. Only
// accepted tokens are output, hashed or cached; a stop among them ends the
// request there, and none goes past max_tokens. Overlap: a request is not fed
// drafts while a sample of it is pending, nor fed at all while its verification
// is: a step formed over an uncommitted one skips it (the drafts wait for the
// commit, which checks them against the sample it brings), so a
// speculating request runs every other step of the overlapped loop.
//
// Pages are released while steps that read or write them may still be
// running (a finished request's, one preempted or aborted): that is safe
// because a page released goes only to steps formed after, which the
// engine runs after every step formed before (one stream), and because the
// pool's own writes at a commit (a fork's copies) go into pages reserved
// for them, which no uncommitted step names. An offload to the host tier
// reads a page eviction takes: a whole page of committed steps' KV (only
// those enter the cache), which no step writes again, issued while a step
// is formed, so after every step formed before. A load writes a page freed
// perhaps as that step was formed (a preempted request's), which the step
// before may still write: a device pool's tier orders it on the pool's
// stream, after that step, and an engine with caches of its own applies it
// when it runs this step (EngineBatch::pageTransfers); a tier over a host
// pool copies at once, so an overlapped engine over one must have run
// every step it launched before it forms the next.
//
// A waiting request whose uncached prompt starts with KV that a running
// request is computing waits, so that it reads that prefix from the cache
// instead of computing it again: when that shared part is long enough
// (inFlightShareThreshold), or when the waiter's prompt continues the
// running request's whole sequence as far as it has been generated (a
// conversation's next turn queued while the answer it quotes is being
// written), for as long as the generated tokens keep matching. Only tokens
// already produced are compared: the scheduler never sees an answer
// before it exists.
//
// The queue is matched incrementally: each waiting request knows how many
// pages of its prompt are cached, indexed by the prefix hash of the next
// page it lacks and of the deepest page it has, and only the requests whose
// pages entered or left the cache (the radix cache's change journal) are
// looked at again. LPM and FCFS keep their order as the matches change, so
// an admission pass reads the queue only as far as it admits, beside one
// walk per distinct cached prefix that waiting requests read (to touch and
// protect it); DFS-weight reads the queue (or its first dfsWeightWindow
// requests) once at each pass, and the tree only along the paths to where
// those waiters' matches end: linear in the queue, or bounded by the window
// (orderOperations counts its work). The scheduler is its cache's only
// reader of changes.
//
// Cascade attention (SchedulerConfig::cascade; issue 47): each step also
// says which of its rows share which cached pages (EngineBatch::cascade,
// planned by CascadePlanner.h from the locked radix nodes), so that the
// kernels read a shared prefix once for every request under it. The rows
// of requests under one node must be contiguous: the step orders its
// decodes, and apart from them its prefills, by the tree's DFS order (a
// step's order is otherwise free: its samplers, records and the next
// step's pending rows follow whatever order it has).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SCHED_SCHEDULER_H
#define ATTNC_RUNTIME_SCHED_SCHEDULER_H

#include "kv/PagedKVPool.h"
#include "radix/RadixCache.h"
#include "sched/Request.h"

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace attnc {

enum class Policy { FCFS, LongestPrefixMatch, DFSWeight };

const char *toString(Policy policy);
StatusOr<Policy> parsePolicy(const std::string &name);

struct SchedulerConfig {
  Policy policy = Policy::LongestPrefixMatch;
  /// Tokens fed per forward pass, decode tokens included (vLLM's
  /// max_num_batched_tokens): decodes go first, prompts are chunked into
  /// what is left.
  int64_t tokenBudget = 8192;
  int64_t maxRunning = 128;
  /// Shared uncached prompt tokens that make a waiting request wait for
  /// the request in flight that computes them.
  int64_t inFlightShareThreshold = 32;
  /// Admission leaves alone the cached prefixes that waiting requests match
  /// (while anything runs), rather than evicting them for another request.
  bool protectWaitingPrefixes = true;
  /// A request that has waited this many steps goes before every other,
  /// whatever its priority and the policy's order, oldest first, so that
  /// no request starves (LPM alone serves cache-cold requests last). 0:
  /// never.
  int64_t agingSteps = 0;
  /// Admission reserves this fraction of each request's remaining
  /// max_tokens for its output (SGLang's new-token ratio): it starts at
  /// `initialNewTokenRatio`, falls by `newTokenRatioDecay` each step to
  /// `minNewTokenRatio`, and returns to the start when decode runs out of
  /// pages and a request is preempted.
  double initialNewTokenRatio = 0.7;
  double minNewTokenRatio = 0.1;
  double newTokenRatioDecay = 0.001;
  /// The remaining max_tokens the estimate above reads is clipped to this
  /// (SGLang's CLIP_MAX_NEW_TOKENS, 4096): a request asking for a very
  /// long answer reserves no more than one asking for this many.
  int64_t clipMaxNewTokens = 4096;
  /// DFS-weight orders the first this many waiting requests (by priority,
  /// then arrival) and serves the rest after them by priority and arrival,
  /// so that a pass costs at most this many requests' work however long
  /// the queue. 0 (the default): order the whole queue, each pass linear in
  /// it. (A window of 4096 on 10k offline requests of sim_scale.py took
  /// 3.4x the steps of the whole queue's order: a cap, not a free lunch.)
  int64_t dfsWeightWindow = 0;
  /// Drafts a decoding request may be given per step (propose) for the
  /// step to verify (speculative decoding, the header comment). 0 (the
  /// default): off.
  int64_t speculativeTokens = 0;
  /// Plan cascade (shared-prefix) attention for each step
  /// (EngineBatch::cascade): its decodes, and separately its prefills, come
  /// in a DFS order of the radix tree, so that requests under one node are
  /// contiguous rows; only decodes share levels (a prompt chunk's rows are
  /// compute-bound against their prefix). Off (the default): no levels,
  /// batch order as ever.
  bool cascade = false;
  /// A shared node run gets a level entry of its own only when at least
  /// this many of the step's requests (contiguous in its rows) read it and
  /// it holds at least this many tokens; otherwise its pages are read with
  /// its members' next entry. A shared entry saves (sharers - 1) reads of
  /// its pages but costs the cascade's launches and a merge of partial
  /// states, and a node of few rows fills little of the level's 128-row
  /// tiles. Measured on an H200 (GQA 4, d128; docs/perf-log/
  /// 2026-11-28-5-twenty-third-session.md): 64 decodes under one 8192-token
  /// prefix 2.64x plain paged decode, groups of 16 and 64 over 2048 tokens
  /// 1.30x and 1.18x, 512 tokens or groups of 4 slower; in the engine
  /// loop, groups of 16 over 4096 tokens spent 0.87x as long in attention
  /// without cascade. 32 sharers of a GQA-4 model fill the tiles.
  int64_t cascadeMinSharers = 32;
  int64_t cascadeMinSharedTokens = 2048;
};

/// InvalidArgument naming the first field out of range: a token budget or
/// running cap below 1, a share threshold outside [1, 2^31), negative aging
/// steps, ratios outside [0, 1] or a minimum above the initial ratio, a
/// negative decay, a clip of max_tokens below 1, a negative DFS-weight
/// window, speculative tokens outside [0, 2^31), cascade sharers or tokens
/// outside [1, 2^31).
Status checkConfig(const SchedulerConfig &config);

/// One scheduled request as the attention kernels see it.
struct RunningRequest {
  /// Its n is 1 once the request's branches are forked.
  Request request;
  /// Which of the request's n samples this sequence is.
  int32_t branch = 0;
  /// Tokens sampled so far, kept across preemptions.
  std::vector<Token> output;
  /// Every page of the request's sequence, root first: the cached prefix's
  /// pages, then pages the request owns from `ownedFrom` on.
  std::vector<PageId> pages;
  size_t ownedFrom = 0;
  /// The radix node locked for this request.
  RadixCache::Node *locked = nullptr;
  /// Tokens read from the cache at admission.
  int64_t cachedTokens = 0;
  /// Tokens of the sequence (prompt, then output) a prefill computes: the
  /// prompt, and after a preemption the output sampled before it too.
  int64_t prefillEnd = 0;
  /// Tokens whose keys and values are computed, or fed in a step formed
  /// (committed or not).
  int64_t fed = 0;
  /// Tokens whose keys and values a committed step computed (or the cache
  /// held): what a preemption keeps.
  int64_t computed = 0;
  /// Uncommitted steps that sample this sequence (at most 2): its sequence
  /// is `pendingSamples` tokens longer than `output` says, their values
  /// unknown until committed.
  int32_t pendingSamples = 0;
  /// The index of its sample among the samplers of the step formed last,
  /// while that sample is pending: where a decode fed with it reads it.
  int32_t pendingSampler = -1;
  /// Drafts of the tokens after its committed sequence (propose), to be
  /// fed and verified by its next step: consumed by the commits of its
  /// samples as far as they agree with them.
  std::vector<Token> drafts;
  /// The drafts fed by the uncommitted step that verifies them, after its
  /// last sample: it is fed nothing more until that step's commit.
  std::vector<Token> verifying;
  /// Whether its prefill computes again what a preemption dropped.
  bool recomputing = false;
  /// When the request was admitted: preemption takes the latest first.
  uint64_t admission = 0;
  /// The admission this sequence belongs to, shared by the branches forked
  /// from it: samples and a step's records reach a sequence by it and the
  /// branch, so that what a step formed before a preemption, abort or
  /// finish says reaches no later admission of the same request.
  uint64_t incarnation = 0;
  /// Its place in the queue and the step it arrived before: a preempted
  /// request goes back to both.
  uint64_t arrival = 0;
  int64_t arrivalStep = 0;
  /// Page-prefix hashes of the sequence's whole pages: the KV it computes,
  /// which waiting requests may wait for.
  std::vector<uint64_t> hashes;
  /// Pages the step completing a prompt of n > 1 reserved for its
  /// branches' copies of the partial last page, until commit forks them:
  /// commit then allocates and evicts nothing.
  std::vector<PageId> forkPages;

  int64_t length() const {
    return static_cast<int64_t>(request.prompt.size() + output.size());
  }
  /// length() with the pending samples counted.
  int64_t known() const { return length() + pendingSamples; }
  Token tokenAt(int64_t position) const {
    int64_t prompt = static_cast<int64_t>(request.prompt.size());
    return position < prompt ? request.prompt[size_t(position)]
                             : output[size_t(position - prompt)];
  }
  /// prompt followed by output.
  std::vector<Token> sequence() const;
  /// The prefix hash of its sequence's last whole page (of the empty
  /// prefix before the first).
  uint64_t frontier() const;
  bool prefillDone() const { return fed >= prefillEnd; }
  /// Its prompt (and what a preemption recomputes) is committed: what it
  /// samples next follows a committed token, drafts may follow it.
  bool decoding() const { return request.n == 1 && computed >= prefillEnd; }
};

/// The token of a row whose token is a sample not committed yet
/// (EngineBatch::tokenFromSample): a placeholder the engine replaces.
constexpr Token kPendingSampleToken = -1;

/// One level of cascade attention over a step's rows (EngineBatch::cascade),
/// as FlashInfer's MultiLevelCascadeAttentionWrapper.plan takes it: entry e
/// feeds the rows [qoIndptr[e], qoIndptr[e+1]) (the entries partition all
/// of the step's rows) and reads the pages kvIndices[kvIndptr[e],
/// kvIndptr[e+1]), its last holding kvLastPageLen[e] keys (0 for an entry of
/// no pages).
struct CascadeLevel {
  std::vector<int32_t> qoIndptr;
  std::vector<int32_t> kvIndptr;
  std::vector<int32_t> kvIndices;
  std::vector<int32_t> kvLastPageLen;
};

/// The attention inputs of one forward pass, as PagedAttention.plan
/// (Python) and Kernel::plan (C++) take them, over the pool's caches.
/// Requests come in batch order, decodes first, then prefill chunks; each
/// feeds the tokens [qoIndptr[i], qoIndptr[i+1]) of `tokens`, whose keys
/// and values the model writes at `slotMapping` (PagedKVPool::appendSlots)
/// before attention reads them through the page table. Pages a step
/// releases (a finished request's, or copies of what the cache already
/// held) return to the pool when the step is formed; the runner must run
/// the step's attention before the next step's appends, as one stream
/// does.
///
/// Before it writes the step's keys and values, the runner applies
/// `pageCopies` to every layer's K and V caches it keeps: the pages the
/// scheduler decided to copy since the last step (copy-on-write: a fork's
/// copy of its prompt's partial last page), which this step's sequences
/// read and write. The scheduler's own pool copied them already (on its
/// stream, in every layer), so a runner whose caches are that pool's may
/// skip them; one whose caches are its own (per-layer tensors beside an
/// accounting pool) must not. Applying them twice is harmless: a copy's
/// source does not change before the step's writes.
struct EngineBatch {
  /// A request with n > 1 appears once per branch (`branches`) once forked.
  std::vector<RequestId> requests;
  std::vector<int32_t> branches;
  int64_t numDecodes = 0;
  std::vector<int32_t> qoIndptr;
  /// Each new token's id, its position in its request's sequence, and its
  /// slot: page * page_size + position in the page.
  std::vector<Token> tokens;
  /// For each row of `tokens`: -1 when the row holds its token, or the
  /// index among the previous step's samplers whose sample it is, when this
  /// step was formed before that sample was committed (overlap: the engine
  /// reads it from the previous step's sampled tokens on the device). Such
  /// a row's token is kPendingSampleToken.
  std::vector<int32_t> tokenFromSample;
  std::vector<int32_t> positions;
  std::vector<int64_t> slotMapping;
  /// The pages of each request's keys, this step's tokens included.
  PageTable pageTable;
  /// The requests that sample a token from this pass (every decode, and
  /// each prompt whose last chunk this is), in batch order, and the row of
  /// `tokens` whose logits they sample from: what Scheduler::commit takes.
  /// The pass that completes the prompt of a request with n > 1 samples
  /// its n branches from the same row. A request fed drafts samples every
  /// row it is fed, in order (its verification rows).
  std::vector<RequestId> samplers;
  std::vector<int32_t> samplerBranches;
  std::vector<int32_t> sampleRows;
  /// Per request (batch order): how many of its rows, its last, are drafts
  /// (speculative decoding; 0 for everything else). Such a request is a
  /// decode, fed its last sample and then its drafts at the positions
  /// after it, causally, as a prompt chunk is: each row's sample is the
  /// target's token where the next row's draft stands (the last row's,
  /// the token after every draft).
  std::vector<int32_t> numDrafts;
  /// Copies of whole pages, in order, to apply in every layer before this
  /// step's writes (vLLM's blocks_to_copy). A copy may name a page freed
  /// since it was decided (its branch aborted or preempted): copying into
  /// it is harmless, as it comes before anything this step writes there.
  std::vector<PageCopy> pageCopies;
  /// Whole pages moved between the device pool and the cache's host tier
  /// since the last step was formed, in the order they were issued
  /// (offloads of evicted pages, loads of admitted prefixes): applied in
  /// every layer after pageCopies and before this step's writes. The tier
  /// made them in the scheduler's own pool already (on its stream), so a
  /// runner over that pool skips them; one whose caches are its own keeps
  /// host pages of its own and must apply them, in order: a page
  /// offloaded may be loaded into in the same step.
  std::vector<PageTransfer> pageTransfers;
  /// Cascade attention's levels (SchedulerConfig::cascade; CascadePlanner.h):
  /// empty when nothing is shared (plain paged attention over pageTable),
  /// else shared levels and then a last one. An entry of a shared level with
  /// pages is a run of full pages of the radix cache read once for all its
  /// rows, which are exactly the rows of the requests under it, without a
  /// causal mask (they all precede those rows); an entry without pages is a
  /// gap, rows sharing nothing at that level. The last level has one entry
  /// per request (as qoIndptr), the rest of its pages (at least one, and
  /// every key of its rows), causal, lastPageLen as pageTable's. A request's
  /// entries' pages, level by level, are its pages in pageTable.
  std::vector<CascadeLevel> cascade;
};

/// What the model sampled for one of a step's samplers.
struct Sample {
  RequestId request = 0;
  int32_t branch = 0;
  Token token = 0;
  /// The engine stops the request here (end of sequence, a stop string);
  /// it stops at its max_tokens regardless.
  bool stop = false;
  /// For a verification row (EngineBatch::numDrafts): the engine's
  /// verification did not take this token. A request's accepted samples
  /// are its first one or more, each but the last equal to the draft the
  /// row after it fed (the last is the target's correction or bonus
  /// token); false for every other sampler.
  bool rejected = false;
};

/// Greedy verification: in each of `batch`'s verifications, rejects the
/// samples after the first whose token differs from the draft the next
/// row fed (the target's own token there is taken, the rest are not). An
/// engine that samples the target's tokens greedily (or with a seed shared
/// with the drafter) needs nothing else; one doing rejection sampling sets
/// Sample::rejected itself. `samples` are one per sampler, in order.
void markRejectedDrafts(const EngineBatch &batch, std::vector<Sample> &samples);

struct StepStats {
  int64_t prefillTokens = 0;
  int64_t decodeTokens = 0;
  std::vector<RequestId> admitted;
  /// Requests preempted to free pages for others' decodes: back in the
  /// queue with what they generated, to be computed again.
  std::vector<RequestId> preempted;
  EngineBatch batch;
};

struct SchedulerTotals {
  /// Prompt tokens of admitted requests, each counted at its first
  /// admission, and the part of them read from the cache then.
  int64_t promptTokens = 0;
  int64_t cachedTokens = 0;
  /// Prompt tokens fed (computed) for the first time, and tokens fed again
  /// after preemptions (recomputation).
  int64_t computedPrefillTokens = 0;
  int64_t recomputedTokens = 0;
  int64_t evictedTokens = 0;
  /// Tokens of admitted prompts (first admissions and recomputations)
  /// loaded back from the host tier instead of computed.
  int64_t hostLoadedTokens = 0;
  int64_t preemptions = 0;
  int64_t finished = 0;
};

class Scheduler {
public:
  Scheduler(const SchedulerConfig &config, PagedKVPool &pool,
            RadixCache &cache);
  ~Scheduler();

  /// Queues a request. Fails as checkRequest does.
  Status add(const Request &request);

  /// Whether a request of this id, prompt length, max_tokens and n could be
  /// queued: InvalidArgument for an empty prompt or max_tokens below 1, a
  /// sequence past int32 positions, n outside [1, kMaxParallelSamples] or
  /// above maxRunning, or an id queued or running; OutOfMemory when the
  /// prompt and max_tokens could never fit in the pool. What add checks,
  /// callable before the prompt is copied (the C API's).
  Status checkRequest(RequestId id, int64_t promptLength, int64_t maxTokens,
                      int64_t n) const;

  /// Forms the next forward pass: admits waiting requests, gives each
  /// decode the page its token goes to (evicting cached prefixes, then
  /// preempting the latest-admitted requests of the lowest priority when
  /// the pool runs out), and returns the batch. The engine runs it and
  /// calls commit (with no samples when the batch has no samplers), before
  /// the next step or, overlapped, after it (the header comment): one
  /// uncommitted step may precede a step, not two (InvalidArgument).
  /// maxRunning counts sequences: a request of n parallel samples takes n;
  /// decodes are never cut by the token budget.
  StatusOr<StepStats> step();

  /// Takes what the model sampled from the oldest uncommitted step (the
  /// last one, unless overlapped): one sample per `batch.samplers` (and
  /// branch), in that order; with no step uncommitted, no samples, and
  /// nothing happens. The sample of a request aborted since the step was
  /// formed, or stopped by the commit before, is ignored. A branch
  /// finishes when its sample says stop or it reaches max_tokens, and its
  /// computed KV enters the cache; a request finishes with its last
  /// branch. A request with n > 1 whose prompt this step completed forks
  /// into its branches here, after the step ran: each shares the prompt's
  /// whole pages and gets a copy of its partial last page (the pool copies
  /// it), or, with no page to spare, is queued to compute that part again
  /// from the cache. The copies go in the pool's every layer, on its
  /// stream, and are listed in the next step formed's pageCopies for a
  /// runner whose caches are its own. Returns the finished requests.
  ///
  /// All or nothing: an error leaves the scheduler, its pool and its cache
  /// as they were, so the engine may retry. Everything that can be wrong is
  /// checked first (the samples, the references and locks the commit will
  /// drop); the only operations that can fail after that, the page copies
  /// of forks, go into pages the step reserved, before anything changes.
  StatusOr<std::vector<RequestId>> commit(const std::vector<Sample> &samples);

  /// Gives the running sequence (`id`, `branch`) the drafts of its next
  /// tokens, after its committed ones, replacing any it had (an empty list
  /// withdraws them). The first step that may feed it feeds them for
  /// verification (speculative decoding, the header comment); the commit of a
  /// sample of it from a step formed before keeps them only as far as they
  /// agree with it. NotFound when no such sequence runs (never added, queued,
  /// preempted, finished, aborted); InvalidArgument when it computes its prompt
  /// still (drafts follow its first committed sample), for more drafts than
  /// SchedulerConfig::speculativeTokens (0: off) or a negative token.
  Status propose(RequestId id, int32_t branch, std::vector<Token> drafts);
  /// What propose checks before it reads the drafts: the sequence and the
  /// count (the C API's, before it copies them).
  Status checkProposal(RequestId id, int32_t branch, int64_t count) const;

  /// InvalidArgument unless `count` is the number of samples the oldest
  /// uncommitted step awaits: what commit checks first, callable before
  /// the samples are copied (the C API's).
  Status checkSampleCount(int64_t count) const;

  /// Drops a request wherever it is: from the queue, or from the running
  /// batch mid-prefill or mid-decode (its prefix unlocked, the pages it owns
  /// released, the KV it was computing no longer waited for). Prompt pages
  /// already cached stay in the cache; nothing else it computed enters it.
  /// The request's samples in steps formed before are ignored at their
  /// commits (the next step's KV writes for it go into pages released now:
  /// harmless, as only steps formed later, which run after, get them).
  /// NotFound when no such request is queued or running (never added,
  /// finished, or aborted already).
  Status abort(RequestId id);

  /// No request is queued or running (steps may still await commits).
  bool idle() const {
    return waiting_.empty() && running_.empty() && parked_.empty();
  }
  /// Queued sequences, those preempted awaiting a pending sample included.
  size_t numWaiting() const { return waiting_.size() + parked_.size(); }
  /// Steps formed whose samples are not committed yet: 0, 1 or 2.
  size_t numUncommittedSteps() const { return uncommitted_.size(); }
  const std::vector<RunningRequest> &running() const { return running_; }
  const SchedulerTotals &totals() const { return totals_; }

  /// The order the policy gives the waiting requests now, as positions in
  /// arrival order. Exposed for tests.
  std::vector<size_t> order();
  /// Units of work DFS-weight's ordering has done so far (waiters filed,
  /// tree nodes linked and visited, child comparisons): what its cost is
  /// measured in, as time is not. Exposed for tests.
  uint64_t orderOperations() const { return orderOperations_; }

private:
  /// The running sequence (`id`, `branch`): a request's entry, or its
  /// unforked branch 0 standing for all; nullptr when none runs.
  const RunningRequest *runningSequence(RequestId id, int32_t branch) const;
  /// Tests drive preempt directly (SchedulerTest.cpp defines it).
  friend struct SchedulerTestAccess;

  /// A queued request and how much of its prompt the cache holds.
  struct Waiter {
    /// A preempted request's prompt is followed by what it had sampled:
    /// both are computed again.
    Request request;
    int32_t branch = 0;
    int64_t promptLength = 0;
    bool preempted() const {
      return static_cast<int64_t>(request.prompt.size()) > promptLength;
    }
    /// Page-prefix hashes of the tokens to prefill, computed once.
    std::vector<uint64_t> hashes;
    /// Pages a match may cover: at least one prompt token is always
    /// computed, for the logits.
    int64_t matchable = 0;
    /// Leading pages of the tokens to prefill in the cache now.
    int64_t cached = 0;
    /// The step it arrived before.
    int64_t arrivalStep = 0;
  };
  using Arrival = uint64_t;
  /// Tokens [begin, begin + count) of running_[index] fed this step.
  struct Fed {
    size_t index;
    int64_t begin, count;
  };
  /// A running sequence, as a formed step names it: by the admission it
  /// belongs to and its branch.
  using SequenceKey = std::pair<uint64_t, int32_t>;
  /// What a formed step's commit needs: its samplers, and what it fed to
  /// whom (the sequence's tokens computed once it has run, whether that
  /// was a prompt chunk, whether it samples).
  struct FormedStep {
    struct Sampler {
      RequestId request;
      int32_t branch;
      uint64_t incarnation;
      /// On the first of a sequence's verification rows, the drafts they
      /// verify (the next drafts.size() samplers are its other rows).
      std::vector<Token> drafts;
    };
    struct Fed {
      SequenceKey sequence;
      int64_t end;
      bool prefill, samples;
      /// Drafts among the tokens fed, the last of them.
      int64_t drafts = 0;
    };
    std::vector<Sampler> samplers;
    std::vector<Fed> fed;
  };

  /// Queues `waiter` at `arrival` (a preempted request keeps its own);
  /// arrivals step by kMaxParallelSamples, a request's branches within.
  void enqueue(Waiter waiter, Arrival arrival);
  void forgetArrival(RequestId id, Arrival arrival);
  /// Files a waiter under its next and deepest page, and in LPM order.
  void index(Arrival arrival, const Waiter &waiter);
  void unindex(Arrival arrival, const Waiter &waiter);
  /// Re-reads the cached pages of the waiters whose pages entered or left
  /// the cache since the last call.
  void followCache();
  void touchWaitingPrefixes();
  /// Brings the waiters' matches up to date with the cache and touches
  /// what they read; DFS-weight's order (the others keep theirs).
  std::vector<Arrival> prepareOrder();
  /// Visits the waiting requests in the policy's order until `visit`
  /// returns false.
  void visitInOrder(const std::vector<Arrival> &dfsOrder,
                    const std::function<bool(Arrival)> &visit);
  std::vector<Arrival> dfsWeightOrder();
  bool waitsForInFlight(const Waiter &waiter) const;
  /// Files the running requests by the hash of their last whole page.
  void findFrontiers();
  /// Admits waiting requests in order; returns whether admission stopped
  /// for a reason that can pass by the next step (token budget, running
  /// cap).
  StatusOr<bool> admit(StepStats &stats, int64_t &budget,
                       std::vector<Fed> &fed);
  Status allocateFor(RunningRequest &running, int64_t pages);
  /// Tokens of output the requests running now are expected to add.
  int64_t reservedOutputTokens() const;
  /// Gives every decode of this step the page its token goes to, evicting
  /// and then preempting as needed.
  Status growDecodes(StepStats &stats);
  /// Visits the unlocked cached pages of `waiter`'s match, deepest first,
  /// until `visit` returns false.
  void visitUnlockedPages(const Waiter &waiter,
                          const std::function<bool(uint64_t)> &visit) const;
  /// Pages admitting `waiter` takes beyond its cached prefix: its prompt,
  /// the output the new-token ratio expects, and its branches'.
  int64_t pagesNeeded(const Waiter &waiter) const;
  /// The running request preemption takes first among those of priority
  /// below `below`: the latest admitted of the lowest priority.
  std::optional<size_t> preemptionVictim(int64_t below) const;
  /// Preempts running requests of lower priority than the waiter
  /// admission would try first (the latest admitted of the lowest
  /// priority first) until that waiter's pages fit, and lets admission
  /// count the prefixes other waiters match as available to it.
  Status preemptForPriority(StepStats &stats);
  /// Takes running_[index] out of the batch and back to the queue: what
  /// it computed enters the cache (unlocked), its output is kept. All or
  /// nothing, as retire.
  Status preempt(size_t index);
  /// Checks that `running` holds what it will let go of: its own pages are
  /// in use and its prefix is locked. Commit checks every request it
  /// touches before changing anything.
  Status checkHolds(const RunningRequest &running) const;
  /// Checks the engine's verdict on every verification of `step`
  /// (Sample::rejected), and that no other sample is rejected.
  static Status checkVerdicts(const FormedStep &step,
                              const std::vector<Sample> &samples);
  /// Clips the drafts of the sequences that decode this step to what their
  /// max_tokens leaves room for and to the token budget the plain decodes
  /// leave.
  void clipDrafts();
  /// Reserves the copies of the partial prompt page for the branches of
  /// every request of n > 1 whose prompt this step completes.
  Status reserveForkPages(const std::vector<Fed> &fed);
  EngineBatch batchOf(const std::vector<Fed> &fed) const;
  /// Orders the step's decodes (the first `decodes` of `fed`) and then its
  /// prefills by the radix-tree DFS order of what they may share
  /// (CascadePlanner.h), so that requests under one node are contiguous;
  /// returns each one's shareablePath, in the new order.
  std::vector<std::vector<const RadixCache::Node *>>
  orderForCascade(std::vector<Fed> &fed, size_t decodes) const;
  /// Inserts the whole pages of the first `tokens` tokens of the sequence
  /// into the cache and locks them for the request instead of its older
  /// prefix; pages the cache held already replace the request's copies,
  /// which are released with `alsoRelease`. All or nothing: the one
  /// release, the only step that can fail, comes first.
  Status cacheComputed(RunningRequest &running, int64_t tokens,
                       std::vector<PageId> alsoRelease = {});
  /// Ends `running`'s hold on the pool and the cache: the whole pages of
  /// its first `computed` tokens enter the cache, its other pages return,
  /// its prefix is unlocked, nobody waits for its KV any more. All or
  /// nothing, as cacheComputed.
  Status retire(RunningRequest &running, int64_t computed);
  /// Branches 1..n-1 of running_[index], whose prompt the committed step
  /// completed, into the pages the step reserved (copied already).
  void fork(size_t index);
  /// The branches of a request of n > 1 that holds no pages (preempted
  /// before its fork), as sequences of one sample each.
  static std::vector<RunningRequest> branchesOf(RunningRequest parent);
  /// A waiter continuing `running`: its prompt and output computed again.
  Waiter continuation(RunningRequest running) const;
  /// No request waits any more for the KV `running` was computing.
  void withdrawInFlight(const RunningRequest &running);

  SchedulerConfig config_;
  PagedKVPool &pool_;
  RadixCache &cache_;
  std::map<Arrival, Waiter> waiting_;
  Arrival arrivals_ = 0;
  std::multimap<RequestId, Arrival> arrivalOf_;
  /// Branches of each live request not finished yet.
  std::unordered_map<RequestId, int32_t> liveBranches_;
  /// The orders within priorities (highest first): arrival (FCFS), and
  /// most cached pages, then arrival (LPM).
  std::set<std::pair<int64_t, Arrival>> byPriority_;
  std::set<std::tuple<int64_t, int64_t, Arrival>> byCachedPages_;
  /// Steps formed so far: the clock of aging.
  int64_t steps_ = 0;
  /// Whether `running` is fed one token this step: its prefill is done,
  /// its next token known or pending, it is not a prompt of n > 1 awaiting
  /// its fork, and no pending sample brings it to its max_tokens.
  bool decodesNext(const RunningRequest &running) const;
  /// Whether `waiter` has waited long enough to go first.
  bool aged(const Waiter &waiter) const {
    return config_.agingSteps > 0 &&
           steps_ - waiter.arrivalStep >= config_.agingSteps;
  }
  /// Waiters by the prefix hash of the first prompt page the cache lacks
  /// (while it can still match more), and of the last page it holds.
  std::unordered_map<uint64_t, std::set<Arrival>> byNextPage_, byLastPage_;
  std::vector<RunningRequest> running_;
  /// The union of the running requests' page hashes (the KV they are
  /// computing), counted.
  std::unordered_multiset<uint64_t> inFlight_;
  /// Running requests (indices) by the hash of their last whole page, as
  /// of the admission pass.
  std::unordered_map<uint64_t, std::vector<size_t>> frontiers_;
  SchedulerTotals totals_;
  double newTokenRatio_;
  uint64_t admissions_ = 0;
  /// Steps formed and not committed, oldest first: at most 2.
  std::deque<FormedStep> uncommitted_;
  /// Branches the last fork found no page for, until commit queues them.
  std::vector<RunningRequest> unforked_;
  /// Sequences preempted while the oldest uncommitted step samples them:
  /// out of the pool already, queued at that step's commit with their
  /// sample. (Preemption happens as a step is formed, when the one
  /// uncommitted step, if any, is the oldest: every one awaits it.)
  std::vector<RunningRequest> parked_;
  /// The waiter that outranks a running request, as preemptForPriority
  /// found it this step.
  std::optional<Arrival> priorityAdmission_;
  /// Page copies the pool made since the last step was formed: the next
  /// step reports them (EngineBatch::pageCopies).
  std::vector<PageCopy> pendingCopies_;
  /// Whether anything happened since the last admission attempt that could
  /// change its outcome (an arrival, a finish, a prompt entering the cache).
  bool admissionMayChange_ = true;
  uint64_t orderOperations_ = 0;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_SCHED_SCHEDULER_H
