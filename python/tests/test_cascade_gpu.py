"""CascadeAttention on random prefix trees against float64 attention over
each request's whole page list, with outputs poisoned before each run."""

import math
import random

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import attnc  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU on this machine"),
]


def random_tree(rng, requests, depth, page_size, max_prefix_pages):
    """Shared prefixes of `depth` levels over `requests` requests: per
    level a list of nodes (first request, end request, tokens), nodes of a
    level covering contiguous requests, some requests under none."""
    levels = []
    spans = [(0, requests)]
    for _ in range(depth):
        nodes, next_spans = [], []
        for first, end in spans:
            r = first
            while r < end:
                size = rng.randint(1, end - r)
                if rng.random() < 0.75:
                    pages = rng.randint(1, max_prefix_pages)
                    tokens = (pages - 1) * page_size + rng.randint(
                        1, page_size)
                    nodes.append((r, r + size, tokens))
                    next_spans.append((r, r + size))
                r += size
        levels.append(nodes)
        spans = next_spans
    return levels


def build_case(rng, requests, depth, page_size, rows, own_max, kv_heads,
               dim, dtype, max_prefix_pages=6):
    """Caches, levels in FlashInfer's form and each request's token list."""
    tree = random_tree(rng, requests, depth, page_size, max_prefix_pages)
    pages_used = 0
    # Each request's key chunks in order: (pages, tokens of the last page).
    chunks = [[] for _ in range(requests)]
    levels = []
    for nodes in tree:
        qo, kv, indices, last = [0], [0], [], []
        covered = {}
        for first, end, tokens in nodes:
            for r in range(first, end):
                covered[r] = (first, end, tokens)
        r = 0
        while r < requests:
            if r in covered:
                first, end, tokens = covered[r]
                count = (tokens + page_size - 1) // page_size
                pages = list(range(pages_used, pages_used + count))
                pages_used += count
                fill = tokens - (count - 1) * page_size
                for member in range(first, end):
                    chunks[member].append((pages, fill))
                indices += pages
                kv.append(kv[-1] + count)
                last.append(fill)
                qo.append(qo[-1] + sum(rows[first:end]))
                r = end
            else:
                kv.append(kv[-1])
                last.append(0)
                qo.append(qo[-1] + rows[r])
                r += 1
        levels.append((qo, kv, indices, last))
    qo, kv, indices, last = [0], [0], [], []
    for r in range(requests):
        tokens = rows[r] + rng.randint(0, own_max)
        count = (tokens + page_size - 1) // page_size
        pages = list(range(pages_used, pages_used + count))
        pages_used += count
        fill = tokens - (count - 1) * page_size
        chunks[r].append((pages, fill))
        qo.append(qo[-1] + rows[r])
        kv.append(kv[-1] + count)
        indices += pages
        last.append(fill)
    levels.append((qo, kv, indices, last))
    # Pages in a shuffled order, some unused, so a wrong page shows.
    total = pages_used + 5
    perm = list(range(total))
    rng.shuffle(perm)
    levels = [tuple(torch.tensor(a if i != 2 else [perm[p] for p in a],
                                 dtype=torch.int32)
                    for i, a in enumerate(level)) for level in levels]
    chunks = [[([perm[p] for p in pages], fill) for pages, fill in c]
              for c in chunks]
    return total, levels, chunks


def request_keys(cache, chunks, page_size, layout):
    """A request's keys [tokens, kv_heads, dim] from its chunks."""
    parts = []
    for pages, fill in chunks:
        block = cache[torch.tensor(pages, device=cache.device).long()]
        if layout == "HND":
            block = block.transpose(1, 2)
        block = block.reshape(-1, *block.shape[2:])
        parts.append(block[:(len(pages) - 1) * page_size + fill])
    return torch.cat(parts)


def reference(q, k, v, causal, scale, softcap=None):
    """q [rows, H, D], k/v [keys, Hkv, D]: float64 out and lse."""
    group = q.shape[1] // k.shape[1]
    k = k.double().repeat_interleave(group, dim=1)
    v = v.double().repeat_interleave(group, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.double(), k) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if causal:
        lq, lk = q.shape[0], k.shape[0]
        rows = torch.arange(lq, device=q.device)[:, None] + (lk - lq)
        hidden = torch.arange(lk, device=q.device)[None, :] > rows
        s = s.masked_fill(hidden, float("-inf"))
    lse = s.logsumexp(-1)
    out = torch.einsum("hqk,khd->qhd", s.softmax(-1), v)
    return out, lse.transpose(0, 1)


def relative_error(ours, ref):
    ours, ref = ours.double(), ref.double()
    assert not torch.isnan(ours).any(), "NaN in attnc's output"
    return ((ours - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("page_size", [1, 16, 64])
@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("rows_per", [1, 3])
def test_cascade_matches_whole_page_lists(page_size, depth, rows_per):
    rng = random.Random(page_size * 100 + depth * 10 + rows_per)
    torch.manual_seed(rng.randint(0, 1 << 30))
    requests, heads, kv_heads, dim = 11, 16, 4, 128
    layout = "NHD" if page_size != 64 else "HND"
    rows = [rng.randint(1, rows_per) for _ in range(requests)]
    causal = rows_per > 1
    total, levels, chunks = build_case(
        rng, requests, depth, page_size, rows, 40, kv_heads, dim,
        torch.bfloat16, max_prefix_pages=max(2, 200 // page_size))
    shape = ((total, page_size, kv_heads, dim) if layout == "NHD"
             else (total, kv_heads, page_size, dim))
    k_cache = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    tokens = sum(rows)
    q = torch.randn(tokens, heads, dim, device="cuda", dtype=torch.bfloat16)
    wrapper = attnc.CascadeAttention(heads, kv_heads, dim, page_size,
                                     kv_layout=layout, causal=causal,
                                     return_lse=True)
    wrapper.plan(levels)
    out = torch.full_like(q, float("nan"))
    lse = torch.full((tokens, heads), float("nan"), device="cuda")
    for _ in range(2):  # a second layer reuses the plan
        wrapper.run(q, k_cache, v_cache, out=out, lse=lse)
    start = 0
    for r in range(requests):
        s = slice(start, start + rows[r])
        k = request_keys(k_cache, chunks[r], page_size, layout)
        v = request_keys(v_cache, chunks[r], page_size, layout)
        ref, ref_lse = reference(q[s], k, v, causal, 1 / math.sqrt(dim))
        assert relative_error(out[s], ref) < 1e-2, f"request {r}"
        assert relative_error(lse[s], ref_lse) < 1e-3, f"request {r} lse"
        start += rows[r]


def test_cascade_of_one_prefix_shared_by_all_decodes():
    """The issue's shape, small: every decode under one long prefix."""
    rng = random.Random(5)
    torch.manual_seed(5)
    requests, heads, kv_heads, dim, page_size = 64, 32, 8, 128, 16
    prefix, own = 2048, 40
    prefix_pages = prefix // page_size
    own_pages = (own + page_size - 1) // page_size
    total = prefix_pages + requests * own_pages
    perm = torch.randperm(total).to(torch.int32)
    shared = (torch.tensor([0, requests], dtype=torch.int32),
              torch.tensor([0, prefix_pages], dtype=torch.int32),
              perm[:prefix_pages].clone(),
              torch.tensor([page_size], dtype=torch.int32))
    own_indices = perm[prefix_pages:].clone()
    last_level = (torch.arange(requests + 1, dtype=torch.int32),
                  torch.arange(requests + 1, dtype=torch.int32) * own_pages,
                  own_indices,
                  torch.full((requests,), own - (own_pages - 1) * page_size,
                             dtype=torch.int32))
    k_cache = torch.randn(total, page_size, kv_heads, dim, device="cuda",
                          dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    q = torch.randn(requests, heads, dim, device="cuda", dtype=torch.bfloat16)
    wrapper = attnc.CascadeAttention(heads, kv_heads, dim, page_size,
                                     causal=True)
    wrapper.plan([shared, last_level])
    out = wrapper.run(q, k_cache, v_cache, out=torch.full_like(q, float("nan")))
    for r in rng.sample(range(requests), 6):
        pages = torch.cat([perm[:prefix_pages],
                           own_indices[r * own_pages:(r + 1) * own_pages]])
        k = k_cache[pages.long().cuda()].reshape(-1, kv_heads, dim)
        v = v_cache[pages.long().cuda()].reshape(-1, kv_heads, dim)
        k, v = k[:prefix + own], v[:prefix + own]
        ref, _ = reference(q[r:r + 1], k, v, True, 1 / math.sqrt(dim))
        assert relative_error(out[r:r + 1], ref) < 1e-2, f"request {r}"


def test_cascade_fp8_cache_with_softcap():
    rng = random.Random(9)
    torch.manual_seed(9)
    requests, heads, kv_heads, dim, page_size = 9, 16, 2, 128, 16
    rows = [1] * requests
    total, levels, chunks = build_case(rng, requests, 2, page_size, rows, 30,
                                       kv_heads, dim, torch.bfloat16)
    k_cache = torch.randn(total, page_size, kv_heads, dim, device="cuda")
    v_cache = torch.randn(total, page_size, kv_heads, dim, device="cuda")
    k8 = (k_cache / 0.5).to(torch.float8_e4m3fn)
    v8 = (v_cache / 0.25).to(torch.float8_e4m3fn)
    q = torch.randn(requests, heads, dim, device="cuda", dtype=torch.bfloat16)
    wrapper = attnc.CascadeAttention(heads, kv_heads, dim, page_size,
                                     kv_dtype="float8_e4m3fn", softcap=20.0,
                                     causal=True)
    wrapper.plan(levels)
    ks = torch.tensor([0.5], device="cuda")
    vs = torch.tensor([0.25], device="cuda")
    out = wrapper.run(q, k8, v8, out=torch.full_like(q, float("nan")),
                      k_scale=ks, v_scale=vs)
    for r in range(requests):
        k = request_keys(k8.float() * 0.5, chunks[r], page_size, "NHD")
        v = request_keys(v8.float() * 0.25, chunks[r], page_size, "NHD")
        ref, _ = reference(q[r:r + 1], k, v, True, 1 / math.sqrt(dim), 20.0)
        assert relative_error(out[r:r + 1], ref) < 1e-2, f"request {r}"


def test_cascade_run_is_captured_by_a_cuda_graph():
    rng = random.Random(3)
    torch.manual_seed(3)
    requests, heads, kv_heads, dim, page_size = 8, 8, 8, 64, 16
    rows = [1] * requests
    total, levels, chunks = build_case(rng, requests, 3, page_size, rows, 20,
                                       kv_heads, dim, torch.bfloat16)
    k_cache = torch.randn(total, page_size, kv_heads, dim, device="cuda",
                          dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    q = torch.randn(requests, heads, dim, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(q)
    lse = torch.empty(requests, heads, device="cuda")
    wrapper = attnc.CascadeAttention(heads, kv_heads, dim, page_size,
                                     causal=True)
    wrapper.plan(levels)
    wrapper.run(q, k_cache, v_cache, out=out, lse=lse)  # compile, warm up
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        wrapper.run(q, k_cache, v_cache, out=out, lse=lse)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    for r in range(requests):
        k = request_keys(k_cache, chunks[r], page_size, "NHD")
        v = request_keys(v_cache, chunks[r], page_size, "NHD")
        ref, _ = reference(q[r:r + 1], k, v, True, 1 / math.sqrt(dim))
        assert relative_error(out[r:r + 1], ref) < 1e-2, f"request {r}"


@pytest.mark.parametrize("page_size, rows_per", [(64, 1), (1, 3)])
def test_mla_cascade_matches_whole_page_lists(page_size, rows_per):
    """A latent cache (one 576-wide row a token: keys, and their first 512
    columns the values) under a tree of depth 2; q given as its nope and
    pe parts apart."""
    rng = random.Random(40 + page_size + rows_per)
    torch.manual_seed(rng.randint(0, 1 << 30))
    requests, heads, ckv, kpe = 9, 16, 512, 64
    rows = [rng.randint(1, rows_per) for _ in range(requests)]
    causal = rows_per > 1
    total, levels, chunks = build_case(
        rng, requests, 2, page_size, rows, 30, 1, ckv + kpe, torch.bfloat16,
        max_prefix_pages=max(2, 300 // page_size))
    cache = torch.randn(total, page_size, ckv + kpe, device="cuda",
                        dtype=torch.bfloat16)
    tokens = sum(rows)
    q_nope = torch.randn(tokens, heads, ckv, device="cuda",
                         dtype=torch.bfloat16)
    q_pe = torch.randn(tokens, heads, kpe, device="cuda",
                       dtype=torch.bfloat16)
    scale = 1 / math.sqrt(192)
    wrapper = attnc.CascadeMLAAttention(heads, ckv, kpe, page_size,
                                        causal=causal, sm_scale=scale,
                                        return_lse=True)
    wrapper.plan(levels)
    out = torch.full((tokens, heads, ckv), float("nan"), device="cuda",
                     dtype=torch.bfloat16)
    lse = torch.full((tokens, heads), float("nan"), device="cuda")
    wrapper.run(q_nope, q_pe, cache[..., :ckv], cache[..., ckv:], out=out,
                lse=lse)
    q = torch.cat([q_nope, q_pe], -1)
    start = 0
    for r in range(requests):
        s = slice(start, start + rows[r])
        keys = request_keys(cache[:, :, None, :], chunks[r], page_size,
                            "NHD")
        ref, ref_lse = reference(q[s], keys, keys[..., :ckv], causal, scale)
        assert relative_error(out[s], ref) < 1e-2, f"request {r}"
        assert relative_error(lse[s], ref_lse) < 1e-3, f"request {r} lse"
        start += rows[r]
