"""The reference engine (examples/engine) serving a model on the GPU.

A random-weight Llama- or Gemma-2-style model built from a transformers
config (no download) serves requests sharing long system prompts through
attnc.Scheduler (admission, chunked prefill, decode, preemption), the
engine's paged KV caches, attnc's paged kernels for attention and greedy
sampling: the whole loop examples/engine/engine.py runs, here timed. It
runs twice on the same requests: with prefix reuse, and without (every
request in a cache namespace of its own, so nothing is shared), and
reports for each the wall time, the steps, the tokens generated and fed,
generated tokens per second and prompt tokens per second, the cache hits
and the preemptions. A short warm-up run first compiles the kernels.

With --overlap each of the two runs is made twice, with the synchronous
loop and with the overlapped one (step N+1 formed and launched before
step N is committed, so that the host's scheduling hides behind the
GPU's kernels), on the same requests, and the overlap's speedup is
reported beside the share of branches whose tokens the two loops agree on
(greedy on random bf16 weights: batches formed differently may round
differently, and near-ties flip; python/tests/test_engine.py holds both
loops to generate() on a model built for that).

Greedy identity with generate() is python/tests/test_engine.py's (and
`python3 -m engine`'s) business; this measures speed.

    PYTHONPATH=python:examples python3 benchmarks/engine_loop.py \\
        --out $OUT/engine

    PYTHONPATH=python:examples python3 benchmarks/engine_loop.py \\
        --overlap --out $OUT/engine-overlap

--cascade adds a run with prefix reuse and cascade levels (the scheduler
orders each step's rows by the radix tree and says which pages its shared
nodes hold; the engine runs attnc.CascadeAttention), times the attention
of every run with CUDA events, and prints how much of each step's KV was
read once for several requests.

--host-tier PAGES puts a host tier of that many pages under the radix
cache: evicted prefixes go there and are loaded back instead of computed
again (host_loaded_tokens); it matters once the pool (--pages) is too
small for the prefixes the requests share.
"""

import argparse
import json
import os
import random
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from engine.engine import Engine  # noqa: E402
from engine.model import CONFIGS, build_model  # noqa: E402


def make_requests(args, vocab_size):
    rng = random.Random(args.seed)
    systems = [[rng.randrange(1, vocab_size)
                for _ in range(args.system_tokens)]
               for _ in range(args.systems)]
    requests = []
    for rid in range(args.requests):
        own = [rng.randrange(1, vocab_size)
               for _ in range(rng.randint(args.own_min, args.own_max))]
        requests.append(dict(id=rid, prompt=systems[rid % args.systems] + own))
    return requests


def make_model(args):
    sizes = dict(num_hidden_layers=args.layers, hidden_size=args.hidden,
                 intermediate_size=args.intermediate,
                 num_attention_heads=args.q_heads,
                 num_key_value_heads=args.kv_heads, head_dim=args.head_dim,
                 vocab_size=args.vocab,
                 max_position_embeddings=args.system_tokens + args.own_max +
                 args.max_tokens + 16)
    if args.model == "gemma2":
        sizes["sliding_window"] = args.window
    return build_model(CONFIGS[args.model](**sizes), seed=args.seed,
                       dtype=getattr(torch, args.dtype), device=args.device)


def synchronize(args):
    if args.device == "cuda":
        torch.cuda.synchronize()


def serve(args, model, requests, reuse, overlap=False, cascade=False):
    """One run of the engine over `requests`: its numbers, and its
    outputs."""
    cascade_options = (dict(cascade=True,
                            cascade_min_sharers=args.cascade_min_sharers,
                            cascade_min_shared_tokens=args.cascade_min_tokens)
                       if cascade else {})
    engine = Engine(model, backend=args.backend, num_pages=args.pages,
                    page_size=args.page_size,
                    kv_dtype=getattr(torch, args.kv_dtype),
                    storage=args.storage, policy=args.policy,
                    token_budget=args.token_budget,
                    max_running=args.max_running, overlap=overlap,
                    host_pages=args.host_tier,
                    time_attention=args.cascade and args.backend == "attnc",
                    **cascade_options)
    for request in requests:
        engine.add(request["id"], request["prompt"],
                   max_tokens=args.max_tokens, n=args.n,
                   namespace=0 if reuse else request["id"] + 1)
    synchronize(args)
    wall = time.perf_counter()
    engine.run()
    synchronize(args)
    wall = time.perf_counter() - wall
    stats, history = engine.stats(), engine.history
    generated = sum(len(tokens) for tokens in engine.outputs.values())
    fed = sum(r.prefill_tokens for r in history) + sum(
        r.decodes for r in history)
    listed = sum(r.pages_listed for r in history)
    result = dict(
        reuse=reuse, overlap=overlap, cascade=cascade, steps=len(history),
        wall_s=wall,
        # Of the KV pages the steps' page tables list (every layer reads
        # them), the share cascade levels read once for several requests
        # instead of once per request.
        kv_read_once=1 - sum(r.pages_read for r in history) / max(1, listed),
        attention_ms=(engine.backend.attention_ms()
                      if args.cascade and args.backend == "attnc" else None),
        commit_wait_s=engine.commit_wait_s,
        steps_fed_by_uncommitted_samples=sum(
            1 for r in history if r.pending_rows),
        generated_tokens=generated, fed_tokens=fed,
        prompt_tokens=stats.prompt_tokens, cached_tokens=stats.cached_tokens,
        computed_prefill_tokens=stats.computed_prefill_tokens,
        recomputed_tokens=stats.recomputed_tokens,
        evicted_tokens=stats.evicted_tokens,
        host_loaded_tokens=stats.host_loaded_tokens,
        preemptions=stats.preemptions,
        generated_tokens_per_s=generated / wall,
        prompt_tokens_per_s=stats.prompt_tokens / wall)
    outputs = dict(engine.outputs)
    engine.close()
    return result, outputs


def agreement(outputs, reference):
    """The share of reference's branches whose tokens `outputs` equals."""
    same = sum(1 for key, tokens in reference.items()
               if outputs.get(key) == tokens)
    return same / max(1, len(reference))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--out", default=None, help="folder for results.json")
    add("--model", choices=sorted(CONFIGS), default="llama")
    add("--layers", type=int, default=8)
    add("--hidden", type=int, default=2048)
    add("--intermediate", type=int, default=5632)
    add("--q-heads", type=int, default=16)
    add("--kv-heads", type=int, default=4)
    add("--head-dim", type=int, default=128)
    add("--vocab", type=int, default=32000)
    add("--window", type=int, default=4096,
        help="gemma2's sliding window (its even layers)")
    add("--dtype", default="bfloat16", help="the model's weights")
    add("--kv-dtype", choices=("bfloat16", "float16"), default="bfloat16")
    add("--backend", choices=("attnc", "torch"), default="attnc")
    add("--device", default="cuda")
    add("--storage", choices=("own", "pool"), default="pool")
    add("--requests", type=int, default=128)
    add("--systems", type=int, default=8)
    add("--system-tokens", type=int, default=1500)
    add("--own-min", type=int, default=64)
    add("--own-max", type=int, default=512)
    add("--max-tokens", type=int, default=64)
    add("--n", type=int, default=1, help="parallel samples per request")
    add("--page-size", type=int, default=16)
    add("--pages", type=int, default=16384)
    add("--token-budget", type=int, default=8192)
    add("--max-running", type=int, default=128)
    add("--policy", default="lpm")
    add("--warmup-requests", type=int, default=4)
    add("--overlap", action="store_true",
        help="also run the overlapped loop (the next step formed and "
        "launched before this one is committed), beside the synchronous")
    add("--host-tier", type=int, default=0, metavar="PAGES",
        help="a host tier of PAGES pages under the radix cache")
    add("--cascade", action="store_true",
        help="also run prefix reuse with cascade levels (shared prefixes "
        "read once per step), and time every run's attention")
    add("--cascade-min-sharers", type=int, default=32)
    add("--cascade-min-tokens", type=int, default=2048)
    add("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("engine_loop needs a CUDA GPU (or --device cpu "
                         "--backend torch, a smoke test)")
    model = make_model(args)
    requests = make_requests(args, args.vocab)
    loops = (False, True) if args.overlap else (False,)
    # Compiles the kernels (decode, prefill, each layer kind) off the clock.
    for overlap in loops:
        serve(args, model, requests[:args.warmup_requests], reuse=True,
              overlap=overlap)
    if args.cascade:
        # Requests of one system prompt, any sharing a level: the
        # cascade's kernels compile here.
        eager = argparse.Namespace(**dict(vars(args), cascade_min_sharers=2,
                                          cascade_min_tokens=1))
        serve(eager, model, requests[::args.systems][:args.warmup_requests],
              reuse=True, cascade=True)
    results = []
    for reuse in (True, False):
        synchronous_outputs = None
        for overlap in loops:
            result, outputs = serve(args, model, requests, reuse, overlap)
            if overlap:
                result["same_tokens_as_synchronous"] = agreement(
                    outputs, synchronous_outputs)
            else:
                synchronous_outputs = outputs
            results.append(result)
            print(json.dumps(result), flush=True)
        if reuse and args.cascade:
            result, outputs = serve(args, model, requests, reuse,
                                    cascade=True)
            result["same_tokens_as_synchronous"] = agreement(
                outputs, synchronous_outputs)
            results.append(result)
            print(json.dumps(result), flush=True)
    device = (torch.cuda.get_device_name() if args.device == "cuda"
              else args.device)
    print(f"engine loop: {args.model}, {args.layers} layers, hidden "
          f"{args.hidden}, {args.q_heads}/{args.kv_heads} heads of "
          f"{args.head_dim}, {args.dtype} weights, {args.kv_dtype} KV "
          f"({args.storage} caches, {args.backend} attention); "
          f"{args.requests} requests, {args.systems} system prompts of "
          f"{args.system_tokens} tokens, {args.max_tokens} new tokens each, "
          f"{device}")
    for r in results:
        loop = (", overlapped" if r["overlap"] else "") + (
            ", cascade" if r["cascade"] else "")
        print(f"  {'with' if r['reuse'] else 'without'} prefix reuse{loop}: "
              f"{r['wall_s']:.2f} s, {r['steps']} steps, "
              f"{r['generated_tokens_per_s']:.0f} generated tokens/s, "
              f"{r['prompt_tokens_per_s'] / 1e3:.1f} k prompt tokens/s, "
              f"{r['cached_tokens']} of {r['prompt_tokens']} prompt tokens "
              f"from the cache ({r['host_loaded_tokens']} from the host "
              f"tier), {r['preemptions']} preemptions")

    def run_of(reuse, overlap, cascade=False):
        return next(r for r in results
                    if (r["reuse"], r["overlap"], r["cascade"]) ==
                    (reuse, overlap, cascade))

    for overlap in loops:
        loop = "overlapped" if overlap else "synchronous"
        speedup = (run_of(False, overlap)["wall_s"] /
                   run_of(True, overlap)["wall_s"])
        print(f"  prefix reuse: {speedup:.2f}x faster for the same "
              f"requests ({loop} loop)")
    for r in results:
        if not r["overlap"]:
            continue
        synchronous = run_of(r["reuse"], False)
        print(f"  overlap {'with' if r['reuse'] else 'without'} prefix "
              f"reuse: {synchronous['wall_s'] / r['wall_s']:.2f}x faster "
              f"than the synchronous loop; the host waited "
              f"{r['commit_wait_s']:.2f} s of {r['wall_s']:.2f} for samples "
              f"(synchronous: {synchronous['commit_wait_s']:.2f} s of "
              f"{synchronous['wall_s']:.2f}); "
              f"{r['steps_fed_by_uncommitted_samples']} of {r['steps']} "
              f"steps fed by uncommitted samples, "
              f"{100 * r['same_tokens_as_synchronous']:.0f}% of branches "
              f"with the synchronous loop's tokens")
    if args.cascade:
        plain, cascade = run_of(True, False), run_of(True, False, True)
        timed = (f"attention {cascade['attention_ms']:.1f} ms against "
                 f"{plain['attention_ms']:.1f} with prefix reuse alone "
                 f"({plain['attention_ms'] / cascade['attention_ms']:.2f}x); "
                 if cascade["attention_ms"] else "")
        print(f"  cascade: {timed}"
              f"{100 * cascade['kv_read_once']:.0f}% of the pages the page "
              f"tables list read once for several requests; wall "
              f"{plain['wall_s'] / cascade['wall_s']:.2f}x; "
              f"{100 * cascade['same_tokens_as_synchronous']:.0f}% of "
              f"branches with the same tokens")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(dict(args=vars(args), results=results), f, indent=1)


if __name__ == "__main__":
    main()
