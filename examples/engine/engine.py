"""The reference engine loop: attnc's scheduler forms each forward pass,
the model runs it over paged KV caches, greedy sampling commits it.

    engine = Engine(model, backend="attnc", num_pages=4096, overlap=True)
    engine.add(0, prompt, max_tokens=64, n=2)
    outputs = engine.run()          # {(request, branch): [tokens]}

One step, in order:
  1. scheduler.step(): the batch (decodes first, then prefill chunks),
     its page table, the slots its tokens' K/V go to, the rows to sample;
  2. the step's page copies in every layer (a fork's copy-on-write),
     then its page transfers (a host tier's offloads and loads);
  3. the model's forward over the step's tokens packed in one row, at
     their positions; in each layer the engine's attention writes the
     layer's K/V at the step's slots and attends through the page table
     (attnc's paged kernels, or the torch reference), queries and caches
     in `kv_dtype`, everything else in the model's dtype;
  4. logits of the sample rows only, a token for each sampler, left on
     the device (a copy to the host is queued, not waited for);
  5. scheduler.commit_tokens(step, tokens), once they reach the host.

The synchronous loop runs 1-5 for one step, then the next. The
overlapped loop (overlap=True; vLLM's async scheduling, SGLang's overlap
scheduler) forms step N+1 while step N is uncommitted, so that on the GPU
the CPU's scheduling and launching hide behind the kernels:

    s1 = step(); launch(s1)
    loop { s2 = step(); launch(s2); commit(s1); s1 = s2 }   then commit(s1)

A decode row of s2 whose input is s1's still uncommitted sample holds -1
and `token_from_sample[row] = k`: launch(s2) fills it from s1's sampled
tokens on the device (a gather, fill_pending_tokens), so nothing waits
for s1 before s2 is queued; commit(s1) then waits for s1's tokens alone
(an event recorded after s1's sampling), not for s2. Launching s2 before
committing s1 is what keeps the GPU busy while the host commits: the
scheduler needs nothing from commit(s1) to run s2 (its page copies and
slots were decided when it was formed; a request s1 stopped has a wasted
row in s2, whose sample the scheduler and the outputs ignore).

Where later work slots in: the `sampler` gets the step with the logits,
so one that accepts several draft tokens per request from several rows is
speculative verification (once the scheduler lists those rows); the
storage (caches.py) owns where pages live (host_pages: a host tier under
the radix cache, whose transfers the storage applies).
"""

import time
from collections import namedtuple

import torch

import attnc

from .attention import ENGINE_ATTENTION, make_backend
from .caches import STORAGE


StepRecord = namedtuple("StepRecord", "requests decodes prefill_tokens "
                        "page_copies preempted pending_rows pages_listed "
                        "pages_read")
StepRecord.__doc__ = """What the scheduler formed in one step; pending_rows
counts the rows fed from the previous step's uncommitted samples (only
the overlapped loop has any). pages_listed: the KV pages of every
request's page table; pages_read: those each layer's attention reads,
fewer where cascade levels read a shared prefix once for all its
requests."""

# A step launched and not yet committed: its samplers' tokens on the
# device (`sampled`), their copy on the host (`host`, complete once
# `ready` is: None where the device is the CPU) and, when the engine
# records them, the sampled rows' logits.
Launched = namedtuple("Launched", "step sampled host ready logits")


def greedy(logits, step):
    """Top-1 token of each row of logits [rows, vocab] (a row per sampler
    of `step`), on the logits' device."""
    return logits.argmax(dim=-1)


def to_device(array, device):
    """A step's host array on `device`, queued without waiting for the
    kernels queued before: on a GPU through pinned memory (a copy from
    pageable memory may wait, and torch's blocking one waits for the
    whole stream: the previous step, under overlap)."""
    if device.type != "cuda":
        return array
    pinned = torch.empty(array.shape, dtype=array.dtype, pin_memory=True)
    pinned.copy_(array)
    # torch's pinned allocator keeps the buffer until the copy ran.
    return pinned.to(device, non_blocking=True)


def fill_pending_tokens(tokens, from_sample, sampled):
    """tokens [rows] (on the device) with each row whose from_sample is
    k >= 0 replaced by sampled[k]: the previous step's sample it feeds. A
    device gather, queued behind the kernels that sample."""
    pending = from_sample >= 0
    return torch.where(pending, sampled[from_sample.clamp(min=0)], tokens)


class StepContext:
    """What the engine's attention needs from the step inside the model's
    forward: where the step's K/V go and how to attend.

    slot_mapping is the step's (on the host); rows of a negative slot are
    not written. Which rows those are is found on the host, once a step:
    a mask applied on the device would wait for every kernel queued
    before it (the previous step's, under overlap) in every layer."""

    def __init__(self, caches, backend, slot_mapping, device, kv_dtype):
        self._caches, self._backend = caches, backend
        self._kv_dtype = kv_dtype
        kept = slot_mapping >= 0
        self._rows = None
        if not bool(kept.all()):
            self._rows = to_device(kept.nonzero()[:, 0], device)
            slot_mapping = slot_mapping[kept]
        self._slots = to_device(slot_mapping, device)

    def attend(self, layer, q, k, v, spec):
        if self._rows is not None:
            k, v = k[self._rows], v[self._rows]
        self._caches.write(layer, k, v, self._slots)
        k_cache, v_cache = self._caches.layer(layer)
        return self._backend.run(q.to(self._kv_dtype), k_cache, v_cache,
                                 spec)


class Engine:
    """Serves requests with `model` (a transformers causal LM, whose
    attention it takes over) through attnc's scheduler and radix cache.

    backend: "attnc" (the GPU) or "torch" (reference, any device).
    storage: "own" (per-layer tensors beside an accounting pool; the engine
    applies page copies) or "pool" (the attnc.KVPool's own caches).
    kv_dtype: the caches' and attention queries' dtype (attnc's paged
    kernels take bfloat16 and float16).
    host_pages: a host tier of that many pages under the radix cache
    (evicted prefixes go there and are loaded back, not recomputed).
    overlap: run() forms each step before the last one is committed (the
    module docstring's overlapped loop); the tokens are the same.
    sampler(logits, step): a token id for each row of logits (one per
    sampler of the step), best as a tensor on the logits' device.
    record_logits keeps each sampled token's logits row, by (request,
    branch), in `logits` (for checking numerics against a reference).
    time_attention: the attnc backend times each attention run with CUDA
    events (its attention_ms()).
    scheduler_options go to attnc.Scheduler (initial_new_token_ratio...;
    cascade=True: steps carry cascade levels, which the attnc backend runs
    as attnc.CascadeAttention).
    """

    def __init__(self, model, backend="attnc", num_pages=4096, page_size=16,
                 kv_dtype=torch.float16, storage="own", policy="lpm",
                 token_budget=None, max_running=None, sampler=greedy,
                 stop_tokens=(), record_logits=False, overlap=False,
                 host_pages=0, time_attention=False, **scheduler_options):
        config = model.config
        self.model = model
        model.set_attn_implementation(ENGINE_ATTENTION)
        self.device = next(model.parameters()).device
        self.kv_dtype = kv_dtype
        self.caches = STORAGE[storage](
            config.num_hidden_layers, num_pages, page_size,
            config.num_key_value_heads, config.head_dim, kv_dtype,
            self.device, host_pages=host_pages)
        self.backend = make_backend(backend, config, page_size, kv_dtype,
                                    time_attention) \
            if isinstance(backend, str) else backend
        self.pool = self.caches.pool
        self.cache = attnc.RadixCache(self.pool, host_pages=host_pages)
        self.scheduler = attnc.Scheduler(self.pool, self.cache, policy=policy,
                                         token_budget=token_budget,
                                         max_running=max_running,
                                         **scheduler_options)
        self.sampler, self.stop_tokens = sampler, set(stop_tokens)
        self.overlap = overlap
        self.outputs = {}
        self.logits = {} if record_logits else None
        # One StepRecord per step: what the scheduler formed, for tests
        # and benchmarks to see chunking, forks, preemptions and overlap
        # happen.
        self.history = []
        # Branches whose stop token the last commit took: the step
        # formed before that commit (the overlapped loop's next) may
        # sample them once more, which is not output; later steps do not.
        self._just_stopped = set()
        # Those once-more samples, dropped: the overlapped loop's wasted
        # rows.
        self.dropped_samples = 0
        # Seconds the host sat waiting for the device's samples at
        # commits: under overlap, what the device took beyond the host's
        # own work (the loop is device-bound when it is most of the wall).
        self.commit_wait_s = 0.0

    def add(self, request_id, prompt, max_tokens, n=1, namespace=0):
        self.scheduler.add(request_id, prompt, max_tokens=max_tokens,
                           namespace=namespace, n=n)

    @property
    def idle(self):
        """Nothing waits and nothing runs (a step may be uncommitted)."""
        return self.scheduler.idle

    def _form(self):
        step = self.scheduler.step()
        pending = int((step.tensor("token_from_sample") >= 0).sum())
        listed = int(step.page_table[0][-1]) if step.num_tokens else 0
        levels = step.cascade_levels
        read = (sum(int(level[1][-1]) for level in levels) if levels
                else listed)
        self.history.append(StepRecord(
            step.num_requests, step.num_decodes, step.prefill_tokens,
            len(step.page_copies), len(step.preempted), pending, listed,
            read))
        return step

    def _step_tokens(self, step, previous):
        """The step's input tokens on the device, its pending rows filled
        from `previous` (the Launched step it was formed over, or None)."""
        tokens = to_device(step.tensor("tokens"), self.device).long()
        from_sample = step.tensor("token_from_sample")
        if not bool((from_sample >= 0).any()):  # host memory: no sync
            return tokens
        if previous is None:
            raise RuntimeError("a step reads samples of a step the engine "
                               "did not launch")
        from_sample = to_device(from_sample, self.device).long()
        return fill_pending_tokens(tokens, from_sample, previous.sampled)

    @torch.no_grad()
    def _launch(self, step, previous=None):
        """Queues the step's forward and sampling (on the GPU: returns
        before they ran); a Launched."""
        device = self.device
        logits = None
        # Even a step without tokens: what they moved, later steps read.
        self.caches.copy_pages(step.page_copies)
        self.caches.transfer_pages(step.page_transfers)
        if step.num_tokens:
            self.backend.plan(*step.page_table, step.tensor("qo_indptr"),
                              cascade_levels=step.cascade_levels)
            context = StepContext(self.caches, self.backend,
                                  step.tensor("slot_mapping"), device,
                                  self.kv_dtype)
            sample_rows = to_device(step.tensor("sample_rows"),
                                    device).long()
            positions = to_device(step.tensor("positions"), device).long()
            out = self.model(
                input_ids=self._step_tokens(step, previous)[None],
                position_ids=positions[None], use_cache=False,
                logits_to_keep=sample_rows, engine_step=context)
            logits = out.logits[0].float()
            sampled = torch.as_tensor(self.sampler(logits, step),
                                      device=device).long()
        else:
            sampled = torch.empty(0, dtype=torch.long, device=device)
        ready = None
        if sampled.is_cuda:
            # Queued behind the sampling; commit waits for this copy
            # alone, not for steps queued after.
            host = torch.empty(sampled.shape, dtype=torch.int32,
                               pin_memory=True)
            host.copy_(sampled, non_blocking=True)
            ready = torch.cuda.Event()
            ready.record()
        else:
            host = sampled.to(torch.int32)
        if self.logits is None:
            logits = None
        return Launched(step, sampled, host, ready, logits)

    def _commit(self, launched):
        """Commits a launched step's samples once they are on the host;
        returns the ids of the requests that finished."""
        if launched.ready is not None:
            waited = time.perf_counter()
            launched.ready.synchronize()
            self.commit_wait_s += time.perf_counter() - waited
        step = launched.step
        tokens = launched.host.tolist()
        stops = [token in self.stop_tokens for token in tokens] \
            if self.stop_tokens else None
        stopped = set()
        for i, key in enumerate(zip(step.samplers, step.sampler_branches)):
            if key in self._just_stopped:
                self.dropped_samples += 1
                continue
            self.outputs.setdefault(key, []).append(tokens[i])
            if stops and stops[i]:
                stopped.add(key)
            if launched.logits is not None:
                self.logits.setdefault(key, []).append(
                    launched.logits[i].cpu())
        self._just_stopped = stopped
        return self.scheduler.commit_tokens(step, launched.host, stops)

    def step(self):
        """Runs one scheduler step, synchronously (nothing may be
        uncommitted); returns the ids of the requests that finished."""
        return self._commit(self._launch(self._form()))

    def run(self, overlap=None):
        """Steps until every request finished, overlapped when `overlap`
        (default: the engine's setting); returns the outputs, a list of
        tokens for each (request, branch)."""
        if self.overlap if overlap is None else overlap:
            return self._run_overlapped()
        while not self.idle:
            self.step()
        return self.outputs

    def _run_overlapped(self):
        in_flight = None  # launched, not committed
        while True:
            if self.idle:
                # A request preempted under the uncommitted step rejoins
                # the queue at its commit: idle is final only after it.
                if in_flight is None:
                    return self.outputs
                self._commit(in_flight)
                in_flight = None
                continue
            launched = self._launch(self._form(), in_flight)
            if in_flight is not None:
                self._commit(in_flight)
            in_flight = launched

    def stats(self):
        return self.scheduler.stats()

    @property
    def steps(self):
        return len(self.history)

    def close(self):
        self.scheduler.close()
        self.cache.close()
        self.caches.close()
