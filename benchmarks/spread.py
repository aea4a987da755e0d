"""How much one workload's time moves, and with what.

Times attnc and cuDNN (SDPA) on one prefill workload several times in one
process: on the same tensors, and on tensors allocated afresh before each
sample. A spread that appears only with fresh allocations points at where
the memory lands (an H200's L2 is split in two partitions); one that
appears on the same tensors points at the kernel or the host path.

    PYTHONPATH=python python3 benchmarks/spread.py --workload P1 --samples 5
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attnc  # noqa: E402

from bench import time_ms  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def tensors(w, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    shape = lambda heads, length: (w.batch, length, heads, w.dim)  # noqa
    q = torch.randn(shape(w.heads, w.q_len), generator=g, device="cuda",
                    dtype=torch.bfloat16)
    k = torch.randn(shape(w.kv_heads, w.kv_len), generator=g, device="cuda",
                    dtype=torch.bfloat16)
    v = torch.randn(shape(w.kv_heads, w.kv_len), generator=g, device="cuda",
                    dtype=torch.bfloat16)
    return q, k, v


def sample(w, q, k, v, iters):
    out = torch.empty_like(q)
    ours = time_ms(lambda: attnc.attention(q, k, v, layout="bshd",
                                           causal=w.causal, out=out),
                   iters)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

    def cudnn():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(
                qt, kt, vt, is_causal=w.causal,
                enable_gqa=w.heads != w.kv_heads)
    return ours, time_ms(cudnn, iters)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", default="P1")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    w = next(w for w in WORKLOADS if w.name == args.workload)
    if (w.decode or w.paged or w.window is not None or w.ragged_layout
            or w.softcap or w.alibi):
        sys.exit(f"{w.name}: only plain dense prefill workloads are timed "
                 "here")
    same = tensors(w, 1)
    print(f"{w.name}: {w.what}")
    print("inputs  sample  attnc ms  cuDNN ms  cuDNN / attnc")
    for label in ("same", "fresh"):
        for i in range(args.samples):
            q, k, v = same if label == "same" else tensors(w, 100 + i)
            ours, peer = sample(w, q, k, v, args.iters)
            print(f"{label:6}  {i:6}  {ours:8.3f}  {peer:8.3f}  "
                  f"{peer / ours:13.2f}", flush=True)
            if label == "fresh":
                del q, k, v
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
