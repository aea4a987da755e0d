"""What the Python serving loop costs per step beside the C library's.

One synthetic workload (requests over a few long shared system prompts,
answers of varied length, a token budget that mixes a few prefill chunks
into ~128 decodes per step) is served to the end twice over: by
attnc-serving-step-cost, a C driver of attnc_c.h built beside libattnc.so,
and by attnc.Scheduler from Python. Both run the same stand-in model (each
sampler's token is the row it samples from; requests end at max_tokens),
so they form the same steps: the step count and the scheduler's totals
must agree, or the run fails.
It reports each loop's time per step, wall and CPU (the process's own, what
other work on a loaded machine leaves out): the best and the median of
--runs, which interleave the loops so that a varying load weighs on each
alike, and each Python loop's ratio to C's, best to best.

The Python loops:
  lists   the list API: step.samplers etc. as lists, a Sample per sampler
  arrays  the zero-copy API: the step's arrays as views of its own
          buffers, commit_tokens with the tokens as one array
  ctypes  the C API called straight through ctypes, as the C driver calls
          it: the floor of any Python loop (what the interpreter and ctypes
          cost, and the C calls' own time in a Python process)
With torch importable each loop also makes what an engine hands its
kernels each step (step.page_table, qo_indptr and slot_mapping tensors);
without it the arrays loop takes the same arrays as memoryviews.

    python3 benchmarks/serving_step_cost.py [--runs 5] [--json FILE]
"""

import argparse
import ctypes
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# --attnc DIR times another copy of the package (an older one, for a
# before-and-after): it must be importable before the script reads it.
_given = sys.argv.index("--attnc") + 1 if "--attnc" in sys.argv else 0
sys.path.insert(0, sys.argv[_given] if 0 < _given < len(sys.argv)
                else str(ROOT / "python"))
import attnc  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

# What the C driver and every Python loop must agree on: the same steps.
CHECKSUMS = ("steps", "prompt_tokens", "cached_tokens",
             "computed_prefill_tokens", "preemptions", "finished")
# What an engine hands its kernels each step.
ENGINE_ARRAYS = ("kv_indptr", "kv_indices", "kv_last_page_len", "qo_indptr",
                 "slot_mapping")


def make_workload(args):
    rng = random.Random(args.seed)
    systems = [[rng.randrange(1, 50000) for _ in range(args.system_tokens)]
               for _ in range(args.systems)]
    requests = []
    for rid in range(args.requests):
        own = [rng.randrange(1, 50000)
               for _ in range(rng.randint(args.own_min, args.own_max))]
        requests.append(dict(
            id=rid, prompt=systems[rid % args.systems] + own,
            max_tokens=rng.randint(args.answer_min, args.answer_max)))
    return requests


def write_workload(path, args, requests):
    with open(path, "w") as out:
        out.write("attnc-serving-workload 1\n")
        out.write(f"{args.pages} {args.page_size} {args.token_budget} "
                  f"{args.max_running} {args.policy}\n{len(requests)}\n")
        for r in requests:
            out.write(f"{r['id']} {r['max_tokens']} 0 {len(r['prompt'])} "
                      + " ".join(map(str, r["prompt"])) + "\n")


def run_c(driver, path, runs):
    proc = subprocess.run([str(driver), str(path), str(runs)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{driver} failed: {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines()]


def make_scheduler(args, requests):
    pool = attnc.KVPool(args.pages, page_size=args.page_size,
                        memory="accounting")
    cache = attnc.RadixCache(pool)
    scheduler = attnc.Scheduler(pool, cache, policy=args.policy,
                                token_budget=args.token_budget,
                                max_running=args.max_running)
    for r in requests:
        scheduler.add(r["id"], r["prompt"], max_tokens=r["max_tokens"])
    return scheduler


def loop_lists(scheduler, tensors):
    Sample, steps = attnc.Sample, 0
    while not scheduler.idle:
        step = scheduler.step()
        if tensors:
            step.page_table, step.tensor("qo_indptr")
            step.tensor("slot_mapping")
        scheduler.commit([Sample(r, row, False, b) for r, row, b in zip(
            step.samplers, step.sample_rows, step.sampler_branches)])
        steps += 1
    return steps


def loop_arrays(scheduler, tensors):
    steps = 0
    while not scheduler.idle:
        step = scheduler.step()
        if tensors:
            step.page_table, step.tensor("qo_indptr")
            step.tensor("slot_mapping")
        else:
            for name in ENGINE_ARRAYS:
                step.view(name)
        scheduler.commit_tokens(step, step.view("sample_rows"))
        steps += 1
    return steps


def loop_ctypes(scheduler, tensors):
    """The C API straight through ctypes, called as the C driver calls it:
    the least a Python loop pays (no torch, no views, no checks)."""
    from attnc import _capi
    lib, handle, steps = _capi.lib, scheduler._handle, 0
    info, done = _capi.StepInfo(), ctypes.c_int64()
    finished = (ctypes.c_int64 * 4096)()
    # The three pointers commit reads, as plain integers.
    samplers, branches, rows = (
        ctypes.c_uint64.from_buffer(info, getattr(_capi.StepInfo, name)
                                    .offset)
        for name in ("samplers", "sampler_branches", "sample_rows"))
    while not lib.attnc_scheduler_idle(handle):
        step = ctypes.c_void_p()
        lib.attnc_scheduler_step(handle, ctypes.byref(step))
        lib.attnc_step_get_info(step, ctypes.byref(info))
        lib.attnc_scheduler_commit_arrays(
            handle, info.num_samplers, samplers.value, branches.value,
            rows.value, None, finished, ctypes.byref(done))
        lib.attnc_step_destroy(step)
        steps += 1
    return steps


LOOPS = {"lists": loop_lists, "arrays": loop_arrays, "ctypes": loop_ctypes}


def summarize(name, runs):
    summary = dict(loop=name, runs=len(runs))
    for clock in ("seconds", "cpu_seconds"):
        per_step = [r[clock] / r["steps"] * 1e6 for r in runs]
        prefix = "" if clock == "seconds" else "cpu_"
        summary[prefix + "best_us"] = min(per_step)
        summary[prefix + "median_us"] = statistics.median(per_step)
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--system-tokens", type=int, default=384)
    parser.add_argument("--own-min", type=int, default=64)
    parser.add_argument("--own-max", type=int, default=768)
    parser.add_argument("--answer-min", type=int, default=32)
    parser.add_argument("--answer-max", type=int, default=384)
    parser.add_argument("--pages", type=int, default=16384)
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--token-budget", type=int, default=768)
    parser.add_argument("--max-running", type=int, default=136)
    parser.add_argument("--policy", default="lpm",
                        choices=["fcfs", "lpm", "dfs-weight"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loops", default=",".join(LOOPS),
                        help="Python loops to time (comma-separated)")
    parser.add_argument("--tensors", choices=["auto", "yes", "no"],
                        default="auto", help="make the engine's torch "
                        "tensors each step (auto: when torch imports)")
    parser.add_argument("--driver", type=Path,
                        default=ROOT / "build" / "bin" /
                        "attnc-serving-step-cost")
    parser.add_argument("--json", type=Path, help="also write the results")
    parser.add_argument("--attnc", type=Path, help="the directory of the "
                        "attnc package to time (default: this checkout's "
                        "python/); its loops that need what it lacks are "
                        "left out")
    args = parser.parse_args(argv)
    tensors = (torch is not None if args.tensors == "auto"
               else args.tensors == "yes")
    if tensors and torch is None:
        sys.exit("--tensors yes needs torch")
    loops = args.loops.split(",")
    for name in loops:
        if name not in LOOPS:
            sys.exit(f"unknown loop {name!r} (have {', '.join(LOOPS)})")
    # Both call what came with C API version 13 (commit as arrays).
    for name in ("arrays", "ctypes"):
        if name in loops and not hasattr(attnc.Scheduler, "commit_tokens"):
            print(f"{attnc.__file__} has no commit_tokens: the {name} loop "
                  f"is left out", file=sys.stderr)
            loops.remove(name)

    requests = make_workload(args)
    # Runs interleave (C, then each Python loop, again and again), so that
    # a machine's load varying over time weighs on every loop alike.
    timed = {name: [] for name in ["c"] + loops}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "workload.txt"
        write_workload(path, args, requests)
        for _ in range(args.runs):
            timed["c"] += run_c(args.driver, path, 1)
            reference = {k: timed["c"][0][k] for k in CHECKSUMS}
            for name in loops:
                scheduler = make_scheduler(args, requests)
                start, cpu = time.perf_counter(), time.process_time()
                steps = LOOPS[name](scheduler, tensors)
                run = dict(seconds=time.perf_counter() - start,
                           cpu_seconds=time.process_time() - cpu)
                run.update(scheduler.stats()._asdict(), steps=steps)
                scheduler.close()
                totals = {k: run[k] for k in CHECKSUMS}
                if totals != reference:
                    sys.exit(f"the {name} loop served another workload "
                             f"than C's: {totals} != {reference}")
                timed[name].append(run)
    results = [summarize(name, runs) for name, runs in timed.items()]
    c_best, c_cpu = results[0]["best_us"], results[0]["cpu_best_us"]
    tokens = (reference["computed_prefill_tokens"] +
              reference["finished"] * (args.answer_min + args.answer_max) / 2
              ) / reference["steps"]
    print(f"{len(requests)} requests in {reference['steps']} steps of about "
          f"{tokens:.0f} tokens; torch tensors: {'yes' if tensors else 'no'}; "
          f"attnc from {Path(attnc.__file__).parent}")
    print(f"{'':8s} {'wall us/step':>23s} {'CPU us/step':>23s}")
    print(f"{'loop':8s}" + f" {'best':>7s} {'median':>7s} {'ratio':>7s}" * 2)
    for r in results:
        r["ratio"] = r["best_us"] / c_best
        r["cpu_ratio"] = r["cpu_best_us"] / c_cpu
        print(f"{r['loop']:8s} {r['best_us']:7.1f} {r['median_us']:7.1f} "
              f"{r['ratio']:7.2f} {r['cpu_best_us']:7.1f} "
              f"{r['cpu_median_us']:7.1f} {r['cpu_ratio']:7.2f}")
    if args.json:
        args.json.write_text(json.dumps(dict(
            workload={k: str(v) if isinstance(v, Path) else v
                      for k, v in vars(args).items()},
            tensors=tensors, checksums=reference, results=results),
            indent=1))


if __name__ == "__main__":
    main()
