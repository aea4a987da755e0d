"""How long `attnc sim` takes to replay a long offline queue: the
scheduler's cost as the queue grows (issue 14). Writes a trace of N
requests, each a shared system prompt (40 of 200-1200 tokens) and 20-200
tokens of its own with 1-63 output tokens, all queued at time 0, then times
`attnc sim --trace` once per policy given.

    python3 benchmarks/sim_scale.py --requests 10000 100000 --policy lpm

Plain Python (no GPU); the trace is seeded, so every machine replays the
same one."""

import argparse
import json
import os
import random
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def write_trace(path, requests, seed=1):
    rng = random.Random(seed)
    systems = [[rng.randrange(1, 100000)
                for _ in range(rng.randrange(200, 1200))] for _ in range(40)]
    with open(path, "w") as f:
        for i in range(requests):
            prompt = systems[rng.randrange(len(systems))] + [
                rng.randrange(1, 100000) for _ in range(rng.randrange(20, 200))]
            f.write(json.dumps({"id": i, "arrival": 0.0, "prompt": prompt,
                                "output_len": rng.randrange(1, 64)}) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, nargs="+",
                        default=[10000, 100000])
    parser.add_argument("--policy", nargs="+", default=["lpm"])
    parser.add_argument("--attnc", default=os.path.join(REPO, "build", "bin",
                                                        "attnc"))
    parser.add_argument("--dir", default="/tmp/attnc-sim-scale")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    for count in args.requests:
        trace = os.path.join(args.dir, f"queue-{count}.jsonl")
        if not os.path.exists(trace):
            write_trace(trace, count)
        for policy in args.policy:
            start = time.monotonic()
            run = subprocess.run([args.attnc, "sim", "--trace", trace,
                                  "--policy", policy, "--json"],
                                 capture_output=True, text=True)
            seconds = time.monotonic() - start
            if run.returncode != 0:
                sys.exit(f"attnc sim failed: {run.stderr}")
            result = json.loads(run.stdout.splitlines()[-1])
            print(f"{count} requests, {policy}: {seconds:.1f} s "
                  f"(hit rate {result['hit_rate']:.4f}, optimal "
                  f"{result['optimal_hit_rate']:.4f}, "
                  f"{result['steps']} steps)", flush=True)


if __name__ == "__main__":
    main()
