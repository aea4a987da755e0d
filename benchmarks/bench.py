"""attnc against its peers, on identical inputs in one process.

For every workload of issue 4 it times attnc, PyTorch SDPA with the flash and
cuDNN backends, and FlexAttention (torch.compile), and measures in the same
run the device-copy bandwidth and the bf16 GEMM throughput that bound them.
It prints a table and writes docs/PERFORMANCE.md's results section (Markdown
and an SVG plot) under --out.

    PYTHONPATH=python python3 benchmarks/bench.py --out /tmp/bench
"""

import argparse
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attnc  # noqa: E402

from plot import bar_chart_svg  # noqa: E402

BF16 = torch.bfloat16
DEV = "cuda"


class Workload:
    def __init__(self, name, what, batch, heads, kv_heads, dim, q_len,
                 kv_len, causal=False, window=None, paged=False):
        self.name, self.what = name, what
        self.batch, self.heads, self.kv_heads, self.dim = (batch, heads,
                                                           kv_heads, dim)
        self.q_len, self.kv_len = q_len, kv_len
        self.causal, self.window, self.paged = causal, window, paged

    @property
    def decode(self):
        return self.q_len == 1

    def visible_pairs(self):
        """(query, key) pairs attended, bottom-right aligned."""
        total = 0
        offset = self.kv_len - self.q_len
        if not self.causal and self.window is None:
            return self.q_len * self.kv_len
        for i in range(self.q_len):
            hi = i + offset  # last visible key
            lo = 0 if self.window is None else max(0, hi - self.window)
            total += hi - lo + 1
        return total

    def flops(self):
        return 4 * self.batch * self.heads * self.dim * self.visible_pairs()

    def kv_bytes(self):
        return 2 * self.batch * self.kv_len * self.kv_heads * self.dim * 2


WORKLOADS = [
    Workload("P1", "causal prefill GQA 32/8 d128, 2x8192", 2, 32, 8, 128,
             8192, 8192, causal=True),
    Workload("P2", "non-causal MHA 32 d128, 2x4096", 2, 32, 32, 128, 4096,
             4096),
    Workload("P3", "causal sliding window 1024, P1 shapes", 2, 32, 8, 128,
             8192, 8192, causal=True, window=1024),
    Workload("P7a", "causal MHA 64 heads d64, 2x8192", 2, 64, 64, 64, 8192,
             8192, causal=True),
    Workload("P7b", "causal MHA 16 heads d256, 2x8192", 2, 16, 16, 256, 8192,
             8192, causal=True),
    Workload("D1", "decode 32/8 d128, 64 x 4096", 64, 32, 8, 128, 1, 4096),
    Workload("D2", "decode 32/8 d128, 8 x 32768", 8, 32, 8, 128, 1, 32768),
    Workload("D3", "decode 28/4 d128, 64 x 4096", 64, 28, 4, 128, 1, 4096),
    Workload("D4", "D1 through a paged cache, page 16, shuffled", 64, 32, 8,
             128, 1, 4096, paged=True),
]


def time_ms(fn, iters, warmup=3, min_batch_ms=5.0):
    """Median over `iters` samples of the time per call, each sample timing
    enough back-to-back calls (>= min_batch_ms) that host overhead (Python,
    ctypes, argument checks) overlaps the GPU work instead of adding to it,
    as in a model's forward pass."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    once_ms = (time.perf_counter() - start) * 1e3
    reps = max(1, min(100, int(min_batch_ms / max(once_ms, 1e-3))))
    times = []
    for _ in range(iters):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / reps)
    times.sort()
    return times[len(times) // 2]


def copy_ceiling_gbs():
    n = 1 << 30  # 1 GiB each way
    src = torch.empty(n, dtype=torch.uint8, device=DEV).random_()
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), 20)
    del src, dst
    return 2 * n / ms / 1e6


def gemm_ceiling_tflops():
    n = 8192
    a = torch.randn(n, n, dtype=BF16, device=DEV)
    b = torch.randn(n, n, dtype=BF16, device=DEV)
    ms = time_ms(lambda: torch.mm(a, b), 20)
    return 2 * n ** 3 / ms / 1e9


def relative_error(ours, ref):
    ours, ref = ours.float(), ref.float()
    if torch.isnan(ours).any():
        return float("nan")
    return ((ours - ref).norm() / ref.norm()).item()


def make_inputs(w):
    g = torch.Generator(device=DEV).manual_seed(1)
    q = torch.randn(w.batch, w.q_len, w.heads, w.dim, device=DEV, dtype=BF16,
                    generator=g)
    k = torch.randn(w.batch, w.kv_len, w.kv_heads, w.dim, device=DEV,
                    dtype=BF16, generator=g)
    v = torch.randn(w.batch, w.kv_len, w.kv_heads, w.dim, device=DEV,
                    dtype=BF16, generator=g)
    return q, k, v


def attnc_runner(w, q, k, v):
    if not w.paged:
        out = torch.empty_like(q)
        window = None if w.window is None else (w.window, 0)
        return lambda: attnc.attention(q, k, v, causal=w.causal,
                                       window=window, out=out), out
    page = 16
    pages_per = w.kv_len // page
    total = w.batch * pages_per
    order = torch.randperm(total, generator=torch.Generator().manual_seed(2))
    order = order.to(torch.int32)
    # The same keys as the dense inputs, scattered into shuffled pages.
    k_cache = torch.empty(total, page, w.kv_heads, w.dim, device=DEV,
                          dtype=BF16)
    v_cache = torch.empty_like(k_cache)
    index = order.long().to(DEV)
    k_cache[index] = k.reshape(total, page, w.kv_heads, w.dim)
    v_cache[index] = v.reshape(total, page, w.kv_heads, w.dim)
    wrapper = attnc.PagedAttention(w.heads, w.kv_heads, w.dim, page)
    indptr = torch.arange(0, total + 1, pages_per, dtype=torch.int32)
    last = torch.full((w.batch,), page, dtype=torch.int32)
    wrapper.plan(indptr, order, last)
    q3 = q.reshape(w.batch, w.heads, w.dim)
    out = torch.empty_like(q3)
    return (lambda: wrapper.run(q3, k_cache, v_cache, out=out),
            out.reshape(q.shape))


def sdpa_runner(backend, w, q, k, v):
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    mask = None
    if w.window is not None:
        rows = torch.arange(w.q_len, device=DEV)[:, None] + (w.kv_len -
                                                             w.q_len)
        cols = torch.arange(w.kv_len, device=DEV)[None, :]
        mask = (cols <= rows) & (cols >= rows - w.window)
    gqa = w.heads != w.kv_heads
    causal = w.causal and mask is None

    def run():
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(
                qt, kt, vt, attn_mask=mask, is_causal=causal,
                enable_gqa=gqa).transpose(1, 2)
    return run


_flex = None


def flex_runner(w, q, k, v):
    global _flex
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    if _flex is None:
        _flex = torch.compile(flex_attention, dynamic=False)
    offset = w.kv_len - w.q_len
    window = w.window

    def causal_fn(b, h, qi, kvi):
        return kvi <= qi + offset

    def window_fn(b, h, qi, kvi):
        return (kvi <= qi + offset) & (kvi >= qi + offset - window)
    fn = window_fn if window is not None else causal_fn
    block_mask = None
    if w.causal:
        block_mask = create_block_mask(fn, None, None, w.q_len, w.kv_len,
                                       device=DEV)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    gqa = w.heads != w.kv_heads
    return lambda: _flex(qt, kt, vt, block_mask=block_mask,
                         enable_gqa=gqa).transpose(1, 2)


def measure(w, iters, with_flex):
    q, k, v = make_inputs(w)
    row = {"name": w.name, "what": w.what}
    ours, ours_out = attnc_runner(w, q, k, v)
    ours()
    torch.cuda.synchronize()
    row["attnc"] = time_ms(ours, iters)
    reference = None
    peers = [("flash", lambda: sdpa_runner(SDPBackend.FLASH_ATTENTION, w, q,
                                           k, v)),
             ("cudnn", lambda: sdpa_runner(SDPBackend.CUDNN_ATTENTION, w, q,
                                           k, v))]
    if with_flex:
        peers.append(("flex", lambda: flex_runner(w, q, k, v)))
    for name, make in peers:
        try:
            fn = make()
            out = fn()
            torch.cuda.synchronize()
            row[name] = time_ms(fn, iters)
            if reference is None:
                reference = out
        except Exception as error:  # a backend that cannot run this shape
            row[name] = None
            row[name + "_why"] = str(error).split("\n")[0][:120]
    if reference is None:
        reference = sdpa_runner(SDPBackend.MATH, w, q, k, v)()
    row["error_vs_peer"] = relative_error(ours_out, reference)
    return row


def fmt(x, spec=".3f"):
    return "n/a" if x is None else format(x, spec)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-flex", action="store_true")
    parser.add_argument("--flex-budget", type=float, default=300,
                        help="seconds after which FlexAttention is skipped")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    device = torch.cuda.get_device_name()
    copy_gbs = copy_ceiling_gbs()
    gemm_tflops = gemm_ceiling_tflops()
    print(f"device: {device}; copy ceiling {copy_gbs:.0f} GB/s; bf16 GEMM "
          f"ceiling {gemm_tflops:.0f} TFLOP/s", flush=True)

    rows = []
    began = time.time()
    for w in WORKLOADS:
        if args.only and w.name not in args.only.split(","):
            continue
        started = time.time()
        # FlexAttention compiles each mask and shape (tens of seconds);
        # past the time budget it is left out rather than the run cut off.
        with_flex = not args.no_flex and time.time() - began < args.flex_budget
        row = measure(w, args.iters, with_flex)
        peers = [row[p] for p in ("flash", "cudnn", "flex") if row.get(p)]
        best = min(peers) if peers else None
        row["vs_best_peer"] = best / row["attnc"] if best else None
        if w.decode:
            row["attnc_rate"] = w.kv_bytes() / row["attnc"] / 1e6  # GB/s
            row["vs_ceiling"] = row["attnc_rate"] / copy_gbs
            row["unit"] = "GB/s"
        else:
            row["attnc_rate"] = w.flops() / row["attnc"] / 1e9  # TFLOP/s
            row["vs_ceiling"] = row["attnc_rate"] / gemm_tflops
            row["unit"] = "TFLOP/s"
        row["seconds"] = time.time() - started
        rows.append(row)
        print(json.dumps(row), flush=True)

    by_name = {r["name"]: r for r in rows}
    if "D1" in by_name and "D4" in by_name:
        ratio = by_name["D1"]["attnc"] / by_name["D4"]["attnc"]
        print(f"D4 (paged) runs at {ratio:.2f} of D1 (contiguous)")

    date = datetime.date.today().isoformat()
    command = "PYTHONPATH=python python3 benchmarks/bench.py " + " ".join(
        sys.argv[1:])
    lines = [
        f"Device: **{device}**, {date}. Command: `{command}` "
        f"(CUDA events; median of {args.iters} samples after 3 warm-ups, each "
        f"sample timing back-to-back calls for at least 5 ms, so host "
        f"overhead overlaps GPU work).",
        "",
        f"Ceilings measured in the same run: device copy "
        f"**{copy_gbs:.0f} GB/s** (1 GiB `copy_`), bf16 GEMM "
        f"**{gemm_tflops:.0f} TFLOP/s** (8192³ `torch.mm`).",
        "",
        "| workload | attnc ms | rate | of ceiling | flash ms | cuDNN ms "
        "| Flex ms | best peer / attnc | rel. error vs peer |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']}: {r['what']} | {r['attnc']:.3f} | "
            f"{r['attnc_rate']:.0f} {r['unit']} | {r['vs_ceiling']:.0%} | "
            f"{fmt(r.get('flash'))} | {fmt(r.get('cudnn'))} | "
            f"{fmt(r.get('flex'))} | {fmt(r['vs_best_peer'], '.2f')} | "
            f"{r['error_vs_peer']:.1e} |")
    notes = [f"- {r['name']} {p}: {r[p + '_why']}" for r in rows
             for p in ("flash", "cudnn", "flex") if r.get(p + "_why")]
    if notes:
        lines += ["", "Peers that could not run a workload:"] + notes
    if "D1" in by_name and "D4" in by_name:
        lines += ["", f"D4 (paged, shuffled 16-token pages) runs at "
                  f"**{by_name['D1']['attnc'] / by_name['D4']['attnc']:.0%}**"
                  f" of D1's speed (contiguous)."]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"device": device, "date": date, "copy_gbs": copy_gbs,
                   "gemm_tflops": gemm_tflops, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "performance.svg"), "w") as f:
        f.write(bar_chart_svg(rows, device, date))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
