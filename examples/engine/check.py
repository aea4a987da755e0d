"""Holds the engine to the model's own greedy generate(): the same
requests through both, every (request, branch) compared token by token,
with the numbers that say whether a difference could be a near-tie (the
reference's top-1 margin at each token, the engine's logit error there).

The default workload turns on what the engine must get right: requests
sharing long prompt prefixes (radix cache hits), a token budget below the
longest prompts (chunked prefill), a pool too small for all requests at
once (preemption and recomputation), and n > 1 parallel samples (the fork
and its page copies; greedy branches all equal the one reference).
"""

import copy
from collections import namedtuple

import torch

from .engine import Engine
from .model import CONFIGS, build_model, random_prompts, reference_generate

Workload = namedtuple("Workload", "requests shared_prefixes prefix_len "
                      "own_len max_tokens num_pages token_budget "
                      "max_running new_token_ratio")
Workload.__doc__ = """Requests (request i has n = 1 + i % 3 samples),
their prompts (a shared prefix of prefix_len tokens, then own_len =
(low, high) tokens of their own), max_tokens each, and the engine's pool
(pages of 16 tokens), token budget and running limit; new_token_ratio
is the share of their max_tokens the scheduler reserves pages for when it
admits requests (low: it admits more than fits, and preempts)."""

# Prompts of 53-248 tokens, 20 new tokens each, 19 branches; 32 pages of
# 16 tokens hold two or three requests' branches at once (the scheduler,
# reserving pages for a tenth of max_tokens, admits more and preempts 3),
# and a 64-token budget chunks every prompt.
DEFAULT_WORKLOAD = Workload(requests=10, shared_prefixes=3, prefix_len=48,
                            own_len=(5, 200), max_tokens=20, num_pages=32,
                            token_budget=64, max_running=8,
                            new_token_ratio=0.1)

Report = namedtuple("Report", "outputs reference mismatches min_margin "
                    "max_logit_error history stats")
Report.__doc__ = """outputs: {(request, branch): tokens} of the engine;
reference: {request: tokens} of generate(); mismatches: [(request, branch,
first differing index, reference margin there, engine logit error
there)]; min_margin: the smallest top-1 margin along the reference's
tokens; max_logit_error: the largest |engine - reference| logit over the
tokens before any mismatch; history and stats: the engine's."""


def samples_of(request):
    return 1 + request % 3


def make_model(name, seed=0, device="cpu"):
    return build_model(CONFIGS[name](), seed=seed, device=device)


def make_prompts(model, workload, seed=1):
    return random_prompts(model.config.vocab_size, workload.requests,
                          workload.shared_prefixes, workload.prefix_len,
                          workload.own_len, seed=seed)


def reference_outputs(model, prompts, max_tokens):
    """{request: (tokens, margins, logits)} of the model's generate()."""
    return {r: reference_generate(model, prompt, max_tokens)
            for r, prompt in enumerate(prompts)}


def run_engine(model, prompts, workload, backend, storage="own",
               kv_dtype=torch.float16, overlap=False, stop_tokens=(),
               host_pages=0, phases=1, **scheduler_options):
    """The engine (over a copy of the model: it takes over the copy's
    attention) run on the prompts, its loop overlapped when `overlap`, a
    host tier of host_pages under its cache, the prompts queued in
    `phases` consecutive groups, each once the last one finished (so that
    a later group finds what earlier ones left in the cache, or in its
    host tier), scheduler_options given to the scheduler (cascade=True...);
    returns it, finished."""
    engine = Engine(copy.deepcopy(model), backend=backend,
                    num_pages=workload.num_pages, kv_dtype=kv_dtype,
                    storage=storage, token_budget=workload.token_budget,
                    max_running=workload.max_running, record_logits=True,
                    initial_new_token_ratio=workload.new_token_ratio,
                    min_new_token_ratio=workload.new_token_ratio / 2,
                    overlap=overlap, stop_tokens=stop_tokens,
                    host_pages=host_pages, **scheduler_options)
    size = -(-len(prompts) // phases)
    for first in range(0, len(prompts), size):
        for r in range(first, min(first + size, len(prompts))):
            engine.add(r, prompts[r], max_tokens=workload.max_tokens,
                       n=samples_of(r))
        engine.run()
    return engine


def compare(engine, reference, prompts):
    """(mismatches, min_margin, max_logit_error) as Report has them. A
    token can flip only where the margin is below twice the logit error."""
    mismatches, errors = [], [0.0]
    for r in range(len(prompts)):
        tokens, margins, logits = reference[r]
        for branch in range(samples_of(r)):
            got = engine.outputs.get((r, branch), [])
            same = 0
            while (same < min(len(got), len(tokens)) and
                   got[same] == tokens[same]):
                same += 1
            rows = engine.logits.get((r, branch), [])
            count = min(len(rows), len(tokens))
            error = [(rows[i] - logits[i].cpu()).abs().max().item()
                     for i in range(count)]
            errors.extend(error[:same])
            if got != tokens:
                at = same
                mismatches.append((r, branch, at,
                                   margins[at] if at < len(margins) else None,
                                   error[at] if at < count else None))
    min_margin = min(min(m) for _, m, _ in reference.values())
    return mismatches, min_margin, max(errors)


def check(model_name, backend="torch", device="cpu", storage="own",
          workload=DEFAULT_WORKLOAD, seed=0, kv_dtype=torch.float16,
          overlap=False):
    """The model `model_name` ("llama", "gemma2") through generate() and
    through the engine (its loop overlapped when `overlap`) on the
    workload: a Report."""
    model = make_model(model_name, seed=seed, device=device)
    prompts = make_prompts(model, workload, seed=seed + 1)
    reference = reference_outputs(model, prompts, workload.max_tokens)
    engine = run_engine(model, prompts, workload, backend, storage, kv_dtype,
                        overlap)
    mismatches, min_margin, max_error = compare(engine, reference, prompts)
    report = Report(dict(engine.outputs),
                    {r: t for r, (t, _, _) in reference.items()},
                    mismatches, min_margin, max_error, engine.history,
                    engine.stats())
    engine.close()
    return report
