"""Cascade attention (shared prefixes read once per step) against the same
decodes reading every shared page through their own page tables, and
against cuDNN (PyTorch SDPA) on K/V replicated per request, in one run.

Workloads (issue 47): C1, 64 decodes under one 8192-token prefix with 256
tokens each; C3, a three-level tree (a 4096-token prompt shared by 128
requests, eight 2048-token blocks each shared by 16 of them, 128-512 own
tokens); N, 64 requests sharing nothing; and a sweep of prefix lengths and
sharers for the cost rule's crossover. Each row checks the cascade's
output against the plain paged one's before it is timed.

    PYTHONPATH=python python3 benchmarks/cascade.py --out /tmp/cascade
"""

import argparse
import datetime
import json
import os
import random
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import attnc  # noqa: E402

import flashinfer_peer  # noqa: E402
from bench import copy_ceiling_gbs, time_ms  # noqa: E402

HEADS, KV_HEADS, DIM, PAGE = 32, 8, 128, 16
BF16 = torch.bfloat16


class Tree:
    """Requests under levels of shared prefixes: `nodes[l]` lists (first
    request, end request, tokens) of level l; `own[r]` tokens of request
    r's own. Pages are numbered as laid out, then shuffled."""

    def __init__(self, requests, nodes, own):
        self.requests, self.nodes, self.own = requests, nodes, own
        pages = 0
        self.chunks = [[] for _ in range(requests)]  # page lists per level
        self.levels = []
        for level in nodes:
            qo, kv, indices, last = [0], [0], [], []
            covered = {r: n for n in level for r in range(n[0], n[1])}
            r = 0
            while r < requests:
                if r in covered:
                    first, end, tokens = covered[r]
                    count = -(-tokens // PAGE)
                    ids = list(range(pages, pages + count))
                    pages += count
                    for member in range(first, end):
                        self.chunks[member].append(ids)
                    indices += ids
                    kv.append(kv[-1] + count)
                    last.append(tokens - (count - 1) * PAGE)
                    qo.append(end)
                    r = end
                else:
                    kv.append(kv[-1])
                    last.append(0)
                    qo.append(r + 1)
                    r += 1
            self.levels.append([qo, kv, indices, last])
        qo, kv, indices, last = [0], [0], [], []
        for r in range(requests):
            count = -(-own[r] // PAGE)
            ids = list(range(pages, pages + count))
            pages += count
            self.chunks[r].append(ids)
            qo.append(r + 1)
            kv.append(kv[-1] + count)
            indices += ids
            last.append(own[r] - (count - 1) * PAGE)
        self.levels.append([qo, kv, indices, last])
        self.pages = pages
        perm = list(range(pages))
        random.Random(1).shuffle(perm)
        for level in self.levels:
            level[2] = [perm[p] for p in level[2]]
        self.chunks = [[[perm[p] for p in ids] for ids in c]
                       for c in self.chunks]

    def tensors(self):
        return [tuple(torch.tensor(a, dtype=torch.int32) for a in level)
                for level in self.levels]

    def page_tables(self):
        """Each request's whole page list, as plain paged attention reads
        it: (kv_indptr, kv_indices, kv_last_page_len)."""
        indptr, indices = [0], []
        for chunks in self.chunks:
            for ids in chunks:
                indices += ids
            indptr.append(len(indices))
        last = self.levels[-1][3]
        # A shared chunk ends on a full page in these workloads, so the
        # request's last page is its own last page.
        return (torch.tensor(indptr, dtype=torch.int32),
                torch.tensor(indices, dtype=torch.int32),
                torch.tensor(last, dtype=torch.int32))

    def kv_tokens(self):
        """Keys each request attends to, and keys stored once."""
        per_request = [self.own[r] + sum(
            n[2] for level in self.nodes for n in level if n[0] <= r < n[1])
            for r in range(self.requests)]
        stored = sum(self.own) + sum(n[2] for level in self.nodes
                                     for n in level)
        return per_request, stored


def c1():
    return Tree(64, [[(0, 64, 8192)]], [256] * 64)


def c3():
    rng = random.Random(3)
    blocks = [(16 * i, 16 * i + 16, 2048) for i in range(8)]
    return Tree(128, [[(0, 128, 4096)], blocks],
                [rng.randint(128, 512) for _ in range(128)])


def no_sharing():
    return Tree(64, [], [8448] * 64)


def sweep(prefix, sharers, requests=64, own=128):
    groups = [(g, g + sharers, prefix) for g in range(0, requests, sharers)]
    return Tree(requests, [groups], [own] * requests)


def graphed(fn):
    """`fn` captured once in a CUDA graph: the returned call replays it."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def flashinfer_ms(fi, tree, q, caches, out_ref, iters):
    """FlashInfer's MultiLevelCascadeAttentionWrapper on the same levels:
    (device ms, relative error against attnc's plain paged output), its
    calls replayed from a CUDA graph where it captures, else eager."""
    fn = flashinfer_peer.cascade(fi, q, *caches, tree.tensors(), causal=True)
    out = fn()
    torch.cuda.synchronize()
    err = ((out.double() - out_ref.double()).norm() /
           out_ref.double().norm()).item()
    try:
        timed = graphed(fn)
    except RuntimeError:
        torch.cuda.synchronize()
        timed = fn
    return time_ms(timed, iters), err


def run_row(name, tree, caches, ceiling_gbs, cudnn=False, iters=30,
            fi=None):
    k_cache, v_cache = caches
    q = torch.randn(tree.requests, HEADS, DIM, device="cuda", dtype=BF16)
    cascade = attnc.CascadeAttention(HEADS, KV_HEADS, DIM, PAGE, causal=True)
    cascade.plan(tree.tensors())
    plain = attnc.PagedAttention(HEADS, KV_HEADS, DIM, PAGE, causal=True)
    indptr, indices, last = tree.page_tables()
    plain.plan(indptr, indices, last)
    out_c, out_p = torch.empty_like(q), torch.empty_like(q)
    cascade.run(q, k_cache, v_cache, out=out_c)
    plain.run(q, k_cache, v_cache, out=out_p)
    torch.cuda.synchronize()
    err = ((out_c.double() - out_p.double()).norm() /
           out_p.double().norm()).item()
    lse_c = torch.empty(q.shape[:2], device="cuda")
    run_c = lambda: cascade.run(q, k_cache, v_cache, out=out_c,  # noqa: E731
                                lse=lse_c)
    run_p = lambda: plain.run(q, k_cache, v_cache, out=out_p)  # noqa: E731
    # Device time: each call replayed from a CUDA graph, as an engine's
    # decode step runs (eager calls of a few launches are host-bound).
    ms_c = time_ms(graphed(run_c), iters)
    ms_p = time_ms(graphed(run_p), iters)
    # A/B: the own level on the same stream as the shared ones, after them.
    if cascade._shared:
        side = cascade._side_stream
        cascade._side_stream = None
        serial_ms = time_ms(graphed(run_c), iters)
        cascade._side_stream = side
    else:
        serial_ms = ms_c
    # What the cascade's own level alone takes (each request's own pages).
    if cascade._shared:
        own_out, own_lse = torch.empty_like(q), torch.empty_like(lse_c)
        own_ms = time_ms(graphed(lambda: cascade._own.run(
            q, k_cache, v_cache, out=own_out, lse=own_lse)), iters)
    else:
        own_ms = ms_c
    eager_c = time_ms(run_c, iters)
    eager_p = time_ms(run_p, iters)
    per_request, stored = tree.kv_tokens()
    row_bytes = 2 * KV_HEADS * DIM * 2  # a key's K and V
    unique_ms = stored * row_bytes / ceiling_gbs / 1e6
    row = dict(name=name, requests=tree.requests, cascade_ms=ms_c,
               plain_ms=ms_p, speedup=ms_p / ms_c, rel_err=err,
               eager_cascade_ms=eager_c, eager_plain_ms=eager_p,
               own_level_ms=own_ms, serial_cascade_ms=serial_ms,
               kv_read_once=1 - stored / sum(per_request),
               unique_bytes_bound_ms=unique_ms)
    if fi is not None:
        try:
            row["flashinfer_cascade_ms"], row["flashinfer_rel_err"] = \
                flashinfer_ms(fi, tree, q, caches, out_p, iters)
        except Exception as error:  # a peer's failure is reported, not fatal
            row["flashinfer_cascade_ms"] = None
            row["flashinfer_error"] = flashinfer_peer.short_error(error)
    if cudnn:
        length = per_request[0]
        assert all(n == length for n in per_request)
        k = torch.randn(tree.requests, KV_HEADS, length, DIM, device="cuda",
                        dtype=BF16)
        v = torch.randn_like(k)
        qd = q[:, :, None, :]
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            fn = lambda: F.scaled_dot_product_attention(  # noqa: E731
                qd, k, v, enable_gqa=True)
            try:
                row["cudnn_replicated_ms"] = time_ms(graphed(fn), iters)
            except RuntimeError as error:
                row["cudnn_replicated_ms"] = None
                row["cudnn_error"] = str(error).splitlines()[0]
        del k, v
    print(json.dumps(row), flush=True)
    return row


def fi_cell(row):
    if "flashinfer_cascade_ms" not in row:
        return ""
    if row["flashinfer_cascade_ms"] is None:
        return f"failed: {row['flashinfer_error']}"
    return (f"{row['flashinfer_cascade_ms']:.4f} "
            f"({row['flashinfer_cascade_ms'] / row['cascade_ms']:.2f}x, "
            f"err {row['flashinfer_rel_err']:.1e})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/cascade")
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--flashinfer", action="store_true",
                        help="also FlashInfer's cascade wrapper on C1 and C3 "
                        "(its sdist under .peers/, JIT-built first)")
    args = parser.parse_args()
    fi = None
    if args.flashinfer:
        try:
            fi = flashinfer_peer.load()
            took, built = flashinfer_peer.prebuild(fi, [
                flashinfer_peer.prefill_key("fa2", DIM),
                flashinfer_peer.prefill_key("fa3", DIM),
                flashinfer_peer.cascade_key()])
            print(f"FlashInfer {flashinfer_peer.version(fi)}: {built} "
                  f"modules built in {took:.0f} s", flush=True)
        except Exception as error:
            print(f"FlashInfer unavailable: "
                  f"{flashinfer_peer.short_error(error)}", flush=True)
            fi = None
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbs()
    rows = []
    trees = [("C1 64 x (8192 shared + 256)", c1(), True, fi),
             ("C3 4096 / 8 x 2048 / 128-512", c3(), False, fi),
             ("N 64 x 8448 unshared", no_sharing(), False, None)]
    if not args.no_sweep:
        for prefix in (128, 512, 2048):
            for sharers in (2, 4, 16, 64):
                trees.append((f"sweep prefix {prefix} x {sharers} sharers",
                              sweep(prefix, sharers), False, None))
    for name, tree, cudnn, peer in trees:
        shape = (tree.pages, PAGE, KV_HEADS, DIM)
        caches = (torch.randn(shape, device="cuda", dtype=BF16),
                  torch.randn(shape, device="cuda", dtype=BF16))
        rows.append(run_row(name, tree, caches, ceiling, cudnn=cudnn,
                            fi=peer))
        del caches
    result = dict(device=torch.cuda.get_device_name(),
                  date=datetime.date.today().isoformat(),
                  copy_gbs=ceiling, rows=rows,
                  command="PYTHONPATH=python python3 benchmarks/cascade.py")
    with open(os.path.join(args.out, "cascade.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"\n{result['device']}, copy {ceiling:.0f} GB/s")
    print("Device times from CUDA-graph replays; eager: host-bound calls.")
    print("| row | cascade ms | plain paged ms | speedup | cuDNN replicated "
          "ms | FlashInfer cascade ms | read once | bound ms | "
          "eager cascade / plain ms | rel err |")
    for r in rows:
        cudnn = r.get("cudnn_replicated_ms")
        print(f"| {r['name']} | {r['cascade_ms']:.4f} | {r['plain_ms']:.4f} "
              f"| {r['speedup']:.2f}x | "
              f"{'' if cudnn is None else f'{cudnn:.4f}'} | "
              f"{fi_cell(r)} | "
              f"{100 * r['kv_read_once']:.0f}% | "
              f"{r['unique_bytes_bound_ms']:.4f} | "
              f"{r['eager_cascade_ms']:.3f} / {r['eager_plain_ms']:.3f} | "
              f"{r['rel_err']:.1e} |")


if __name__ == "__main__":
    main()
