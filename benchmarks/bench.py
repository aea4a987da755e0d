"""attnc against its peers, on identical inputs in one process.

For every workload of issues 4 and 12 it times attnc, PyTorch SDPA with the
flash and cuDNN backends, FlexAttention (torch.compile) and, where its
source distribution is at hand, FlashInfer (JIT-built: flashinfer_peer.py),
and measures in the same run the device-copy bandwidth and the bf16 GEMM
throughput that bound them. It prints a table and writes
docs/PERFORMANCE.md's results section (Markdown and an SVG plot) under --out.

    PYTHONPATH=python python3 benchmarks/bench.py --out /tmp/bench
"""

import argparse
import datetime
import itertools
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

import flashinfer_peer  # noqa: E402
from plot import bar_chart_svg  # noqa: E402
from report import PEERS, best_peer, check_failures, markdown  # noqa: E402
from workloads import WORKLOADS, alibi_slopes  # noqa: E402

BF16 = torch.bfloat16
DEV = "cuda"


class Skip(Exception):
    """A peer that cannot compute a workload's function; str() says why."""


def calls_per_sample(fn, min_batch_ms):
    """Back-to-back calls of `fn` that take at least min_batch_ms (at most
    100), from the time of one synchronized call."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    once_ms = (time.perf_counter() - start) * 1e3
    return max(1, min(100, int(min_batch_ms / max(once_ms, 1e-3))))


def median_ms_per_call(sample, calls, iters, before=None):
    """Median over `iters` runs of `sample` (which makes `calls` calls),
    timed between two events, of the time per call. `before` runs ahead of
    each sample's first event."""
    times = []
    for _ in range(iters):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if before is not None:
            before()
        begin.record()
        sample()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / calls)
    times.sort()
    return times[len(times) // 2]


def time_ms(fn, iters, warmup=3, min_batch_ms=20.0):
    """Median over `iters` samples of the time per call, each sample timing
    enough back-to-back calls (>= min_batch_ms) that host overhead (Python,
    ctypes, argument checks) overlaps the GPU work instead of adding to it,
    as in a model's forward pass. A call queued ahead of each sample keeps
    the GPU busy while the host prepares the sample's first call, whose
    host time would otherwise be counted (8 % of attnc's P1 with 2 calls a
    sample)."""
    for _ in range(warmup):
        fn()
    reps = calls_per_sample(fn, min_batch_ms)

    def sample():
        for _ in range(reps):
            fn()
    return median_ms_per_call(sample, reps, iters, before=fn)


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


SAME_BYTES_COPY = "same_bytes_copy"


def same_bytes_copy(w):
    """A device copy moving a decode row's bytes (reading half, writing
    half), timed beside the row: the ceiling a kernel moving that many
    bytes meets, launch and tail included. A short row (one request of 32k
    keys moves 134 MB, 40 us) cannot reach the 1 GiB copy's rate; this
    ceiling says how far it is from what the memory allows at its size."""
    half = w.kv_bytes() // 2
    src = torch.empty(half, dtype=torch.uint8, device=DEV).random_()
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def relative_error(ours, ref):
    ours, ref = ours.float().reshape(ref.shape), ref.float()
    if torch.isnan(ours).any():
        return float("nan")
    return ((ours - ref).norm() / ref.norm()).item()


def make_inputs(w):
    g = torch.Generator(device=DEV).manual_seed(1)
    q = torch.randn(w.batch, w.q_len, w.heads, w.dim, device=DEV, dtype=BF16,
                    generator=g)
    k = torch.randn(w.batch, w.kv_len, w.kv_heads, w.dim, device=DEV,
                    dtype=BF16, generator=g)
    v = torch.randn(w.batch, w.kv_len, w.kv_heads, w.v_dim, device=DEV,
                    dtype=BF16, generator=g)
    return q, k, v


class Context:
    """One workload's inputs and what its runners share: masks built once,
    the paged cache of decode rows, notes for the table."""

    def __init__(self, w, q, k, v, fi):
        self.w, self.q, self.k, self.v, self.fi = w, q, k, v, fi
        self.paged = None
        self.notes = []
        self.extras = {}  # name: (label, fn), timed after the peers
        self._cache = {}

    def cached(self, key, build):
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def ragged(self):
        """q, k, v as [tokens, heads, dim] (views of the dense inputs) and
        int32 index pointers on the device, one request per document for a
        packed batch."""
        w = self.w
        q_lens, kv_lens = w.request_lengths()

        def indptr(lengths):
            ends = [0]
            for n in lengths:
                ends.append(ends[-1] + n)
            return torch.tensor(ends, dtype=torch.int32, device=DEV)
        return (self.q.reshape(-1, w.heads, w.dim),
                self.k.reshape(-1, w.kv_heads, w.dim),
                self.v.reshape(-1, w.kv_heads, w.v_dim),
                indptr(q_lens), indptr(kv_lens), max(q_lens), max(kv_lens))


class PagedCache:
    """A decode row's K/V as NHD pages [pages, page, kv_heads, dim] of the
    row's page size (16 unless it says). Shuffled: the dense keys scattered
    into pages in a random order (D4, D8, D9). Otherwise the dense tensors
    viewed as pages in order: no copy."""

    def __init__(self, w, k, v, shuffle):
        self.page = page = w.page
        pages_per = w.kv_len // page
        total = w.batch * pages_per
        shape = (total, page, w.kv_heads, w.dim)
        if shuffle:
            order = torch.randperm(
                total, generator=torch.Generator().manual_seed(2))
            self.indices = order.to(torch.int32)
            index = order.to(DEV)
            self.k = torch.empty(shape, device=DEV, dtype=k.dtype)
            self.v = torch.empty_like(self.k)
            self.k[index] = k.reshape(shape)
            self.v[index] = v.reshape(shape)
        else:
            self.indices = torch.arange(total, dtype=torch.int32)
            self.k, self.v = k.view(shape), v.view(shape)
        self.indptr = torch.arange(0, total + 1, pages_per, dtype=torch.int32)
        self.last = torch.full((w.batch,), page, dtype=torch.int32)
        if w.kv_lens is not None:
            # A ragged batch: request b's table lists its first pages.
            used = [(n + page - 1) // page for n in w.kv_lens]
            self.indices = torch.cat([
                self.indices[b * pages_per:b * pages_per + n]
                for b, n in enumerate(used)])
            self.indptr = torch.tensor([0] + list(itertools.accumulate(used)),
                                       dtype=torch.int32)
            self.last = torch.tensor([n - (u - 1) * page
                                      for n, u in zip(w.kv_lens, used)],
                                     dtype=torch.int32)


def _window(w):
    return None if w.window is None else (w.window, 0)


# An fp8 row's scales: powers of two, so that the bf16 values the peers
# read (fp8 value x scale) are exactly the ones attnc dequantizes.
FP8_SCALES = (0.5, 0.25)


def fp8_inputs(ctx):
    """An fp8 row: attnc's cache (k / k_scale and v / v_scale in fp8) and
    scale tensors; ctx.k and ctx.v become the dequantized bf16 values the
    peers (and the reference) read."""
    w = ctx.w
    dtype = getattr(torch, w.kv_dtype)
    scales = [torch.tensor([s], dtype=torch.float32, device=DEV)
              for s in FP8_SCALES]
    k8 = (ctx.k.float() / FP8_SCALES[0]).to(dtype)
    v8 = (ctx.v.float() / FP8_SCALES[1]).to(dtype)
    ctx.k = (k8.float() * FP8_SCALES[0]).to(BF16)
    ctx.v = (v8.float() * FP8_SCALES[1]).to(BF16)
    ctx.notes.append(f"attnc reads a {w.kv_dtype} cache with scales "
                     f"{FP8_SCALES[0]} and {FP8_SCALES[1]} (the bytes counted"
                     f" are fp8); the peers read its values in bf16")
    return k8, v8, scales


def attnc_runner(ctx):
    w, q, k, v = ctx.w, ctx.q, ctx.k, ctx.v
    mods = dict(causal=w.causal, window=_window(w), softcap=w.softcap,
                alibi=w.alibi, sinks=w.sinks)
    if w.kv_dtype:
        k8, v8, (k_scale, v_scale) = ctx.fp8
        if w.paged:
            cache = PagedCache(w, k8, v8, shuffle=True)
            wrapper = attnc.PagedAttention(w.heads, w.kv_heads, w.dim,
                                           cache.page, kv_dtype=w.kv_dtype)
            wrapper.plan(cache.indptr, cache.indices, cache.last)
            q3 = q.reshape(w.batch, w.heads, w.dim)
            out = torch.empty_like(q3)
            return (lambda: wrapper.run(q3, cache.k, cache.v, out=out,
                                        k_scale=k_scale, v_scale=v_scale),
                    out.reshape(q.shape))
        out = torch.empty_like(q)
        return (lambda: attnc.attention(q, k8, v8, layout="bshd", out=out,
                                        k_scale=k_scale,
                                        v_scale=v_scale, **mods)), out
    if w.ragged_layout:
        q2, k2, v2, q_ptr, kv_ptr, max_q, max_kv = ctx.ragged()
        out = q2.new_empty(q2.shape[:-1] + (w.v_dim,))
        # max_q_len / max_kv_len given: the index pointers stay on the
        # device, unread by the host (attnc.attention's trusted path).
        run = lambda: attnc.attention(  # noqa: E731
            q2, k2, v2, q_indptr=q_ptr, kv_indptr=kv_ptr, max_q_len=max_q,
            max_kv_len=max_kv, out=out, **mods)
        return run, out.view(q.shape[:-1] + (w.v_dim,))
    if not w.paged:
        out = q.new_empty(q.shape[:-1] + (w.v_dim,))
        return lambda: attnc.attention(q, k, v, layout="bshd", out=out,
                                       **mods), out
    cache = ctx.paged
    if not w.decode:  # paged prefill: ragged queries, one request each
        wrapper = attnc.PagedAttention(w.heads, w.kv_heads, w.dim,
                                       cache.page, causal=w.causal,
                                       window=_window(w), softcap=w.softcap)
        q2, _, _, q_ptr, _, _, _ = ctx.ragged()
        wrapper.plan(cache.indptr, cache.indices, cache.last,
                     qo_indptr=q_ptr.cpu())
        out = torch.empty_like(q2)
        return (lambda: wrapper.run(q2, cache.k, cache.v, out=out),
                out.view(q.shape))
    wrapper = attnc.PagedAttention(w.heads, w.kv_heads, w.dim, cache.page)
    wrapper.plan(cache.indptr, cache.indices, cache.last)
    q3 = q.reshape(w.batch, w.heads, w.dim)
    out = torch.empty_like(q3)
    return (lambda: wrapper.run(q3, cache.k, cache.v, out=out),
            out.reshape(q.shape))


DOC_MASK_MOD = """
  ^bb0(%b: index, %h: index, %qi: index, %kvi: index, %q_len: index,
       %kv_len: index, %ids: memref<?x?xi32>):
    %end = arith.addi %qi, %kv_len : index
    %pos = arith.subi %end, %q_len : index
    %qdoc = memref.load %ids[%b, %pos] : memref<?x?xi32>
    %kvdoc = memref.load %ids[%b, %kvi] : memref<?x?xi32>
    %same = arith.cmpi eq, %qdoc, %kvdoc : i32
    attn.yield %same : i1"""


def attnc_mask_mod_runner(ctx):
    """P6 the other way attnc's Python API can say it: the dense packed
    sequence with {causal} and a mask_mod region reading document ids
    (examples/document_mask.mlir). Every tile below the diagonal is visited,
    where the ragged layout visits only each document's own."""
    q, k, v = ctx.q, ctx.k, ctx.v
    ids = document_ids(ctx).view(1, -1)
    out = torch.empty_like(q)
    return (lambda: attnc.attention(q, k, v, layout="bshd", causal=True,
                                    mask_mod=DOC_MASK_MOD, captures=[ids],
                                    out=out)), out


def document_ids(ctx):
    w = ctx.w
    return ctx.cached("doc_ids", lambda: torch.repeat_interleave(
        torch.arange(len(w.docs), dtype=torch.int32, device=DEV),
        torch.tensor(w.docs, device=DEV)))


def visible_mask(ctx):
    """[q_len, kv_len] bool, True where a key is visible (bottom-right
    aligned causal, window, documents); None where every key is."""
    w = ctx.w
    if not w.causal and w.window is None and w.docs is None:
        return None

    def build():
        rows = torch.arange(w.q_len, device=DEV)[:, None] + (w.kv_len -
                                                             w.q_len)
        cols = torch.arange(w.kv_len, device=DEV)[None, :]
        mask = torch.ones(w.q_len, w.kv_len, dtype=torch.bool, device=DEV)
        if w.causal:
            mask &= cols <= rows
        if w.window is not None:
            mask &= (cols >= rows - w.window) | (cols < w.sinks)
        if w.docs is not None:
            ids = document_ids(ctx)
            mask &= ids[:, None] == ids[None, :]
        return mask
    return ctx.cached("visible", build)


def alibi_bias(ctx):
    """[1, heads, q_len, kv_len] bf16: slope_h * (key - query position)
    where visible, -inf elsewhere; SDPA adds it to the scaled scores as
    attnc adds its ALiBi. bf16 as SDPA's fused kernels want q's dtype (4
    GiB for P1 shapes); its rounding shows in the peer's error."""
    w = ctx.w

    def build():
        rows = torch.arange(w.q_len, device=DEV)[:, None] + (w.kv_len -
                                                             w.q_len)
        cols = torch.arange(w.kv_len, device=DEV)[None, :]
        distance = (cols - rows).float()
        hidden = visible_mask(ctx)
        hidden = None if hidden is None else ~hidden
        bias = torch.empty(1, w.heads, w.q_len, w.kv_len, dtype=BF16,
                           device=DEV)
        for h, slope in enumerate(alibi_slopes(w.heads)):
            b = slope * distance
            if hidden is not None:
                b.masked_fill_(hidden, float("-inf"))
            bias[0, h] = b
        ctx.notes.append(f"SDPA gets ALiBi as an additive bf16 bias "
                         f"{list(bias.shape)} ({bias.numel() * 2 >> 20} "
                         f"MiB, -inf where the mask hides a key); Flex as a "
                         f"score_mod")
        return bias
    return ctx.cached("alibi_bias", build)


def reference_attention(ctx):
    """float64 attention computed score by score (scores, soft-cap, ALiBi,
    mask, softmax, then P·V), a few heads at a time: the reference for the
    functions no SDPA backend computes, and when no peer ran."""
    w, q, k, v = ctx.w, ctx.q, ctx.k, ctx.v
    group = w.heads // w.kv_heads
    scale = 1.0 / math.sqrt(w.dim)
    visible = visible_mask(ctx)
    hidden = None if visible is None else ~visible
    distance = slopes = None
    if w.alibi:
        rows = torch.arange(w.q_len, device=DEV)[:, None] + (w.kv_len -
                                                             w.q_len)
        cols = torch.arange(w.kv_len, device=DEV)[None, :]
        distance = (cols - rows).double()
        slopes = torch.tensor(alibi_slopes(w.heads), dtype=torch.float64,
                              device=DEV)
    out = torch.empty(q.shape[:-1] + (w.v_dim,), dtype=torch.float64,
                      device=DEV)
    chunk = max(1, min(w.heads, (128 << 20) // (w.q_len * w.kv_len)))
    for b in range(w.batch):
        for h0 in range(0, w.heads, chunk):
            h1 = min(w.heads, h0 + chunk)
            kv = torch.arange(h0, h1, device=DEV) // group
            qh = q[b, :, h0:h1].double().transpose(0, 1)
            kh = k[b][:, kv].double().transpose(0, 1)
            vh = v[b][:, kv].double().transpose(0, 1)
            s = torch.matmul(qh, kh.transpose(1, 2)) * scale
            if w.softcap:
                s = w.softcap * torch.tanh(s / w.softcap)
            if distance is not None:
                s += slopes[h0:h1, None, None] * distance
            if hidden is not None:
                s.masked_fill_(hidden, float("-inf"))
            p = torch.softmax(s, dim=-1)
            out[b, :, h0:h1] = torch.matmul(p, vh).transpose(0, 1)
            del s, p
    return out


def sdpa_runner(backend, ctx):
    w = ctx.w
    if w.softcap:
        raise Skip("SDPA has no soft-cap")
    if w.kv_lens is not None:
        return sdpa_per_request(backend, ctx)
    qt, kt, vt = (x.transpose(1, 2) for x in (ctx.q, ctx.k, ctx.v))
    mask = None
    if w.alibi:
        mask = alibi_bias(ctx)
    elif w.window is not None or w.docs is not None:
        mask = visible_mask(ctx)
    gqa = w.heads != w.kv_heads
    causal = w.causal and mask is None

    def run():
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(
                qt, kt, vt, attn_mask=mask, is_causal=causal,
                enable_gqa=gqa).transpose(1, 2)
    return run


def sdpa_per_request(backend, ctx):
    """A ragged decode batch as SDPA takes it: one call per request over
    its own keys."""
    w = ctx.w
    note = "SDPA runs one call per request (it takes no ragged batch)"
    if note not in ctx.notes:
        ctx.notes.append(note)
    views = [tuple(x[b:b + 1, :n].transpose(1, 2) for x in (ctx.k, ctx.v))
             for b, n in enumerate(w.kv_lens)]
    qt = ctx.q.transpose(1, 2)
    out = torch.empty_like(ctx.q)

    def run():
        with sdpa_kernel([backend]):
            for b, (kt, vt) in enumerate(views):
                out[b:b + 1] = F.scaled_dot_product_attention(
                    qt[b:b + 1], kt, vt,
                    enable_gqa=w.heads != w.kv_heads).transpose(1, 2)
        return out
    return run


_flex = None


def flex_runner(ctx):
    global _flex
    if ctx.w.kv_lens is not None:
        raise Skip("this harness gives FlexAttention no ragged batch")
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    if _flex is None:
        # Every row compiles flex_attention anew (its shapes, mask and
        # score_mod); past dynamo's recompile limit (8) it would fall back
        # to the unfused eager implementation and time that instead.
        # (as _dynamo: a plain "import torch._dynamo" would make torch a
        # local name of this function, unbound in the mods below)
        import torch._dynamo as _dynamo
        for limit in ("recompile_limit", "cache_size_limit"):
            if hasattr(_dynamo.config, limit):
                setattr(_dynamo.config, limit, 256)
        _flex = torch.compile(flex_attention, dynamic=False)
    w = ctx.w
    offset = w.kv_len - w.q_len
    window = w.window

    def causal_fn(b, h, qi, kvi):
        return kvi <= qi + offset

    def window_fn(b, h, qi, kvi):
        return (kvi <= qi + offset) & ((kvi >= qi + offset - window) |
                                       (kvi < w.sinks))

    mask_fn = None
    if w.docs is not None:
        ids = document_ids(ctx)

        def document_fn(b, h, qi, kvi):
            return (ids[qi] == ids[kvi]) & (kvi <= qi)
        mask_fn = document_fn
    elif window is not None:
        mask_fn = window_fn
    elif w.causal:
        mask_fn = causal_fn

    score_mod = None
    if w.softcap:
        cap = w.softcap

        def softcap_fn(score, b, h, qi, kvi):
            return cap * torch.tanh(score / cap)
        score_mod = softcap_fn
    elif w.alibi:
        slopes = torch.tensor(alibi_slopes(w.heads), dtype=torch.float32,
                              device=DEV)

        def alibi_fn(score, b, h, qi, kvi):
            return score + slopes[h] * (kvi - qi - offset)
        score_mod = alibi_fn

    qt, kt, vt = (x.transpose(1, 2) for x in (ctx.q, ctx.k, ctx.v))
    gqa = w.heads != w.kv_heads

    def block_mask():
        return create_block_mask(mask_fn, None, None, w.q_len, w.kv_len,
                                 device=DEV)

    if w.docs is not None:
        # The block mask follows the batch's documents: a user builds it
        # for every batch, so each call pays for it.
        ctx.extras["flex_block_mask"] = ("Flex's create_block_mask alone",
                                         block_mask)
        ctx.notes.append("Flex's time includes create_block_mask on every "
                         "call (the document mask changes with each batch)")
        return lambda: _flex(qt, kt, vt, score_mod=score_mod,
                             block_mask=block_mask(),
                             enable_gqa=gqa).transpose(1, 2)
    mask = block_mask() if mask_fn is not None else None
    return lambda: _flex(qt, kt, vt, score_mod=score_mod, block_mask=mask,
                         enable_gqa=gqa).transpose(1, 2)


def flashinfer_prefill_runner(ctx):
    w, fi = ctx.w, ctx.fi
    q2, k2, v2, q_ptr, kv_ptr, _, _ = ctx.ragged()
    shape = ctx.q.shape[:-1] + (w.v_dim,)
    if w.paged:  # (no such row yet) the paged wrapper, FA3
        if w.alibi:
            raise Skip("FlashInfer's FA3 kernels apply no ALiBi")
        cache = ctx.paged
        fn = flashinfer_peer.paged_prefill(
            fi, q2, cache.k, cache.v, q_ptr, cache.indptr, cache.indices,
            cache.last, causal=w.causal, window=w.window, softcap=w.softcap)
        return lambda: fn().view(shape)
    fn, backend = flashinfer_peer.ragged_prefill(
        fi, q2, k2, v2, q_ptr, kv_ptr, causal=w.causal, window=w.window,
        softcap=w.softcap, alibi=w.alibi)
    if backend != "fa3":
        ctx.notes.append(f"FlashInfer runs its {backend.upper()} backend "
                         f"(its FA3 kernels apply no ALiBi)")
    return lambda: fn().view(shape)


# The GQA groups FlashInfer's plain (CUDA-core) decode kernels are built for
# (DISPATCH_GQA_GROUP_SIZE in its utils.cuh); its plan rejects others by
# throwing across its binding, which kills the process (measured: a
# segmentation fault on D3's group of 7).
FLASHINFER_DECODE_GROUPS = (1, 2, 3, 4, 8)


def flashinfer_decode_runner(ctx, tensor_cores):
    w, cache = ctx.w, ctx.paged
    if w.sinks:
        raise Skip("FlashInfer's decode keeps no sink tokens")
    group = w.heads // w.kv_heads
    if not tensor_cores and group not in FLASHINFER_DECODE_GROUPS:
        raise Skip(f"FlashInfer's decode kernels take GQA groups "
                   f"{FLASHINFER_DECODE_GROUPS}, not {group}")
    q3 = ctx.q.reshape(w.batch, w.heads, w.dim)
    fn = flashinfer_peer.paged_decode(
        ctx.fi, q3, cache.k, cache.v, cache.indptr, cache.indices,
        cache.last, tensor_cores)
    shape = ctx.q.shape
    return lambda: fn().view(shape)


def peers_of(ctx, with_flex):
    w = ctx.w
    peers = [("flash", lambda: sdpa_runner(SDPBackend.FLASH_ATTENTION, ctx)),
             ("cudnn", lambda: sdpa_runner(SDPBackend.CUDNN_ATTENTION, ctx))]
    if with_flex:
        peers.append(("flex", lambda: flex_runner(ctx)))
    if ctx.fi is not None and w.decode:
        peers += [("fi_decode", lambda: flashinfer_decode_runner(ctx, False)),
                  ("fi_decode_tc",
                   lambda: flashinfer_decode_runner(ctx, True))]
    elif ctx.fi is not None:
        peers.append(("flashinfer", lambda: flashinfer_prefill_runner(ctx)))
    return peers


def one_line(error):
    return (str(error).split("\n")[0][:160] or type(error).__name__)


def flashinfer_module_of(peer, w):
    """The JIT module a FlashInfer peer of workload w builds and runs."""
    first, second = (flashinfer_modules(w) + [None])[:2]
    return {"flashinfer": first, "fi_decode": first,
            "fi_decode_tc": second}.get(peer)


_CAPTURE_STREAM = None


def time_ms_graph(fn, iters, min_batch_ms=20.0):
    """Median over `iters` replays of a CUDA graph of back-to-back calls
    (>= min_batch_ms) of the time per call: the GPU's time alone, none of
    the host's (Python, ctypes, argument checks), as engines replay their
    decode steps. Raises where `fn` cannot be captured. One capture stream
    serves every implementation: attnc keeps a plan per stream, made by
    the warm-up calls outside the capture."""
    global _CAPTURE_STREAM
    if _CAPTURE_STREAM is None:
        _CAPTURE_STREAM = torch.cuda.Stream()
    stream = _CAPTURE_STREAM
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    reps = calls_per_sample(fn, min_batch_ms)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(reps):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return median_ms_per_call(graph.replay, reps, iters)


def graph_or_eager(notes):
    """A timer that replays CUDA graphs, falling back to eager calls (with
    a note) for an implementation whose calls cannot be captured."""
    def timer(fn, iters, name=None):
        try:
            return time_ms_graph(fn, iters)
        except Exception as error:
            torch.cuda.synchronize()
            notes.append(f"{name}: timed eagerly, its calls could not be "
                         f"captured ({one_line(error)})")
            return time_ms(fn, iters)
    return timer


def time_alternately(timers, iters, rounds=3, timer=None):
    """Median ms of each implementation over `rounds` rounds that each time
    every implementation in turn (with `timer`, e.g. graph_or_eager's;
    time_ms without). The card's clocks settle lower under
    sustained load (about 12 % on an H200, benchmarks/spread.py): timing
    each implementation once, one after the other, would hand that drift
    to whichever runs later."""
    per_round = max(3, -(-iters // rounds))
    samples = {name: [] for name in timers}
    for _ in range(rounds):
        for name, fn in timers.items():
            samples[name].append(time_ms(fn, per_round) if timer is None
                                 else timer(fn, per_round, name))
    return {name: sorted(times)[len(times) // 2]
            for name, times in samples.items()}


def measure(w, iters, with_flex, fi, broken, graphs=False):
    """One row. `broken`: FlashInfer JIT modules whose build failed on an
    earlier row (module: why), not tried again (a failing build costs
    minutes)."""
    q, k, v = make_inputs(w)
    ctx = Context(w, q, k, v, fi)
    if w.kv_dtype:
        ctx.fp8 = fp8_inputs(ctx)
    if w.decode or w.paged:
        ctx.paged = PagedCache(w, ctx.k, ctx.v, shuffle=w.paged)
    row = {"name": w.name, "what": w.what, "decode": w.decode}
    ours_out = None
    timers = {}  # implementation -> its call, timed once all have run
    try:
        ours, ours_out = attnc_runner(ctx)
        ours()
        torch.cuda.synchronize()
        timers["attnc"] = ours
    except Exception as error:
        row["attnc"], row["attnc_why"] = None, one_line(error)
        ours_out = None

    reference, row["reference"] = None, None
    if w.softcap or w.alibi:
        # No SDPA backend computes these: the reference is explicit.
        reference = reference_attention(ctx)
        row["reference"] = "a float64 reference computed score by score"
    errors = {}
    for name, make in peers_of(ctx, with_flex):
        module = flashinfer_module_of(name, w)
        if module in broken:
            row[name], row[name + "_why"] = None, broken[module]
            continue
        try:
            fn = make()
            out = fn()
            torch.cuda.synchronize()
            timers[name] = fn
            if reference is None:
                reference, row["reference"] = out, name
            else:
                errors[name] = relative_error(out, reference)
        except Skip as why:
            row[name], row[name + "_why"] = None, str(why)
        except Exception as error:
            row[name] = None
            if name.startswith("fi"):
                row[name + "_why"] = flashinfer_peer.short_error(error)
                if "JIT build failed" in row[name + "_why"]:
                    broken[module] = (f"skipped: its JIT module failed to "
                                      f"build on {w.name}")
            else:
                row[name + "_why"] = one_line(error)
    if reference is None:
        reference = reference_attention(ctx)
        row["reference"] = "a float64 reference computed score by score"
    if w.decode:
        timers[SAME_BYTES_COPY] = same_bytes_copy(w)
    if graphs:
        row["timing"] = "CUDA graph replays"
        row.update(time_alternately(timers, iters,
                                    timer=graph_or_eager(ctx.notes)))
    else:
        row.update(time_alternately(timers, iters))
    row["peer_errors"] = errors
    row["error_vs_peer"] = (None if ours_out is None
                            else relative_error(ours_out, reference))

    if w.ragged and w.docs is None:
        ctx.notes.insert(0, "attnc and FlashInfer take the requests through "
                         "index pointers (ragged); SDPA and Flex as a dense "
                         f"batch of {w.batch}")
    if w.docs is not None:
        ctx.notes.insert(0, f"documents of {', '.join(map(str, w.docs))} "
                         f"tokens (seeded); attnc and FlashInfer take them "
                         f"as a ragged batch, one causal request per "
                         f"document (attnc.attention has no segments "
                         f"argument)")
        try:
            fn, out = attnc_mask_mod_runner(ctx)
            fn()
            torch.cuda.synchronize()
            ms = time_ms(fn, iters)
            row["attnc_mask_mod"] = ms
            row["attnc_mask_mod_error"] = relative_error(out, reference)
            ctx.notes.append(f"attnc with the same mask as a mask_mod "
                             f"region over the dense sequence: {ms:.3f} ms "
                             f"(rel. error "
                             f"{row['attnc_mask_mod_error']:.1e})")
        except Exception as error:
            ctx.notes.append(f"attnc with a mask_mod region: failed "
                             f"({one_line(error)})")
    for name, (label, fn) in ctx.extras.items():
        try:
            row[name + "_ms"] = ms = time_ms(fn, iters)
            ctx.notes.append(f"{label}: {ms:.3f} ms")
        except Exception as error:
            ctx.notes.append(f"{label}: failed ({one_line(error)})")
    row["notes"] = ctx.notes
    return row


def flashinfer_modules(w):
    """The FlashInfer JIT modules a workload's FlashInfer peers plan."""
    fp = flashinfer_peer
    if w.decode:
        return [fp.decode_key(w.dim), fp.prefill_key("fa2", w.dim)]
    return [fp.prefill_key("fa2" if w.alibi else "fa3", w.dim, w.v_dim,
                           alibi=w.alibi, window=w.window is not None,
                           softcap=w.softcap)]


def load_flashinfer(args, selected):
    """(module or None, why not, notes). Builds every kernel the selected
    workloads need before anything is timed."""
    if args.no_flashinfer:
        return None, "--no-flashinfer", []
    try:
        fi = flashinfer_peer.load(args.flashinfer_sdist,
                                  args.flashinfer_prebuilt)
    except flashinfer_peer.Unavailable as why:
        print(f"FlashInfer: not used: {why}", flush=True)
        return None, str(why), []
    keys = sorted({key for w in selected for key in flashinfer_modules(w)})
    print(f"FlashInfer {flashinfer_peer.version(fi)}: {len(keys)} modules "
          f"to build or find (minutes each to build) ...", flush=True)
    try:
        seconds, built = flashinfer_peer.prebuild(fi, keys)
        print(f"FlashInfer: {built} modules built, {len(keys) - built} "
              f"prebuilt, in {seconds:.0f} s", flush=True)
        if args.flashinfer_export:
            size = flashinfer_peer.export_prebuilt(fi, keys,
                                                   args.flashinfer_export)
            print(f"FlashInfer: modules written to "
                  f"{args.flashinfer_export} ({size >> 20} MiB)", flush=True)
    except Exception as error:
        print(f"FlashInfer: the joint build failed "
              f"({flashinfer_peer.short_error(error)}); each wrapper "
              f"retries its own module", flush=True)
    notes = [
        f"FlashInfer {flashinfer_peer.version(fi)} (its sdist, kernels "
        f"JIT-built with nvcc, here or ahead into "
        f".peers/flashinfer-aot-*.tar.gz against the same torch and CUDA): "
        f"prefill rows through "
        f"BatchPrefillWithRaggedKVCacheWrapper, FA3 backend, NHD, the dense "
        f"batch as equal-length ragged requests (causal, window_left, "
        f"logits_soft_cap as the row says); decode rows through "
        f"BatchDecodeWithPagedKVCacheWrapper with use_tensor_cores False "
        f"(FI decode) and True (FI decode TC) over NHD pages of the row's "
        f"size (16 unless it says): the dense rows' K/V viewed as pages in "
        f"order (unshuffled, no copy), the paged rows the shuffled pages "
        f"attnc reads."]
    return fi, None, notes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--only", default="",
                        help="comma-separated workload names (P1,D4,...)")
    parser.add_argument("--no-flex", action="store_true")
    parser.add_argument("--flex-budget", type=float, default=300,
                        help="seconds after which FlexAttention is skipped")
    parser.add_argument("--no-flashinfer", action="store_true")
    parser.add_argument("--flashinfer-sdist", default=None,
                        help="FlashInfer's source tarball (default: "
                        ".peers/flashinfer*.tar.gz at the repo root)")
    parser.add_argument("--flashinfer-build-only", action="store_true",
                        help="JIT-build FlashInfer's kernels for the "
                        "selected workloads, then stop (a first run in two "
                        "commands)")
    parser.add_argument("--flashinfer-prebuilt", default=None,
                        help="an archive of built FlashInfer modules to use "
                        "instead of building them (default: "
                        ".peers/flashinfer-aot-*.tar.gz at the repo root)")
    parser.add_argument("--flashinfer-export", default=None,
                        help="write the built FlashInfer modules of the "
                        "selected workloads to this .tar.gz (for "
                        "--flashinfer-prebuilt on a later run)")
    parser.add_argument("--graphs", action="store_true",
                        help="time every implementation from CUDA graph "
                        "replays of its calls: the GPU's time without the "
                        "host's, which bounds short kernels called from "
                        "Python (decode steps)")
    parser.add_argument("--time-budget", type=float, default=None,
                        help="seconds after which no further workload is "
                        "started (the results of those done are written)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    began_all = time.time()

    # --only also sets the order the workloads run in (the table keeps
    # WORKLOADS' order), so the rows that matter most can go first.
    only = [n for n in args.only.split(",") if n]
    unknown = set(only) - {w.name for w in WORKLOADS}
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    by_name_w = {w.name: w for w in WORKLOADS}
    selected = ([by_name_w[n] for n in dict.fromkeys(only)] if only
                else list(WORKLOADS))

    fi, fi_why, fi_notes = load_flashinfer(args, selected)
    if args.flashinfer_build_only:
        return

    device = torch.cuda.get_device_name()
    copy_gbs = copy_ceiling_gbs()
    gemm_tflops = gemm_ceiling_tflops()
    print(f"device: {device}; copy ceiling {copy_gbs:.0f} GB/s; bf16 GEMM "
          f"ceiling {gemm_tflops:.0f} TFLOP/s", flush=True)

    rows = []
    broken = {}
    began = time.time()
    date = datetime.date.today().isoformat()
    command = "PYTHONPATH=python python3 benchmarks/bench.py " + " ".join(
        sys.argv[1:])
    meta = {"device": device, "date": date, "command": command,
            "iters": args.iters, "copy_gbs": copy_gbs,
            "gemm_tflops": gemm_tflops,
            "flashinfer": fi and flashinfer_peer.version(fi),
            "flashinfer_why": fi_why, "flashinfer_notes": fi_notes}
    skipped = []
    for w in selected:
        if (args.time_budget is not None and
                time.time() - began_all > args.time_budget):
            skipped.append(w.name)
            continue
        started = time.time()
        # FlexAttention compiles each mask and shape (tens of seconds);
        # past the time budget it is left out rather than the run cut off.
        with_flex = not args.no_flex and time.time() - began < args.flex_budget
        row = measure(w, args.iters, with_flex, fi, broken, args.graphs)
        best = best_peer(row)
        row["vs_best_peer"] = (best / row["attnc"]
                               if best and row["attnc"] else None)
        if row["attnc"] is None:
            row["attnc_rate"] = row["vs_ceiling"] = None
            row["unit"] = "GB/s" if w.decode else "TFLOP/s"
        elif w.decode:
            row["attnc_rate"] = w.kv_bytes() / row["attnc"] / 1e6  # GB/s
            row["vs_ceiling"] = row["attnc_rate"] / copy_gbs
            row["vs_same_bytes_copy"] = row[SAME_BYTES_COPY] / row["attnc"]
            row["unit"] = "GB/s"
        else:
            row["attnc_rate"] = w.flops() / row["attnc"] / 1e9  # TFLOP/s
            row["vs_ceiling"] = row["attnc_rate"] / gemm_tflops
            row["unit"] = "TFLOP/s"
        row["seconds"] = time.time() - started
        rows.append(row)
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
        # Written after every row: a run cut off still leaves its results.
        lines = write_results(args.out, ordered(rows), meta, skipped)
    if skipped:
        print(f"not run (past --time-budget {args.time_budget:.0f} s): "
              f"{', '.join(skipped)}", flush=True)
    rows = ordered(rows)
    lines = write_results(args.out, rows, meta, skipped)

    by_name = {r["name"]: r for r in rows}
    for bf16, fp8 in (("D1", "D1f8"), ("D2", "D2f8"), ("D4", "D4f8")):
        if (by_name.get(bf16, {}).get("attnc") and
                by_name.get(fp8, {}).get("attnc")):
            ratio = by_name[bf16]["attnc"] / by_name[fp8]["attnc"]
            print(f"{fp8} (fp8) runs {ratio:.2f}x as fast as {bf16} (bf16)")
    for paged in ("D4", "D8", "D9"):  # D1's shapes through pages
        if (by_name.get("D1", {}).get("attnc") and
                by_name.get(paged, {}).get("attnc")):
            ratio = by_name["D1"]["attnc"] / by_name[paged]["attnc"]
            print(f"{paged} (paged, {by_name[paged]['what']}) runs at "
                  f"{ratio:.2f} of D1 (contiguous)")
    if check_failures(rows):
        print(f"error check failed: {', '.join(check_failures(rows))}")
    print("\n".join(lines))


def ordered(rows):
    """Rows in WORKLOADS' order, whatever order they ran in."""
    rank = {w.name: i for i, w in enumerate(WORKLOADS)}
    return sorted(rows, key=lambda r: rank[r["name"]])


def write_results(out, rows, meta, skipped):
    """results.md, results.json and performance.svg under `out`; returns
    the Markdown lines."""
    lines = markdown(rows, meta)
    if skipped:
        lines += ["", f"Not run (past the run's time budget): "
                  f"{', '.join(skipped)}."]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"device": meta["device"], "date": meta["date"],
                   "command": meta["command"], "copy_gbs": meta["copy_gbs"],
                   "gemm_tflops": meta["gemm_tflops"],
                   "flashinfer": meta["flashinfer"],
                   "flashinfer_why": meta["flashinfer_why"],
                   "peers": list(PEERS), "not_run": skipped,
                   "rows": rows}, f, indent=1)
    with open(os.path.join(out, "performance.svg"), "w") as f:
        f.write(bar_chart_svg(rows, meta["device"], meta["date"]))
    return lines


if __name__ == "__main__":
    main()
