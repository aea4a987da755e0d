"""The serving loop on the GPU, driven the way an inference engine drives it.

A workload of requests sharing long system prompts goes through
attnc.Scheduler (admission, chunked prefill, decode, preemption) -> a device
attnc.KVPool (append_slots at each step's slot mapping) -> attnc.PagedAttention
over the pool's caches, with random keys, values and queries standing in for
a model's, and a stand-in sampler that stops each request at its answer's
length. It runs twice on the same requests: with prefix reuse, and without
(every request in a cache namespace of its own, so nothing is shared), and
reports for each the attention time (CUDA events around the attention
calls, `--layers` per step as a model's layers would reuse the step's plan),
the tokens fed, and the prompt tokens served per second of attention.

Every `--check-every`th step compares a few requests' outputs against
PyTorch attention in float32 over contiguous copies of their keys and
values, gathered from the pool through the step's page table; a relative
error of 1e-2 or NaN fails the run.

    PYTHONPATH=python python3 benchmarks/engine_loop.py --out $OUT/engine
"""

import argparse
import json
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attnc  # noqa: E402

BF16 = torch.bfloat16


def make_requests(args):
    rng = random.Random(args.seed)
    systems = [[rng.randrange(1, 50000) for _ in range(args.system_tokens)]
               for _ in range(args.systems)]
    requests = []
    for rid in range(args.requests):
        own = [rng.randrange(1, 50000)
               for _ in range(rng.randint(args.own_min, args.own_max))]
        answer = rng.randint(args.answer_min, args.answer_max)
        requests.append(dict(id=rid, prompt=systems[rid % args.systems] + own,
                             answer=answer))
    return requests


def reference(q, k, v, q_len, kv_len):
    """float32 causal attention, queries at the last q_len positions."""
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)
    v = v.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q.float(), k) / q.shape[-1] ** 0.5
    rows = torch.arange(q_len, device=q.device)[:, None] + (kv_len - q_len)
    cols = torch.arange(kv_len, device=q.device)[None, :]
    scores = scores.masked_fill(cols > rows, float("-inf"))
    return torch.einsum("hqk,khd->qhd", scores.softmax(-1), v)


def check_step(step, q, out, kc, vc, page_size, picks):
    worst = 0.0
    for r in picks:
        lo, hi = step.qo_indptr[r], step.qo_indptr[r + 1]
        pages = step.kv_indices[step.kv_indptr[r]:step.kv_indptr[r + 1]]
        kv_len = (len(pages) - 1) * page_size + step.kv_last_page_len[r]
        index = torch.tensor(pages, device="cuda")
        k = kc[index].flatten(0, 1)[:kv_len]
        v = vc[index].flatten(0, 1)[:kv_len]
        want = reference(q[lo:hi], k, v, hi - lo, kv_len)
        got = out[lo:hi].float()
        if torch.isnan(got).any():
            return float("nan")
        error = ((got - want).norm() / want.norm().clamp_min(1e-30)).item()
        worst = max(worst, error)
    return worst


def time_split(step, q, joint, kc, vc, decode_part, prefill_part, layers):
    """The step's decodes and prefill chunks as two launches: their time,
    after checking that they compute what the joint launch did."""
    d = step.num_decodes
    indptr, indices, last = step.page_table
    qo = step.tensor("qo_indptr")
    decode_part.plan(indptr[:d + 1].clone(), indices, last[:d].clone())
    first = int(indptr[d])
    prefill_part.plan(indptr[d:] - first, indices[first:].clone(),
                      last[d:].clone(), qo_indptr=qo[d:] - int(qo[d]))
    tokens = int(qo[d])
    q_decode, q_prefill = q[:tokens], q[tokens:]
    out_decode = torch.full_like(q_decode, float("nan"))
    out_prefill = torch.full_like(q_prefill, float("nan"))
    begin = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(layers):
        decode_part.run(q_decode, kc, vc, out=out_decode)
        prefill_part.run(q_prefill, kc, vc, out=out_prefill)
    end.record()
    end.synchronize()
    split = torch.cat([out_decode, out_prefill]).float()
    error = ((split - joint.float()).norm() / joint.float().norm()).item()
    if not error < 1e-2:
        raise SystemExit(f"the split launches differ from the joint one by "
                         f"{error}")
    return begin.elapsed_time(end)


def serve(args, requests, reuse):
    pool = attnc.KVPool(args.pages, page_size=args.page_size,
                        num_kv_heads=args.kv_heads, head_dim=args.head_dim,
                        dtype="bfloat16", memory="device")
    cache = attnc.RadixCache(pool)
    scheduler = attnc.Scheduler(pool, cache, policy="lpm",
                                token_budget=args.token_budget,
                                max_running=args.max_running)
    kc, vc = pool.caches()
    def wrapper():
        return attnc.PagedAttention(args.q_heads, args.kv_heads,
                                    args.head_dim, args.page_size,
                                    kv_layout="NHD", dtype="bfloat16",
                                    causal=True)
    attention = wrapper()
    # Mixed steps are also timed split into a decode launch and a prefill
    # launch, each planned as such, to see what one ragged launch costs.
    decode_part, prefill_part = wrapper(), wrapper()
    answers = {}
    for request in requests:
        scheduler.add(request["id"], request["prompt"],
                      max_tokens=args.max_tokens,
                      namespace=0 if reuse else request["id"] + 1)
        answers[request["id"]] = [request["answer"], 0]

    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    rng = random.Random(args.seed)
    steps = fed = checked = 0
    attention_ms, decode_only_ms, worst = 0.0, 0.0, 0.0
    mixed_steps, mixed_ms, mixed_split_ms = 0, 0.0, 0.0
    wall = time.perf_counter()
    while not scheduler.idle:
        step = scheduler.step()
        steps += 1
        tokens = step.num_tokens
        if tokens:
            k = torch.randn(tokens, args.kv_heads, args.head_dim, device="cuda",
                            dtype=BF16, generator=gen)
            v = torch.randn_like(k)
            pool.append_slots(k, v, step.tensor("slot_mapping").cuda())
            q = torch.randn(tokens, args.q_heads, args.head_dim, device="cuda",
                            dtype=BF16, generator=gen)
            out = torch.full_like(q, float("nan"))
            attention.plan(*step.page_table, qo_indptr=step.tensor("qo_indptr"))
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(args.layers):
                attention.run(q, kc, vc, out=out)
            end.record()
            end.synchronize()
            elapsed = begin.elapsed_time(end)
            attention_ms += elapsed
            if step.prefill_tokens == 0:
                decode_only_ms += elapsed
            elif step.num_decodes:
                mixed_steps += 1
                mixed_ms += elapsed
                mixed_split_ms += time_split(step, q, out, kc, vc,
                                             decode_part, prefill_part,
                                             args.layers)
            fed += tokens
            if steps % args.check_every == 1:
                picks = rng.sample(range(step.num_requests),
                                   min(3, step.num_requests))
                error = check_step(step, q, out, kc, vc, args.page_size, picks)
                worst = error if error != error else max(worst, error)
                checked += len(picks)
                if not error < 1e-2:
                    raise SystemExit(f"step {steps}: relative error {error} "
                                     f"against float32 attention")
        samples = []
        for rid in step.samplers:
            answer = answers[rid]
            answer[1] += 1
            samples.append((rid, 1000 + answer[1], answer[1] >= answer[0]))
        scheduler.commit(samples)
    wall = time.perf_counter() - wall
    stats = scheduler.stats()
    prompt_tokens = sum(len(r["prompt"]) for r in requests)
    result = dict(
        reuse=reuse, steps=steps, fed_tokens=fed,
        prompt_tokens=prompt_tokens, cached_tokens=stats.cached_tokens,
        preemptions=stats.preemptions, attention_ms=attention_ms,
        decode_only_steps_ms=decode_only_ms, mixed_steps=mixed_steps,
        mixed_steps_ms=mixed_ms, mixed_steps_split_ms=mixed_split_ms,
        wall_s=wall, checked_requests=checked, worst_error=worst,
        prompt_tokens_per_attention_s=prompt_tokens / (attention_ms / 1e3),
        fed_tokens_per_attention_s=fed / (attention_ms / 1e3))
    scheduler.close()
    cache.close()
    pool.close()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--out", default=None, help="folder for results.json")
    add("--requests", type=int, default=256)
    add("--systems", type=int, default=8)
    add("--system-tokens", type=int, default=2000)
    add("--own-min", type=int, default=64)
    add("--own-max", type=int, default=512)
    add("--answer-min", type=int, default=16)
    add("--answer-max", type=int, default=128)
    add("--max-tokens", type=int, default=128)
    add("--q-heads", type=int, default=32)
    add("--kv-heads", type=int, default=8)
    add("--head-dim", type=int, default=128)
    add("--page-size", type=int, default=16)
    add("--pages", type=int, default=16384)
    add("--token-budget", type=int, default=8192)
    add("--max-running", type=int, default=128)
    add("--layers", type=int, default=4)
    add("--check-every", type=int, default=10)
    add("--seed", type=int, default=1)
    args = parser.parse_args()
    requests = make_requests(args)
    results = []
    for reuse in (True, False):
        result = serve(args, requests, reuse)
        results.append(result)
        print(json.dumps(result), flush=True)
    with_reuse, without = results
    print(f"engine loop: {args.requests} requests, {args.systems} system "
          f"prompts of {args.system_tokens} tokens, {args.layers} layers a "
          f"step, {torch.cuda.get_device_name()}")
    for r in results:
        print(f"  {'with' if r['reuse'] else 'without'} prefix reuse: "
              f"{r['steps']} steps, {r['fed_tokens']} tokens fed, "
              f"{r['cached_tokens']} of {r['prompt_tokens']} prompt tokens "
              f"from the cache, {r['preemptions']} preemptions, attention "
              f"{r['attention_ms']:.1f} ms ({r['decode_only_steps_ms']:.1f} "
              f"in decode-only steps), "
              f"{r['prompt_tokens_per_attention_s'] / 1e6:.2f} M prompt "
              f"tokens/s of attention, wall {r['wall_s']:.1f} s, "
              f"{r['checked_requests']} requests checked (worst error "
              f"{r['worst_error']:.1e})")
    print(f"  prefix reuse: {without['attention_ms'] / with_reuse['attention_ms']:.2f}x "
          f"less attention time for the same requests")
    for r in results:
        if r["mixed_steps"]:
            print(f"  {'with' if r['reuse'] else 'without'} reuse, "
                  f"{r['mixed_steps']} mixed steps: one ragged launch "
                  f"{r['mixed_steps_ms']:.1f} ms, a decode and a prefill "
                  f"launch {r['mixed_steps_split_ms']:.1f} ms")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(dict(args=vars(args), results=results), f, indent=1)


if __name__ == "__main__":
    main()
