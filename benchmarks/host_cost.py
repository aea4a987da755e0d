"""Host time per call of each front end on a tiny decode, beside PyTorch
SDPA and a bare torch.add, in one run (issue 46: users call attnc eagerly
from Python, where a decode step of a small batch is bound by the host).

Each row issues `--calls` back-to-back calls with no synchronization and
divides the wall time by the calls: the GPU work of one call (a 1 x 512
decode, a few microseconds) is shorter than the host's, so the queue never
fills and the figure is the host's cost. The median of `--repeats` such
samples is reported. Then one long request (1 x 32k keys), where eager
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


def us_per_call(fn, calls, repeats):
    """Median over `repeats` samples of the wall time per call of `calls`
    back-to-back calls, the stream drained before each sample."""
    for _ in range(10):
        fn()
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples)


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
        context = sdpa_kernel(backend)

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
    compiled = torch.compile(
        lambda q, k, v: attnc.attention(q, k, v, layout="bshd"),
        fullgraph=True)
    rows.append(("torch.compile(attnc.attention)",
                 lambda: compiled(q, k, v)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
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
        for name, fn in decode_rows(kv_len):
            try:
                context = getattr(fn, "context", None)
                if context is not None:
                    with context:
                        us = us_per_call(fn, args.calls, args.repeats)
                else:
                    us = us_per_call(fn, args.calls, args.repeats)
            except Exception as e:  # a backend this GPU or torch lacks
                print(f"{name:28s} unavailable: {type(e).__name__}: {e}")
                continue
            print(f"{name:28s} {us:8.2f}")
            results["rows"].append({"shape": label, "name": name, "us": us})
    with open(os.path.join(args.out, "host_cost.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
