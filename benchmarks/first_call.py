"""The first attnc.attention call of a variant, the user's way (issue 49):
a fresh process per variant, the time from the call to its result
(compile or cache lookup, module load, plan, launch), with an empty disk
cache (cold), with the disk cache it left (a disk hit) and a second call
in the same process (an in-process hit). FlexAttention's first call
(torch.compile of flex_attention) is timed the same way beside it.

Variants are drawn with a fixed seed from the common space (dtypes, head
dims, GQA groups, causal, windows, soft-caps, sinks, decode or prefill)
and, separately, with score_mod/mask_mod functions.

    PYTHONPATH=python python3 benchmarks/first_call.py --out $OUT/first
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# One call in a fresh process: builds the tensors, then times the first
# and the second call of the variant in `sys.argv[1]` (JSON), and prints
# {"first_ms": .., "second_ms": ..}.
CHILD = r"""
import json, sys, time
import torch
spec = json.loads(sys.argv[1])
torch.manual_seed(0)
dtype = getattr(torch, spec["dtype"])
b, q_len, kv_len = spec["batch"], spec["q_len"], spec["kv_len"]
h, kvh, d = spec["heads"], spec["kv_heads"], spec["dim"]
q = torch.randn(b, h, q_len, d, device="cuda", dtype=dtype)
k = torch.randn(b, kvh, kv_len, d, device="cuda", dtype=dtype)
v = torch.randn_like(k)
torch.cuda.synchronize()
if spec["peer"] == "flex":
    from torch.nn.attention.flex_attention import flex_attention
    fn = torch.compile(flex_attention)
    def call():
        return fn(q, k, v, enable_gqa=h != kvh)
else:
    import attnc
    options = dict(causal=spec["causal"], window=spec["window"],
                   softcap=spec["softcap"], sinks=spec["sinks"])
    if spec["mod"] == "alibi":
        slopes = torch.rand(h, device="cuda")
        options["score_mod"] = lambda s, b, hh, qi, ki: s + slopes[hh] * (
            ki - qi)
    elif spec["mod"] == "band":
        options["mask_mod"] = lambda b, hh, qi, ki: (qi - ki) % 97 < 64
    def call():
        return attnc.attention(q, k, v, layout="bhsd", **options)
start = time.perf_counter()
call()
torch.cuda.synchronize()
first = (time.perf_counter() - start) * 1e3
start = time.perf_counter()
call()
torch.cuda.synchronize()
second = (time.perf_counter() - start) * 1e3
print(json.dumps({"first_ms": first, "second_ms": second}))
"""


def draw(rng, mod=None):
    """One variant of the common space (or with a mod)."""
    dim = rng.choice([64, 128, 256])
    kv_heads = rng.choice([1, 2, 8, 32])
    group = rng.choice([1, 4, 8]) if kv_heads < 32 else 1
    decode = rng.random() < 0.4
    window = rng.choice([None, None, 128, 1024])
    return dict(
        dtype=rng.choice(["bfloat16", "float16"]), dim=dim, batch=2,
        heads=kv_heads * group, kv_heads=kv_heads,
        q_len=1 if decode else 512, kv_len=rng.choice([512, 2048]),
        causal=not decode and rng.random() < 0.7,
        window=window, softcap=rng.choice([None, None, 30.0]),
        sinks=rng.choice([0, 4]) if window else 0, mod=mod, peer="attnc")


def child(spec, cache_dir):
    env = dict(os.environ, XDG_CACHE_HOME=cache_dir,
               PYTHONPATH=os.path.join(REPO, "python") + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)],
                          env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--common", type=int, default=20)
    parser.add_argument("--regions", type=int, default=10)
    parser.add_argument("--flex", type=int, default=3,
                        help="variants FlexAttention's first call is timed on")
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--out", default="first-call")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    variants = ([("common", draw(rng)) for _ in range(args.common)] +
                [("region", draw(rng, rng.choice(["alibi", "band"])))
                 for _ in range(args.regions)])
    rows = []
    for kind, spec in variants:
        with tempfile.TemporaryDirectory() as cache:
            cold = child(spec, cache)
            warm = child(spec, cache)
        row = dict(kind=kind, spec=spec, cold=cold, disk_hit=warm)
        rows.append(row)
        print(kind, json.dumps(spec, sort_keys=True), "cold", cold,
              "disk hit", warm, flush=True)
    for spec in [s for _, s in variants[:args.flex]]:
        with tempfile.TemporaryDirectory() as cache:
            flex = child(dict(spec, peer="flex"), cache)
        rows.append(dict(kind="flex", spec=spec, cold=flex))
        print("flex", json.dumps(spec, sort_keys=True), flex, flush=True)

    def median(kind, field, key):
        values = [r[field][key] for r in rows
                  if r["kind"] == kind and key in r.get(field, {})]
        return statistics.median(values) if values else float("nan")
    print("\n| first call, ms (median) | cold | disk hit | in-process hit |")
    print("|---|---|---|---|")
    for kind in ("common", "region", "flex"):
        print(f"| {kind} | {median(kind, 'cold', 'first_ms'):.1f} | "
              f"{median(kind, 'disk_hit', 'first_ms'):.1f} | "
              f"{median(kind, 'cold', 'second_ms'):.3f} |")
    with open(os.path.join(args.out, "first_call.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
