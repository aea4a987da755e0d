"""Serves a request trace through attnc's scheduler with a stand-in model.

    PYTHONPATH=python python3 examples/serve_trace.py    # the bundled trace
    PYTHONPATH=python python3 examples/serve_trace.py my.jsonl --json

The trace is JSON lines, one request each, as `attnc sim --trace` reads them
(docs/SIMULATOR.md): "prompt" (token ids) and "output_len" are required;
"id", "arrival", "max_tokens" (when absent 4096, as `attnc sim`'s
--default-max-tokens: a server's default, never the answer's length, which
no scheduler knows; raised to output_len if that is longer), "priority" and
"namespace" are optional. Requests are queued at the start in arrival order
and renumbered densely, as the simulator replays a trace.

The loop is an engine's: each step the scheduler forms a forward pass
(which requests, which tokens at which positions, where their keys and
values go, which pages attention reads); a model would run it (write the
step's K/V with pool.append_slots, attend with attnc.PagedAttention over
step.page_table) and sample. The stand-in here samples each request's
synthetic token (the simulator's) and says stop at its output_len, so that
the pool is only accounted (memory "accounting"), no GPU needed.
"""

import argparse
import json
import math
import sys

import attnc

MASK64 = (1 << 64) - 1


def output_token(request, position):
    """The simulator's synthetic output token (serving/sched/Request.cpp):
    deterministic, and distinct from the traces' prompt tokens, so that a
    later turn quoting an answer finds it in the cache."""
    x = (request * 0x9E3779B97F4A7C15 + position) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    x ^= x >> 31
    return (1 << 20) + x % ((1 << 31) - (1 << 20))


# max_tokens of a request that gives none (serving/sim/Workloads.h,
# kDefaultTraceMaxTokens).
DEFAULT_MAX_TOKENS = 4096


class TraceError(ValueError):
    pass


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _integer(line, field, value, lo, hi):
    # JSON numbers with a zero fraction are integers too ("2.0"), as in
    # the runtime's reader; bools are not numbers.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or \
            not lo <= value <= hi:
        raise TraceError(f"line {line}: \"{field}\" must be an integer in "
                         f"[{lo}, {hi}], got {json.dumps(value)}")
    return value


def read_trace(path):
    """The trace's requests as dicts (id, prompt, output_len, max_tokens,
    priority, namespace), in arrival order, ids renumbered from 0."""
    requests, ids = [], {}
    with open(path, encoding="utf-8-sig") as lines:
        for number, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                fields = json.loads(text, parse_constant=_reject_constant)
            except ValueError as error:
                raise TraceError(f"line {number}: {error}") from None
            if not isinstance(fields, dict):
                raise TraceError(f"line {number}: expected an object")
            for required in ("prompt", "output_len"):
                if required not in fields:
                    raise TraceError(f"line {number}: missing "
                                     f"\"{required}\"")
            prompt = fields["prompt"]
            if not isinstance(prompt, list) or not 1 <= len(prompt) <= 2**20:
                raise TraceError(f"line {number}: \"prompt\" must be an "
                                 f"array of 1 to 2^20 token ids")
            prompt = [_integer(number, "prompt", t, 0, 2**31 - 1)
                      for t in prompt]
            output_len = _integer(number, "output_len", fields["output_len"],
                                  1, 2**20)
            max_tokens = _integer(number, "max_tokens",
                                  fields.get("max_tokens",
                                             max(DEFAULT_MAX_TOKENS,
                                                 output_len)), 1, 2**20)
            if max_tokens < output_len:
                raise TraceError(f"line {number}: \"max_tokens\" "
                                 f"{max_tokens} is less than \"output_len\" "
                                 f"{output_len}")
            arrival = fields.get("arrival", 0)
            if isinstance(arrival, bool) or \
                    not isinstance(arrival, (int, float)) or \
                    not 0 <= arrival <= 1e9:
                raise TraceError(f"line {number}: \"arrival\" must be a "
                                 f"number of seconds in [0, 1e9], got "
                                 f"{json.dumps(arrival)}")
            if "id" in fields:
                key = json.dumps(fields["id"])
                if key in ids:
                    raise TraceError(f"line {number}: \"id\" repeats line "
                                     f"{ids[key]}'s")
                ids[key] = number
            requests.append(dict(
                arrival=float(arrival), prompt=prompt, output_len=output_len,
                max_tokens=max_tokens,
                priority=_integer(number, "priority",
                                  fields.get("priority", 0), -10**6, 10**6),
                namespace=_integer(number, "namespace",
                                   fields.get("namespace", 0), 0,
                                   2**53 - 1)))
    if not requests:
        raise TraceError("the trace holds no request")
    requests.sort(key=lambda r: r["arrival"])  # stable: ties keep file order
    for number, request in enumerate(requests):
        request["id"] = number
    return requests


def serve(requests, page_size=16, pages=None, policy="lpm", token_budget=None,
          max_running=None, new_token_ratio=None, out=sys.stdout):
    """Serves `requests` to the end; prints a line per step to `out` (None:
    nothing) and returns the summary."""
    longest = max(len(r["prompt"]) + r["max_tokens"] for r in requests)
    if pages is None:  # twice the longest request, as `attnc sim`
        pages = 2 * math.ceil(longest / page_size)
    pool = attnc.KVPool(pages, page_size=page_size, memory="accounting")
    cache = attnc.RadixCache(pool)
    ratios = ({} if new_token_ratio is None else
              dict(initial_new_token_ratio=new_token_ratio,
                   min_new_token_ratio=new_token_ratio))
    scheduler = attnc.Scheduler(pool, cache, policy=policy,
                                token_budget=token_budget,
                                max_running=max_running, **ratios)
    for r in requests:
        scheduler.add(r["id"], r["prompt"], max_tokens=r["max_tokens"],
                      priority=r["priority"], namespace=r["namespace"])
    answers = {r["id"]: r["output_len"] for r in requests}
    sampled = {r["id"]: 0 for r in requests}
    finished, steps = [], 0
    while not scheduler.idle:
        step = scheduler.step()
        steps += 1
        # The model's forward pass would run here, on step.tokens at
        # step.positions, writing K/V at step.slot_mapping and attending
        # through step.page_table; it samples at step.sample_rows.
        samples = []
        for request in step.samplers:
            n = sampled[request]
            sampled[request] = n + 1
            samples.append(attnc.Sample(request, output_token(request, n),
                                        n + 1 >= answers[request]))
        done = scheduler.commit(samples)
        finished += done
        if out is not None:
            print(f"step {steps:4d}: {step.num_requests:3d} requests "
                  f"({step.num_decodes} decoding), {step.prefill_tokens:5d} "
                  f"prefill + {step.decode_tokens:3d} decode tokens"
                  + (f", admitted {step.admitted}" if step.admitted else "")
                  + (f", preempted {step.preempted}" if step.preempted
                     else "")
                  + (f", finished {done}" if done else ""), file=out)
    stats = scheduler.stats()
    return dict(
        requests=len(requests), steps=steps, finished=len(finished),
        pages=pages, page_size=page_size, policy=scheduler.policy,
        prompt_tokens=stats.prompt_tokens, cached_tokens=stats.cached_tokens,
        computed_prefill_tokens=stats.computed_prefill_tokens,
        recomputed_tokens=stats.recomputed_tokens,
        evicted_tokens=stats.evicted_tokens, preemptions=stats.preemptions,
        generated_tokens=sum(sampled.values()),
        output_tokens=sum(answers.values()),
        finished_ids=sorted(finished))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", nargs="?",
                        default=str(__file__).rsplit(".", 1)[0] + ".jsonl",
                        help="a JSON-lines trace (default: the bundled "
                             "examples/serve_trace.jsonl)")
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--pages", type=int, default=None,
                        help="pool size (default: twice the longest "
                             "request)")
    parser.add_argument("--policy", default="lpm",
                        choices=["fcfs", "lpm", "dfs-weight"])
    parser.add_argument("--token-budget", type=int, default=None)
    parser.add_argument("--max-running", type=int, default=None)
    parser.add_argument("--new-token-ratio", type=float, default=None,
                        help="share of max_tokens admission reserves (0: "
                             "admit on prompts alone, and preempt when "
                             "decodes run out of pages)")
    parser.add_argument("--quiet", action="store_true",
                        help="no line per step")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object")
    args = parser.parse_args(argv)
    try:
        requests = read_trace(args.trace)
        summary = serve(requests, args.page_size, args.pages, args.policy,
                        args.token_budget, args.max_running,
                        args.new_token_ratio,
                        out=None if args.quiet else sys.stdout)
    except (OSError, TraceError, attnc.AttncError) as error:
        print(f"serve_trace: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(summary))
    else:
        hit = summary["cached_tokens"] / max(1, summary["prompt_tokens"])
        print(f"{summary['requests']} requests in {summary['steps']} steps "
              f"({summary['policy']}, {summary['pages']} pages of "
              f"{summary['page_size']}): {summary['finished']} finished, "
              f"{summary['prompt_tokens']} prompt tokens, "
              f"{summary['cached_tokens']} cached ({hit:.1%}), "
              f"{summary['generated_tokens']} generated, "
              f"{summary['preemptions']} preemptions "
              f"({summary['recomputed_tokens']} tokens recomputed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
