"""Absorbed MLA decode (DeepSeek-V3: 512 latent + 64 rope dims, one latent
head) through a shuffled paged cache of 64-slot pages (and of SGLang's
1-slot pages, M5 and M6), and chunked prefill in the absorbed form (M7 and
M8: 64 new tokens per request over its cached keys, causal, bottom-right):
attnc.MLAAttention beside
FlashInfer's MLA (fa3 and fa2 backends, when its sdist is in .peers/) and
PyTorch's absorbed MLA (matmuls and a softmax over the gathered cache, as
engines' fallback paths do), timed alternately in one process, with the
copy and GEMM ceilings of the same run.

    PYTHONPATH=python:benchmarks python3 benchmarks/mla_bench.py --out DIR

Rows M1f8 and M3f8 are M1 and M3 over an fp8 (e4m3) latent cache with a
scale: attnc reads the fp8 bytes, its peers the same values in bf16.

Bandwidth counts the latent rows read once (576 x 2 bytes a key, 576 x 1 for
fp8); FLOPs are
2 x heads x (576 + 512) per visible (query, key) pair; the roofline fraction is
max(bytes / copy ceiling, FLOPs / GEMM ceiling) over the time taken."""

import argparse
import os
import sys

import torch

import attnc
from bench import (copy_ceiling_gbs, gemm_ceiling_tflops, graph_or_eager,
                   time_alternately)

CKV, KPE = 512, 64
SCALE = 1.0 / (128 + 64) ** 0.5  # DeepSeek-V3's, before the absorption

ROWS = [  # name, query heads, requests, keys per request, slots per page,
    #         queries per request, the cache's fp8 type (None: bf16)
    ("M1", 128, 64, 4096, 64, 1, None),
    ("M2", 128, 8, 32768, 64, 1, None),
    ("M3", 16, 64, 4096, 64, 1, None),
    ("M4", 16, 8, 32768, 64, 1, None),
    ("M5", 128, 64, 4096, 1, 1, None),
    ("M6", 16, 64, 4096, 1, 1, None),
    ("M7", 128, 16, 4096, 64, 64, None),
    ("M8", 16, 16, 4096, 64, 64, None),
    ("M1f8", 128, 64, 4096, 64, 1, "float8_e4m3fn"),
    ("M3f8", 16, 64, 4096, 64, 1, "float8_e4m3fn"),
]
# An fp8 row's scale: a power of two, so that the bf16 values the peers
# read (fp8 value x scale) are exactly the ones attnc dequantizes.
FP8_SCALE = 0.5


class Batch:
    """Queries, a shuffled paged latent cache and its page table."""

    def __init__(self, heads, batch, keys, page, q_len=1, kv_dtype=None,
                 seed=0):
        torch.manual_seed(seed)
        pages_per = keys // page
        total = batch * pages_per
        self.heads, self.batch, self.keys, self.page = heads, batch, keys, page
        self.q_len = q_len
        self.causal = q_len > 1
        self.cache = torch.randn(total, page, CKV + KPE, device="cuda",
                                 dtype=torch.bfloat16)
        self.kv_dtype, self.cache8 = kv_dtype, None
        if kv_dtype:
            # attnc's fp8 cache; the peers' bf16 one holds its values.
            self.cache8 = (self.cache.float() / FP8_SCALE).to(
                getattr(torch, kv_dtype))
            self.cache = (self.cache8.float() * FP8_SCALE).to(torch.bfloat16)
            self.scale = torch.tensor([FP8_SCALE], device="cuda")
        self.indices = torch.randperm(total, device="cuda").to(torch.int32)
        self.kv_indptr = torch.arange(0, total + 1, pages_per,
                                      dtype=torch.int32, device="cuda")
        self.qo_indptr = torch.arange(0, batch * q_len + 1, q_len,
                                      dtype=torch.int32, device="cuda")
        self.kv_len = torch.full((batch,), keys, dtype=torch.int32,
                                 device="cuda")
        # [tokens, heads, 576], a request's tokens consecutive.
        self.q = torch.randn(batch * q_len, heads, CKV + KPE, device="cuda",
                             dtype=torch.bfloat16)

    def gathered(self):
        """[batch, keys, 576]: each request's rows in order."""
        rows = self.cache[self.indices.long()].reshape(self.batch, self.keys,
                                                       CKV + KPE)
        return rows

    def rows(self):
        """[batch, q_len x heads, 576]: a request's (token, head) rows."""
        return self.q.reshape(self.batch, self.q_len * self.heads, CKV + KPE)

    def hidden(self):
        """None, or [q_len x heads, keys], true where the causal mask hides
        the key from the row's token (bottom-right aligned)."""
        if not self.causal:
            return None
        token = torch.arange(self.q_len * self.heads,
                             device="cuda") // self.heads
        last = self.keys - self.q_len + token
        return torch.arange(self.keys, device="cuda")[None, :] > last[:, None]

    def pairs(self):
        """Visible (query, key) pairs of a request."""
        return sum(self.keys - self.q_len + i + 1 if self.causal
                   else self.keys for i in range(self.q_len))

    def bytes(self):
        return self.batch * self.keys * (CKV + KPE) * (
            1 if self.kv_dtype else 2)

    def flops(self):
        return 2 * self.batch * self.heads * self.pairs() * (CKV + CKV + KPE)


def attnc_runner(b):
    mla = attnc.MLAAttention(b.heads, CKV, KPE, b.page, causal=b.causal,
                             sm_scale=SCALE, kv_dtype=b.kv_dtype)
    mla.plan(b.qo_indptr.cpu(), b.kv_indptr.cpu(), b.indices.cpu(),
             b.kv_len.cpu())
    out = torch.empty(b.q.shape[0], b.heads, CKV, device="cuda",
                      dtype=torch.bfloat16)
    cache = b.cache if b.cache8 is None else b.cache8
    args = (b.q[..., :CKV], b.q[..., CKV:], cache[..., :CKV],
            cache[..., CKV:])
    scale = dict(kv_scale=b.scale) if b.kv_dtype else {}
    return lambda: mla.run(*args, out=out, **scale)


def torch_runner(b):
    kv, q, hidden = b.gathered(), b.rows(), b.hidden()

    def run():
        s = torch.matmul(q, kv.transpose(1, 2)) * SCALE
        if hidden is not None:
            s.masked_fill_(hidden, float("-inf"))
        p = torch.softmax(s.float(), -1).to(torch.bfloat16)
        return torch.matmul(p, kv[..., :CKV])
    return run


def flashinfer_runner(fi, b, backend):
    workspace = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    wrapper = fi.mla.BatchMLAPagedAttentionWrapper(workspace, backend=backend)
    wrapper.plan(b.qo_indptr, b.kv_indptr, b.indices, b.kv_len, b.heads, CKV,
                 KPE, b.page, b.causal, SCALE, torch.bfloat16, torch.bfloat16)
    # Its own tensors for the two parts: the same rows, each contiguous.
    args = (b.q[..., :CKV].contiguous(), b.q[..., CKV:].contiguous(),
            b.cache[..., :CKV].contiguous(), b.cache[..., CKV:].contiguous())
    return lambda: wrapper.run(*args)


def reference(b):
    """The absorbed MLA in float32: the error column's reference."""
    kv = b.gathered().float()
    s = torch.matmul(b.rows().float(), kv.transpose(1, 2)) * SCALE
    if b.causal:
        s.masked_fill_(b.hidden(), float("-inf"))
    out = torch.matmul(torch.softmax(s, -1), kv[..., :CKV])
    return out.reshape(b.q.shape[0], b.heads, CKV)


def relative_error(ours, ref):
    ours, ref = ours.double(), ref.double()
    if torch.isnan(ours).any():
        return float("nan")
    return ((ours - ref).norm() / ref.norm()).item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="mla-bench")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--no-flashinfer", action="store_true")
    parser.add_argument("--rows", default="",
                        help="comma-separated row names (default: all)")
    parser.add_argument("--graphs", action="store_true",
                        help="time replays of CUDA graphs, the GPU's time "
                        "alone, as engines replay decode steps")
    args = parser.parse_args()
    chosen = {n for n in args.rows.split(",") if n} or None
    unknown = (chosen or set()) - {row[0] for row in ROWS}
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
    os.makedirs(args.out, exist_ok=True)
    fi = None
    if not args.no_flashinfer:
        try:
            import flashinfer_peer
            fi = flashinfer_peer.load()
            import flashinfer.mla  # noqa: F401
        except Exception as e:  # the harness runs without it, and says so
            print(f"FlashInfer unavailable: {str(e).splitlines()[0]}")
            fi = None
    copy = copy_ceiling_gbs()
    gemm = gemm_ceiling_tflops()
    device = torch.cuda.get_device_name()
    notes = []
    timer = graph_or_eager(notes) if args.graphs else None
    lines = [f"device: {device}; copy ceiling {copy:.0f} GB/s, bf16 GEMM "
             f"ceiling {gemm:.0f} TFLOP/s; "
             f"{'CUDA-graph replays' if args.graphs else 'eager calls'}", "",
             "| row | heads | batch x queries x keys | page | attnc ms | GB/s | TFLOP/s | "
             "roofline | torch ms | FI fa3 ms | FI fa2 ms | attnc / best "
             "peer | rel. error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, heads, batch, keys, page, q_len, kv_dtype in ROWS:
        if chosen is not None and name not in chosen:
            continue
        b = Batch(heads, batch, keys, page, q_len, kv_dtype)
        timers = {"attnc": attnc_runner(b), "torch": torch_runner(b)}
        for backend in ("fa3", "fa2"):
            if fi is None:
                continue
            try:
                timers["fa_" + backend] = flashinfer_runner(fi, b, backend)
                timers["fa_" + backend]()
            except Exception as e:
                print(f"{name}: FlashInfer {backend}: "
                      f"{str(e).splitlines()[0]}")
                timers.pop("fa_" + backend, None)
        error = relative_error(timers["attnc"](), reference(b))
        times = time_alternately(timers, args.iters, timer=timer)
        ms = times["attnc"]
        gbs = b.bytes() / ms / 1e6
        tflops = b.flops() / ms / 1e9
        roof = max(gbs / copy, tflops / gemm)
        peers = [t for k, t in times.items() if k != "attnc"]
        cell = lambda k: f"{times[k]:.3f}" if k in times else "n/a"
        lines.append(
            f"| {name} | {heads} | {batch} x {q_len} x {keys} | {page} | "
            f"{ms:.3f} | "
            f"{gbs:.0f} | "
            f"{tflops:.0f} | {100 * roof:.0f}% | {cell('torch')} | "
            f"{cell('fa_fa3')} | {cell('fa_fa2')} | "
            f"{min(peers) / ms:.2f} | {error:.1e} |")
        print(lines[-1], flush=True)
        del b, timers
        torch.cuda.empty_cache()
    text = "\n".join(lines + [""] + sorted(set(notes))) + "\n"
    print(text)
    with open(os.path.join(args.out, "mla.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
