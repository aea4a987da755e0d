"""The reference engine loop: attnc's scheduler forms each forward pass,
the model runs it over paged KV caches, greedy sampling commits it.

    engine = Engine(model, backend="attnc", num_pages=4096)
    engine.add(0, prompt, max_tokens=64, n=2)
    outputs = engine.run()          # {(request, branch): [tokens]}

One step, in order:
  1. scheduler.step(): the batch (decodes first, then prefill chunks),
     its page table, the slots its tokens' K/V go to, the rows to sample;
  2. the step's page copies in every layer (a fork's copy-on-write);
  3. the model's forward over the step's tokens packed in one row, at
     their positions; in each layer the engine's attention writes the
     layer's K/V at the step's slots and attends through the page table
     (attnc's paged kernels, or the torch reference), queries and caches
     in `kv_dtype`, everything else in the model's dtype;
  4. logits of the sample rows only, a token for each sampler;
  5. scheduler.commit(samples).

Where later work slots in: the `sampler` gets the step with the logits,
so one that accepts several draft tokens per request from several rows is
speculative verification (once the scheduler lists those rows); the
storage (caches.py) owns where pages live, so a host tier is the pool's;
a step whose tokens come from the previous step's samples (overlap,
`token_from_sample`) is read in `_step_tokens`.
"""

from collections import namedtuple

import torch

import attnc

from .attention import ENGINE_ATTENTION, make_backend
from .caches import STORAGE


StepRecord = namedtuple("StepRecord", "requests decodes prefill_tokens "
                        "page_copies preempted")


def greedy(logits, step):
    """Top-1 token of each row of logits [rows, vocab] (a row per sampler
    of `step`)."""
    return logits.argmax(dim=-1).tolist()


class StepContext:
    """What the engine's attention needs from the step inside the model's
    forward: where the step's K/V go and how to attend."""

    def __init__(self, caches, backend, slots, kv_dtype):
        self._caches, self._backend = caches, backend
        self._slots, self._kv_dtype = slots, kv_dtype

    def attend(self, layer, q, k, v, spec):
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
    record_logits keeps each sampled token's logits row, by (request,
    branch), in `logits` (for checking numerics against a reference).
    scheduler_options go to attnc.Scheduler (initial_new_token_ratio...).
    """

    def __init__(self, model, backend="attnc", num_pages=4096, page_size=16,
                 kv_dtype=torch.float16, storage="own", policy="lpm",
                 token_budget=None, max_running=None, sampler=greedy,
                 stop_tokens=(), record_logits=False, **scheduler_options):
        config = model.config
        self.model = model
        model.set_attn_implementation(ENGINE_ATTENTION)
        self.device = next(model.parameters()).device
        self.kv_dtype = kv_dtype
        self.caches = STORAGE[storage](
            config.num_hidden_layers, num_pages, page_size,
            config.num_key_value_heads, config.head_dim, kv_dtype,
            self.device)
        self.backend = make_backend(backend, config, page_size, kv_dtype) \
            if isinstance(backend, str) else backend
        self.pool = self.caches.pool
        self.cache = attnc.RadixCache(self.pool)
        self.scheduler = attnc.Scheduler(self.pool, self.cache, policy=policy,
                                         token_budget=token_budget,
                                         max_running=max_running,
                                         **scheduler_options)
        self.sampler, self.stop_tokens = sampler, set(stop_tokens)
        self.outputs = {}
        self.logits = {} if record_logits else None
        # One StepRecord per step: what the scheduler formed, for tests
        # and benchmarks to see chunking, forks and preemptions happen.
        self.history = []
        self._last_sampled = []

    def add(self, request_id, prompt, max_tokens, n=1, namespace=0):
        self.scheduler.add(request_id, prompt, max_tokens=max_tokens,
                           namespace=namespace, n=n)

    @property
    def idle(self):
        return self.scheduler.idle

    def _step_tokens(self, step):
        tokens = step.tensor("tokens").long()
        from_sample = getattr(step, "token_from_sample", None)
        if from_sample is not None:
            # Overlap: rows formed before the previous step's samples were
            # committed read them from that step's sampled tokens.
            from_sample = torch.as_tensor(from_sample).long()
            pending = from_sample >= 0
            if pending.any():
                last = torch.tensor(self._last_sampled, dtype=torch.long)
                tokens[pending] = last[from_sample[pending]]
        return tokens

    @torch.no_grad()
    def step(self):
        """Runs one scheduler step; returns the ids of the requests that
        finished."""
        step = self.scheduler.step()
        self.history.append(StepRecord(
            step.num_requests, step.num_decodes, step.prefill_tokens,
            len(step.page_copies), len(step.preempted)))
        rows = []
        if step.num_tokens:
            self.caches.copy_pages(step.page_copies)
            device = self.device
            self.backend.plan(*step.page_table,
                              step.tensor("qo_indptr"))
            context = StepContext(self.caches, self.backend,
                                  step.tensor("slot_mapping").to(device),
                                  self.kv_dtype)
            sample_rows = step.tensor("sample_rows").long().to(device)
            out = self.model(
                input_ids=self._step_tokens(step).to(device)[None],
                position_ids=step.tensor("positions").long().to(device)[None],
                use_cache=False, logits_to_keep=sample_rows,
                engine_step=context)
            logits = out.logits[0].float()
            rows = self.sampler(logits, step)
        samples = []
        for i, (request, branch) in enumerate(zip(step.samplers,
                                                  step.sampler_branches)):
            token = rows[i]
            self.outputs.setdefault((request, branch), []).append(token)
            if self.logits is not None:
                self.logits.setdefault((request, branch), []).append(
                    logits[i].cpu())
            samples.append(attnc.Sample(request, token,
                                        token in self.stop_tokens, branch))
        self._last_sampled = rows
        return self.scheduler.commit(samples)

    def run(self):
        """Steps until every request finished; returns the outputs, a list
        of tokens for each (request, branch)."""
        while not self.idle:
            self.step()
        return self.outputs

    def stats(self):
        return self.scheduler.stats()

    @property
    def steps(self):
        return len(self.history)

    def close(self):
        self.scheduler.close()
        self.cache.close()
        self.caches.close()
