"""Host time per call of each front end on a tiny decode, beside PyTorch
SDPA and a bare torch.add, in one run (issue 46: users call attnc eagerly
from Python, where a decode step of a small batch is bound by the host).

Each sample issues `--calls` back-to-back calls with no synchronization
and divides the wall time by the calls: the GPU work of one call (a 1 x
512 decode, a few microseconds) is shorter than the host's, so the queue
never fills and the figure is the host's cost. Rows take turns, one
sample each per round, and the median of `--repeats` rounds is
reported. Then one long request (1 x 32k keys), where eager
decode was host-bound against cuDNN, is timed the same way (GPU and host
together, as a model's forward pass sees them).

    PYTHONPATH=python python3 benchmarks/host_cost.py --out /tmp/host
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attnc  # noqa: E402

HEADS, KV_HEADS, DIM, PAGE = 32, 8, 128, 16
BF16 = torch.bfloat16
DEV = "cuda"


def sample_us(fn, calls):
    """Wall time per call of `calls` back-to-back calls, the stream drained
    before them."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return us


def round_robin(rows, calls, repeats):
    """{name: median us per call}: every row sampled once per round, for
    `repeats` rounds, so that the host's drift (clocks, other processes)
    spreads over all rows alike instead of favouring the ones timed
    first. A row that raises is reported as unavailable."""
    def inside(fn, action):
        """action(), inside fn's backend context where it has one."""
        context = getattr(fn, "context", None)
        if context is None:
            return action()
        with context():  # a generator's context: one per use
            return action()

    samples, skipped = {}, {}
    for name, fn in rows:
        try:
            inside(fn, lambda: [fn() for _ in range(10)])
            samples[name] = []
        except Exception as e:  # a backend this GPU or torch lacks
            skipped[name] = f"{type(e).__name__}: {e}"
    for _ in range(repeats):
        for name, fn in rows:
            if name in samples:
                samples[name].append(inside(fn, lambda: sample_us(fn,
                                                                  calls)))
    return {name: statistics.median(v) for name, v in samples.items()}, \
        skipped


def decode_rows(kv_len):
    """(name, fn) of each front end on one request of `kv_len` keys."""
    torch.manual_seed(0)
    q = torch.randn(1, 1, HEADS, DIM, dtype=BF16, device=DEV)
    k = torch.randn(1, kv_len, KV_HEADS, DIM, dtype=BF16, device=DEV)
    v = torch.randn_like(k)
    out = torch.empty_like(q)
    # SDPA's layout, [batch, heads, seq, dim], as its users hold it.
    qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    a = torch.randn(1, HEADS, DIM, dtype=BF16, device=DEV)

    pages = -(-kv_len // PAGE)
    k_cache = torch.randn(pages, PAGE, KV_HEADS, DIM, dtype=BF16, device=DEV)
    v_cache = torch.randn_like(k_cache)
    paged = attnc.PagedAttention(HEADS, KV_HEADS, DIM, PAGE)
    paged.plan(torch.tensor([0, pages], dtype=torch.int32),
               torch.arange(pages, dtype=torch.int32),
               torch.tensor([kv_len - (pages - 1) * PAGE], dtype=torch.int32))
    q3 = q.view(1, HEADS, DIM)
    out3 = torch.empty_like(q3)

    def sdpa(backend):
        """SDPA on one backend; the backend context is entered once, around
        the timed calls, as a model sets it once (entering it per call
        costs more than the call)."""
        context = lambda: sdpa_kernel(backend)  # noqa: E731

        def call():
            F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
        call.context = context
        return call

    rows = [
        ("torch.add", lambda: torch.add(a, a)),
        ("sdpa (default dispatch)", lambda: F.scaled_dot_product_attention(
            qt, kt, vt, enable_gqa=True)),
        ("sdpa (cuDNN)", sdpa(SDPBackend.CUDNN_ATTENTION)),
        ("sdpa (flash)", sdpa(SDPBackend.FLASH_ATTENTION)),
        ("sdpa (efficient)", sdpa(SDPBackend.EFFICIENT_ATTENTION)),
        ("attnc.attention", lambda: attnc.attention(q, k, v, layout="bshd")),
        ("attnc.attention out=",
         lambda: attnc.attention(q, k, v, layout="bshd", out=out)),
        ("attnc.attention bhsd",
         lambda: attnc.attention(qt, kt, vt, layout="bhsd")),
        ("PagedAttention.run", lambda: paged.run(q3, k_cache, v_cache)),
        ("PagedAttention.run out=",
         lambda: paged.run(q3, k_cache, v_cache, out=out3)),
    ]
    rows.append(("torch.ops.attnc.attention",
                 lambda: torch.ops.attnc.attention(
                     q, k, v, "bshd", False, -1, -1, 0, 0.0, 0.0, False,
                     False)))
    def layer(q, k, v):
        return attnc.attention(q, k, v, layout="bshd")
    compiled = torch.compile(layer, fullgraph=True)
    graphed = torch.compile(layer, fullgraph=True, mode="reduce-overhead")
    rows.append(("torch.compile(attnc.attention)",
                 lambda: compiled(q, k, v)))
    rows.append(("  mode=reduce-overhead", lambda: graphed(q, k, v)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", default="host-cost")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {"device": torch.cuda.get_device_name(),
               "date": datetime.date.today().isoformat(),
               "command": " ".join(sys.argv), "rows": []}
    for kv_len, label in ((512, "host-bound 1 x 512"),
                          (32768, "one long request 1 x 32k")):
        print(f"== {label}: microseconds per call (median of "
              f"{args.repeats} x {args.calls} calls)")
        rows = decode_rows(kv_len)
        medians, skipped = round_robin(rows, args.calls, args.repeats)
        for name, _ in rows:
            if name in skipped:
                print(f"{name:32s} unavailable: {skipped[name]}")
                continue
            print(f"{name:32s} {medians[name]:8.2f}")
            results["rows"].append({"shape": label, "name": name,
                                    "us": medians[name]})
    with open(os.path.join(args.out, "host_cost.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
