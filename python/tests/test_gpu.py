"""attnc on PyTorch tensors against torch's scaled_dot_product_attention,
on fresh random inputs, with outputs poisoned before each run."""

import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import attnc  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU on this machine"),
]

F = torch.nn.functional


def relative_error(ours, ref):
    ours, ref = ours.double(), ref.double()
    assert not torch.isnan(ours).any(), "NaN in attnc's output"
    return ((ours - ref).norm() / ref.norm()).item()


def sdpa(q, k, v, causal):
    """q [B, Lq, H, D], k/v [B, Lk, Hkv, D]; float64 reference. Causal is
    bottom-right aligned, as attnc's."""
    q, k, v = (x.double().transpose(1, 2) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    mask = None
    if causal:
        lq, lk = q.shape[2], k.shape[2]
        rows = torch.arange(lq, device=q.device)[:, None] + (lk - lq)
        mask = torch.arange(lk, device=q.device)[None, :] <= rows
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.transpose(1, 2)


def poisoned(like):
    return torch.full_like(like, float("nan"))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("batch, q_len, kv_len, heads, kv_heads, dim", [
    (2, 512, 512, 32, 8, 128),
    (1, 300, 700, 28, 4, 128),
    (3, 129, 129, 16, 16, 64),
])
def test_gqa_causal_prefill_matches_sdpa(dtype, batch, q_len, kv_len, heads,
                                         kv_heads, dim):
    torch.manual_seed(q_len + heads)
    q = torch.randn(batch, q_len, heads, dim, device="cuda", dtype=dtype)
    k = torch.randn(batch, kv_len, kv_heads, dim, device="cuda", dtype=dtype)
    v = torch.randn(batch, kv_len, kv_heads, dim, device="cuda", dtype=dtype)
    out = attnc.attention(q, k, v, layout="bshd", causal=True,
                          out=poisoned(q))
    assert relative_error(out, sdpa(q, k, v, causal=True)) < 1e-2


def rising_scores(batch, q_len, kv_len, heads, kv_heads, dim, rates, dtype):
    """q, k, v whose scores rise along the keys at `rates[kv_head]` natural
    logits per key (plus noise), so that each row's maximum keeps rising
    while the kernel goes through its tiles: by less than the kernel's lazy
    rescale threshold per tile at the slow rates, by more at the fast ones.
    """
    u = torch.nn.functional.normalize(torch.randn(dim, device="cuda"), dim=0)
    q = 0.3 * torch.randn(batch, q_len, heads, dim, device="cuda")
    q += math.sqrt(dim) * u
    keys = torch.arange(kv_len, device="cuda", dtype=torch.float32)
    rate = torch.tensor(rates, device="cuda")
    k = 0.3 * torch.randn(batch, kv_len, kv_heads, dim, device="cuda")
    k += (keys[:, None] * rate[None, :])[None, :, :, None] * u
    v = torch.randn(batch, kv_len, kv_heads, dim, device="cuda")
    return q.to(dtype), k.to(dtype), v.to(dtype)


@pytest.mark.parametrize("causal", [False, True])
def test_scores_rising_along_the_keys_match_sdpa(causal):
    """The softmax keeps a row's exp2 reference until its maximum rises far
    past it: rows whose maxima rise slowly, by jumps, and fast, with the LSE
    (which carries the reference) checked too."""
    torch.manual_seed(11)
    q, k, v = rising_scores(2, 300, 1100, 8, 4, 128,
                            [0.002, 0.02, 0.05, 0.4], torch.bfloat16)
    out, lse = attnc.attention(q, k, v, layout="bshd", causal=causal,
                               return_lse=True, out=poisoned(q))
    assert relative_error(out, sdpa(q, k, v, causal)) < 1e-2
    scores = torch.einsum("bqhd,bkhd->bhqk", q.double(),
                          k.double().repeat_interleave(2, dim=2))
    scores /= math.sqrt(q.shape[-1])
    if causal:
        rows = torch.arange(300, device="cuda")[:, None] + (1100 - 300)
        keys = torch.arange(1100, device="cuda")[None, :]
        scores = scores.masked_fill(keys > rows, float("-inf"))
    ref_lse = torch.logsumexp(scores, -1).transpose(1, 2)
    assert relative_error(lse, ref_lse) < 1e-3


@pytest.mark.parametrize("q_len, kv_len", [(777, 777), (64, 1000)])
def test_values_of_their_own_head_dim_match_sdpa(q_len, kv_len):
    # DeepSeek's MLA prefill in the non-absorbed form: qk 192, v 128.
    torch.manual_seed(q_len)
    q = torch.randn(2, q_len, 16, 192, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, kv_len, 16, 192, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(2, kv_len, 16, 128, device="cuda", dtype=torch.bfloat16)
    out = attnc.attention(q, k, v, layout="bshd", causal=True,
                          out=poisoned(v[:, :q_len]))
    assert out.shape == (2, q_len, 16, 128)
    assert relative_error(out, sdpa(q, k, v, causal=True)) < 1e-2


def test_lse_and_merge_states_rebuild_full_attention():
    torch.manual_seed(7)
    q = torch.randn(2, 64, 8, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 1024, 8, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    o1, l1 = attnc.attention(q, k[:, :400].contiguous(),
                             v[:, :400].contiguous(), layout="bshd",
                             return_lse=True)
    o2, l2 = attnc.attention(q, k[:, 400:].contiguous(),
                             v[:, 400:].contiguous(), layout="bshd",
                             return_lse=True)
    merged, lse = attnc.merge_states([o1, o2], [l1, l2])
    assert relative_error(merged, sdpa(q, k, v, causal=False)) < 1e-2
    scores = torch.einsum("bqhd,bkhd->bqhk", q.double(), k.double())
    ref_lse = torch.logsumexp(scores / math.sqrt(128), dim=-1)
    assert relative_error(lse, ref_lse) < 1e-3


def test_ragged_prefill_matches_sdpa_per_request():
    torch.manual_seed(3)
    lens = [100, 257, 31]
    indptr = torch.tensor([0, 100, 357, 388], dtype=torch.int32,
                          device="cuda")
    q = torch.randn(388, 16, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(388, 4, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = attnc.attention(q, k, v, causal=True, q_indptr=indptr,
                          kv_indptr=indptr)
    start = 0
    for n in lens:
        s = slice(start, start + n)
        ref = sdpa(q[None, s], k[None, s], v[None, s], causal=True)[0]
        assert relative_error(out[s], ref) < 1e-2
        start += n


def test_ragged_prefill_reruns_and_replays_in_a_cuda_graph():
    # A persistent prefill's CTAs claim their items with counters that each
    # launch leaves at zero for the next: the same call again, on the plan
    # attention() kept for it, and graph replays of it must each write every
    # row. Requests of very different lengths, so that CTAs claim unevenly.
    torch.manual_seed(13)
    lens = [1100, 37, 513, 2, 700, 129]
    offsets = [0]
    for n in lens:
        offsets.append(offsets[-1] + n)
    indptr = torch.tensor(offsets, dtype=torch.int32, device="cuda")
    total = offsets[-1]
    q = torch.randn(total, 16, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(total, 4, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out = poisoned(q)

    def call():
        return attnc.attention(q, k, v, causal=True, q_indptr=indptr,
                               kv_indptr=indptr, max_q_len=max(lens),
                               max_kv_len=max(lens), out=out)

    call()
    first = out.clone()
    plans = len(attnc.functional._PLANS)
    out.fill_(float("nan"))
    call()
    assert len(attnc.functional._PLANS) == plans, "the plan was not reused"
    assert torch.equal(out, first)
    for b, n in enumerate(lens):
        s = slice(offsets[b], offsets[b] + n)
        ref = sdpa(q[None, s], k[None, s], v[None, s], causal=True)[0]
        assert relative_error(out[s], ref) < 1e-2, f"request {b}"

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()  # this stream's plan: made outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        call()
    for replay in range(3):
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, first), f"replay {replay}"


def test_ragged_prefill_with_narrower_values_matches_sdpa():
    # MLA's non-absorbed chunked prefill as engines run it: ragged
    # requests, qk 192 and v 128, the return LSE included.
    torch.manual_seed(5)
    lens = [70, 200]
    indptr = torch.tensor([0, 70, 270], dtype=torch.int32, device="cuda")
    q = torch.randn(270, 8, 192, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(270, 8, 192, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(270, 8, 128, device="cuda", dtype=torch.bfloat16)
    out, lse = attnc.attention(q, k, v, causal=True, q_indptr=indptr,
                               kv_indptr=indptr, return_lse=True,
                               out=poisoned(v))
    assert out.shape == (270, 8, 128) and lse.shape == (270, 8)
    start = 0
    for n in lens:
        s = slice(start, start + n)
        ref = sdpa(q[None, s], k[None, s], v[None, s], causal=True)[0]
        assert relative_error(out[s], ref) < 1e-2
        scores = torch.einsum("qhd,khd->hqk", q[s].double(),
                              k[s].double()) / math.sqrt(192)
        hidden = torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1)
        ref_lse = scores.masked_fill(hidden, float("-inf")).logsumexp(-1)
        assert relative_error(lse[s], ref_lse.transpose(0, 1)) < 1e-3
        start += n


def page_table(kv_lens, page_size, unused):
    """A shuffled CSR page table for requests of `kv_lens` keys, with
    `unused` pages in the cache besides: (pages, kv_indices, kv_indptr,
    kv_last_page_len), int32 on the host."""
    pages_per = [(n + page_size - 1) // page_size for n in kv_lens]
    total = sum(pages_per) + unused
    order = torch.randperm(total)[:sum(pages_per)].to(torch.int32)
    indptr = torch.tensor([0] + list(torch.tensor(pages_per).cumsum(0)),
                          dtype=torch.int32)
    last = torch.tensor([n - (p - 1) * page_size
                         for n, p in zip(kv_lens, pages_per)],
                        dtype=torch.int32)
    return total, order, indptr, last


@pytest.mark.parametrize("kv_layout", ["NHD", "HND"])
@pytest.mark.parametrize("page_size", [1, 16])
def test_paged_decode_matches_sdpa(kv_layout, page_size):
    torch.manual_seed(page_size)
    batch, heads, kv_heads, dim = 5, 32, 8, 128
    kv_lens = [1, 17, 300, 64, 1000]
    total, order, indptr, last = page_table(kv_lens, page_size, 7)
    shape = ((total, page_size, kv_heads, dim) if kv_layout == "NHD"
             else (total, kv_heads, page_size, dim))
    k_cache = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(batch, heads, dim, device="cuda", dtype=torch.bfloat16)

    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page_size,
                                   kv_layout=kv_layout)
    wrapper.plan(indptr.cuda(), order.cuda(), last.cuda())
    out = wrapper.run(q, k_cache, v_cache, out=poisoned(q))
    for b in range(batch):
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        k, v = k_cache[pages], v_cache[pages]
        if kv_layout == "HND":
            k, v = k.transpose(1, 2), v.transpose(1, 2)
        k = k.reshape(-1, kv_heads, dim)[:kv_lens[b]]
        v = v.reshape(-1, kv_heads, dim)[:kv_lens[b]]
        ref = sdpa(q[None, b:b + 1], k[None], v[None], causal=False)[0, 0]
        assert relative_error(out[b], ref) < 1e-2, f"request {b}"


def test_paged_run_is_captured_by_a_cuda_graph():
    torch.manual_seed(11)
    heads, kv_heads, dim, page_size, batch = 32, 8, 128, 16, 4
    pages = 64
    k_cache = torch.randn(pages * batch, page_size, kv_heads, dim,
                          device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    indices = torch.randperm(pages * batch, dtype=torch.int32).cuda()
    indptr = torch.arange(0, (batch + 1) * pages, pages, dtype=torch.int32)
    last = torch.full((batch,), page_size, dtype=torch.int32)
    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page_size)
    wrapper.plan(indptr, indices, last)
    q = torch.randn(batch, heads, dim, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(q)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        wrapper.run(q, k_cache, v_cache, out=out)  # warm up: load, resolve
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        wrapper.run(q, k_cache, v_cache, out=out)
    out.fill_(float("nan"))
    q.copy_(torch.randn_like(q))
    graph.replay()
    torch.cuda.synchronize()
    eager = wrapper.run(q, k_cache, v_cache)
    # Decode adds its warps' partial outputs with atomicAdd, in an order that
    # varies between runs: a replay may differ from the eager run in the last
    # bit of a few bf16 elements (seen: 9e-6 on an H200). A replay of a stale
    # q would be off by O(1).
    assert relative_error(out, eager) < 1e-3


def test_score_mod_with_a_captured_table():
    torch.manual_seed(5)
    heads, dim, length = 8, 64, 128
    q = torch.randn(1, length, heads, dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, length, heads, dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    bias = 2 * torch.randn(length, device="cuda", dtype=torch.float32)
    score_mod = """
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index,
           %q_len: index, %kv_len: index, %bias: memref<?xf32>):
        %x = memref.load %bias[%kvi] : memref<?xf32>
        %y = arith.addf %s, %x : f32
        attn.yield %y : f32"""
    out = attnc.attention(q, k, v, layout="bshd", score_mod=score_mod,
                          captures=[bias])
    # The bias is added after the scale, as SDPA adds a float mask.
    ref = F.scaled_dot_product_attention(
        q.double().transpose(1, 2), k.double().transpose(1, 2),
        v.double().transpose(1, 2), attn_mask=bias.double()[None, :])
    assert relative_error(out, ref.transpose(1, 2)) < 1e-2
    plain = sdpa(q, k, v, causal=False)
    assert relative_error(out, plain) > 5e-2  # the bias mattered


def fp8_cache(shape, dtype):
    """Random values spread over several binades, stored in an fp8 type."""
    x = torch.randn(shape, device="cuda") * 3
    return x.to(dtype)


@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("per_head", [False, True])
def test_fp8_decode_matches_sdpa_over_the_dequantized_cache(fp8, per_head):
    # The reference widens the same fp8 bytes exactly (to float64) and
    # applies the scales in double: attnc's only differences are its usual
    # 16-bit rounding of probabilities and f32 scales, so the bf16 bound
    # holds.
    torch.manual_seed(11)
    batch, kv_len, heads, kv_heads, dim = 3, 777, 32, 8, 128
    q = torch.randn(batch, 1, heads, dim, device="cuda", dtype=torch.bfloat16)
    k = fp8_cache((batch, kv_len, kv_heads, dim), fp8)
    v = fp8_cache((batch, kv_len, kv_heads, dim), fp8)
    count = kv_heads if per_head else 1
    k_scale = torch.rand(count, device="cuda") + 0.25
    v_scale = torch.rand(count, device="cuda") + 0.25
    out = attnc.attention(q, k, v, layout="bshd", k_scale=k_scale,
                          v_scale=v_scale, out=poisoned(q))
    shape = (kv_heads, 1) if per_head else (1,)
    ref = sdpa(q, k.double() * k_scale.double().reshape(shape),
               v.double() * v_scale.double().reshape(shape), causal=False)
    assert relative_error(out, ref) < 1e-2


def test_fp8_paged_decode_with_float_scales_matches_sdpa():
    torch.manual_seed(5)
    page_size, heads, kv_heads, dim = 16, 16, 2, 128
    kv_lens = [40, 513, 1]
    total, order, indptr, last = page_table(kv_lens, page_size, 3)
    shape = (total, page_size, kv_heads, dim)
    k_cache = fp8_cache(shape, torch.float8_e4m3fn)
    v_cache = fp8_cache(shape, torch.float8_e4m3fn)
    q = torch.randn(len(kv_lens), heads, dim, device="cuda",
                    dtype=torch.bfloat16)
    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page_size,
                                   kv_dtype=torch.float8_e4m3fn)
    wrapper.plan(indptr.cuda(), order.cuda(), last.cuda())
    out = wrapper.run(q, k_cache, v_cache, out=poisoned(q), k_scale=0.5,
                      v_scale=1.75)
    for b in range(len(kv_lens)):
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        k = k_cache[pages].reshape(-1, kv_heads, dim)[:kv_lens[b]]
        v = v_cache[pages].reshape(-1, kv_heads, dim)[:kv_lens[b]]
        ref = sdpa(q[None, b:b + 1], k[None].double() * 0.5,
                   v[None].double() * 1.75, causal=False)[0, 0]
        assert relative_error(out[b], ref) < 1e-2, f"request {b}"


def unwritten(cache, order, indptr, kv_lens, page_size, fill):
    """`cache` [pages, page_size, ...] with `fill` in every slot no request
    holds, as a cache from torch.empty may hold there (issue 50)."""
    written = torch.zeros(cache.shape[:2], dtype=torch.bool, device="cuda")
    for b, n in enumerate(kv_lens):
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        slots = torch.arange(len(pages) * page_size, device="cuda")
        written[pages] = (slots < n).view(-1, page_size)
    cache[~written] = fill
    return cache


@pytest.mark.parametrize("fill", [float("nan"), float("inf")])
def test_paged_steps_ignore_unwritten_slots(fill):
    """Slots past each request's last key hold NaN or +Inf (torch.empty's
    bytes): the decode and the prefill schedule (whose copy engine loads a
    request's last page whole) keep them out of every output."""
    torch.manual_seed(50)
    heads, kv_heads, dim, page_size = 32, 8, 128, 64
    q_lens = [1, 1, 40, 7]
    kv_lens = [q + extra for q, extra in zip(q_lens, [299, 0, 260, 122])]
    total, order, indptr, last = page_table(kv_lens, page_size, 3)
    k_cache = torch.randn(total, page_size, kv_heads, dim, device="cuda",
                          dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    for cache in (k_cache, v_cache):
        unwritten(cache, order, indptr, kv_lens, page_size, fill)
    qo = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)),
                      dtype=torch.int32)
    q = torch.randn(int(qo[-1]), heads, dim, device="cuda",
                    dtype=torch.bfloat16)
    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page_size,
                                   causal=True)
    wrapper.plan(indptr, order, last, qo_indptr=qo)
    out = wrapper.run(q, k_cache, v_cache, out=poisoned(q))
    for b, kv in enumerate(kv_lens):
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        k = k_cache[pages].reshape(-1, kv_heads, dim)[:kv]
        v = v_cache[pages].reshape(-1, kv_heads, dim)[:kv]
        rows = slice(int(qo[b]), int(qo[b + 1]))
        ref = sdpa(q[None, rows], k[None], v[None], causal=True)[0]
        assert relative_error(out[rows], ref) < 1e-2, f"request {b}"


@pytest.mark.parametrize("q_lens", [
    [1, 1, 1, 40, 7, 300],   # an engine's step: decodes, then prefill chunks
    [1, 1, 1, 1],            # decodes given with qo_indptr
    [5, 1, 1, 9],            # a one-token request after a longer one
])
def test_mixed_paged_steps_match_sdpa_per_request(q_lens):
    """Leading one-token requests take the decode schedule and the rest the
    prefill schedule, two launches writing one output and one LSE."""
    torch.manual_seed(len(q_lens) + sum(q_lens))
    heads, kv_heads, dim, page_size = 32, 8, 128, 16
    kv_lens = [q + extra for q, extra in zip(q_lens, [900, 17, 3000, 64, 7,
                                                      500])]
    total, order, indptr, last = page_table(kv_lens, page_size, 5)
    k_cache = torch.randn(total, page_size, kv_heads, dim, device="cuda",
                          dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    qo = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)),
                      dtype=torch.int32)
    q = torch.randn(int(qo[-1]), heads, dim, device="cuda",
                    dtype=torch.bfloat16)
    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page_size,
                                   causal=True, return_lse=True)
    wrapper.plan(indptr, order, last, qo_indptr=qo)
    lse = torch.full((q.shape[0], heads), float("nan"), device="cuda")
    out, lse = wrapper.run(q, k_cache, v_cache, out=poisoned(q), lse=lse)
    for b, (n, kv) in enumerate(zip(q_lens, kv_lens)):
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        k = k_cache[pages].reshape(-1, kv_heads, dim)[:kv]
        v = v_cache[pages].reshape(-1, kv_heads, dim)[:kv]
        rows = slice(int(qo[b]), int(qo[b + 1]))
        ref = sdpa(q[None, rows], k[None], v[None], causal=True)[0]
        assert relative_error(out[rows], ref) < 1e-2, f"request {b}"
        group = heads // kv_heads
        scores = torch.einsum("qhd,khd->qhk", q[rows].double(),
                              k.double().repeat_interleave(group, dim=1))
        scores = scores / math.sqrt(dim)
        causal = (torch.arange(kv, device="cuda")[None, :] <=
                  torch.arange(n, device="cuda")[:, None] + (kv - n))
        scores = scores.masked_fill(~causal[:, None, :], float("-inf"))
        ref_lse = torch.logsumexp(scores, dim=-1)
        assert relative_error(lse[rows], ref_lse) < 1e-3, f"request {b} lse"


def caches_in_form(form, k_cache, v_cache):
    """The run arguments after q of one cache in one of FlashInfer's forms,
    holding k_cache's and v_cache's values: "apart" (two tensors), "pair"
    ((k, v)), "interleaved" ([pages, 2, ...]) or "padded" (two tensors
    whose pages lie further apart than their rows)."""
    if form == "apart":
        return (k_cache, v_cache)
    if form == "pair":
        return ((k_cache, v_cache),)
    if form == "interleaved":
        return (torch.stack([k_cache, v_cache], dim=1),)
    pad = torch.full_like(k_cache[:, :1], float("nan"))
    return tuple(torch.cat([c, pad], dim=1)[:, :-1] for c in (k_cache,
                                                              v_cache))


@pytest.mark.parametrize("form", ["pair", "interleaved", "padded"])
@pytest.mark.parametrize("kv_layout", ["NHD", "HND"])
def test_flashinfer_cache_forms_match_separate_caches(form, kv_layout):
    """A mixed step (decodes, then prefill chunks: both schedules, the
    prefill's pages through tensor maps on sm_90a) over a cache in each
    form gives the separate caches' output, each page read where it
    lies; a second run takes the checked path."""
    torch.manual_seed(len(form))
    heads, kv_heads, dim, page_size = 32, 8, 128, 16
    q_lens = [1, 1, 40, 300]
    kv_lens = [700, 33, 1000, 300]
    total, order, indptr, last = page_table(kv_lens, page_size, 5)
    shape = ((total, page_size, kv_heads, dim) if kv_layout == "NHD"
             else (total, kv_heads, page_size, dim))
    k_cache = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    qo = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)),
                      dtype=torch.int32)
    q = torch.randn(int(qo[-1]), heads, dim, device="cuda",
                    dtype=torch.bfloat16)
    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page_size,
                                   kv_layout=kv_layout, causal=True)
    wrapper.plan(indptr, order, last, qo_indptr=qo)
    expected = wrapper.run(q, k_cache, v_cache, out=poisoned(q))
    caches = caches_in_form(form, k_cache, v_cache)
    for attempt in range(2):
        out = wrapper.run(q, *caches, out=poisoned(q))
        assert not torch.isnan(out).any(), attempt
        assert torch.equal(out, expected), attempt
