"""attnc.MLAAttention on the GPU against a float64 absorbed-MLA reference:
decode and chunked prefill, 16 to 128 heads, queries given apart or as one
tensor, CUDA-graph capture, and the cache layouts it refuses."""

import math

import pytest

torch = pytest.importorskip("torch")
import attnc  # noqa: E402
from test_gpu import (page_table, poisoned, relative_error,  # noqa: E402
                      unwritten)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU on this machine"),
]

CKV, KPE, SCALE = 512, 64, 0.0721687824


def reference(q, rows, cache, pages, kv_len, causal):
    """Absorbed MLA of one request in float64: scores over whole latent
    rows, values their first CKV columns; (out, lse)."""
    kv = cache[pages].reshape(-1, CKV + KPE)[:kv_len].double()
    scores = torch.einsum("qhd,kd->qhk", q[rows].double(), kv) * SCALE
    if causal:
        n = scores.shape[0]
        visible = (torch.arange(kv_len, device="cuda")[None, :] <=
                   torch.arange(n, device="cuda")[:, None] + (kv_len - n))
        scores = scores.masked_fill(~visible[:, None, :], float("-inf"))
    out = torch.einsum("qhk,kd->qhd", scores.softmax(-1), kv[:, :CKV])
    return out, torch.logsumexp(scores, -1)


def expect_reference(out, lse, q, qo, cache, order, indptr, kv_lens,
                     causal):
    """Each request's output (bf16 tolerance) and LSE against reference()
    over `cache` (the values the kernel attends over)."""
    for b, kv in enumerate(kv_lens):
        rows = slice(int(qo[b]), int(qo[b + 1]))
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        ref, ref_lse = reference(q, rows, cache, pages, kv, causal)
        assert relative_error(out[rows], ref) < 1e-2, f"request {b}"
        assert relative_error(lse[rows], ref_lse) < 1e-3, f"request {b} lse"


def batch_of(q_lens, kv_lens, heads, page_size, seed):
    torch.manual_seed(seed)
    total, order, indptr, _ = page_table(kv_lens, page_size, 3)
    cache = torch.randn(total, page_size, CKV + KPE, device="cuda",
                        dtype=torch.bfloat16)
    qo = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)),
                      dtype=torch.int32)
    q = torch.randn(int(qo[-1]), heads, CKV + KPE, device="cuda",
                    dtype=torch.bfloat16)
    return cache, order, indptr, qo, q, torch.tensor(kv_lens,
                                                     dtype=torch.int32)


@pytest.mark.parametrize("heads, q_lens, causal, page_size", [
    (128, [1, 1, 1, 1], False, 64),
    (16, [1, 1, 1], False, 64),
    (32, [3, 1, 7], True, 64),
    # SGLang's one-slot pages, gathered row by row.
    (16, [1, 1, 1], False, 1),
])
def test_mla_matches_the_absorbed_reference(heads, q_lens, causal, page_size):
    kv_lens = [q + extra for q, extra in zip(q_lens, [900, 65, 2000, 1])]
    cache, order, indptr, qo, q, kv_len = batch_of(q_lens, kv_lens, heads,
                                                   page_size, heads)
    mla = attnc.MLAAttention(heads, CKV, KPE, page_size, causal=causal,
                             sm_scale=SCALE, return_lse=True)
    mla.plan(qo, indptr, order, kv_len)
    out = poisoned(q[..., :CKV])
    lse = torch.full(q.shape[:2], float("nan"), device="cuda")
    # q_nope and q_pe as two tensors: the wrapper gathers them.
    out, lse = mla.run(q[..., :CKV].clone(), q[..., CKV:].clone(),
                       cache[..., :CKV], cache[..., CKV:], out=out, lse=lse)
    expect_reference(out, lse, q, qo, cache, order, indptr, kv_lens, causal)


@pytest.mark.parametrize("fill", [float("nan"), float("inf")])
def test_mla_ignores_unwritten_slots(fill):
    """Slots past each request's last key hold NaN or +Inf (torch.empty's
    bytes): the copy engine loads a request's last page whole, and the
    kernel keeps them out of every output and LSE."""
    heads, page_size = 128, 64
    q_lens, kv_lens = [1, 1, 3], [300, 1, 150]
    cache, order, indptr, qo, q, kv_len = batch_of(q_lens, kv_lens, heads,
                                                   page_size, 50)
    unwritten(cache, order, indptr, kv_lens, page_size, fill)
    mla = attnc.MLAAttention(heads, CKV, KPE, page_size, causal=True,
                             sm_scale=SCALE, return_lse=True)
    mla.plan(qo, indptr, order, kv_len)
    out = poisoned(q[..., :CKV])
    lse = torch.full(q.shape[:2], float("nan"), device="cuda")
    out, lse = mla.run(q[..., :CKV], q[..., CKV:], cache[..., :CKV],
                       cache[..., CKV:], out=out, lse=lse)
    expect_reference(out, lse, q, qo, cache, order, indptr, kv_lens, True)


@pytest.mark.parametrize("heads", [16, 128])
def test_mla_scores_rising_along_the_keys_match_the_reference(heads):
    """Scores that rise along the keys at rates from below to far above the
    lazy rescale threshold per tile, different per head: both consumers
    rescale their output columns, or skip it, by the scorer's factors."""
    q_lens, kv_lens, page_size = [1, 1], [1500, 700], 16
    cache, order, indptr, qo, q, kv_len = batch_of(q_lens, kv_lens, heads,
                                                   page_size, 3)
    key_of_slot = torch.zeros(cache.shape[:2], device="cuda")
    for b, n in enumerate(kv_lens):
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        key_of_slot[pages] = torch.arange(
            len(pages) * page_size, device="cuda",
            dtype=torch.float32).reshape(-1, page_size)
    # The last rope column holds key / 16; a head's query weighs it so that
    # its score rises by 0.002 to 0.5 natural logits per key.
    cache[..., -1] = key_of_slot / 16
    rates = torch.logspace(math.log10(0.002), math.log10(0.5), heads,
                           device="cuda")
    q[..., -1] = (rates * 16 / SCALE).to(q.dtype)
    mla = attnc.MLAAttention(heads, CKV, KPE, page_size, sm_scale=SCALE,
                             return_lse=True)
    mla.plan(qo, indptr, order, kv_len)
    out = poisoned(q[..., :CKV])
    lse = torch.full(q.shape[:2], float("nan"), device="cuda")
    out, lse = mla.run(q[..., :CKV], q[..., CKV:], cache[..., :CKV],
                       cache[..., CKV:], out=out, lse=lse)
    expect_reference(out, lse, q, qo, cache, order, indptr, kv_lens, False)


def test_mla_run_is_captured_by_a_cuda_graph():
    heads, page_size = 64, 64
    kv_lens = [700, 130]
    cache, order, indptr, qo, q, kv_len = batch_of([1, 1], kv_lens, heads,
                                                   page_size, 5)
    mla = attnc.MLAAttention(heads, CKV, KPE, page_size, sm_scale=SCALE)
    mla.plan(qo, indptr, order, kv_len)
    out = poisoned(q[..., :CKV])
    args = (q[..., :CKV], q[..., CKV:], cache[..., :CKV], cache[..., CKV:])
    mla.run(*args, out=out)  # warm: compiled and loaded before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mla.run(*args, out=out)
    out.fill_(float("nan"))
    q.copy_(torch.randn_like(q))  # new queries, read by the replay
    graph.replay()
    torch.cuda.synchronize()
    for b, kv in enumerate(kv_lens):
        pages = order[indptr[b]:indptr[b + 1]].long().cuda()
        ref, _ = reference(q, slice(b, b + 1), cache, pages, kv, False)
        assert relative_error(out[b:b + 1], ref) < 1e-2


def test_mla_refuses_caches_it_cannot_read():
    heads, page_size = 16, 64
    cache, order, indptr, qo, q, kv_len = batch_of([1], [100], heads,
                                                   page_size, 9)
    mla = attnc.MLAAttention(heads, CKV, KPE, page_size, sm_scale=SCALE)
    mla.plan(qo, indptr, order, kv_len)
    with pytest.raises(ValueError, match="of one contiguous"):
        mla.run(q[..., :CKV], q[..., CKV:], cache[..., :CKV].clone(),
                cache[..., CKV:].clone())
    # A scale dequantizes an fp8 cache only.
    with pytest.raises(ValueError, match="kv_scale dequantizes an fp8"):
        mla.run(q[..., :CKV], q[..., CKV:], cache[..., :CKV],
                cache[..., CKV:], kv_scale=torch.ones(1, device="cuda"))


@pytest.mark.parametrize("kv_dtype, heads, page_size", [
    ("float8_e4m3fn", 128, 64),
    ("float8_e4m3fn", 16, 1),
    ("float8_e5m2", 32, 64),
])
def test_mla_over_an_fp8_cache_matches_the_dequantized_reference(
        kv_dtype, heads, page_size):
    """The cache holds latent / kv_scale in fp8; the reference attends over
    fp8 value x kv_scale in float64, which is what the kernel computes
    (fp8 widens exactly to bf16), so the bf16 tolerance holds."""
    q_lens, kv_lens = [1, 1, 1], [901, 66, 1500]
    cache, order, indptr, qo, q, kv_len = batch_of(q_lens, kv_lens, heads,
                                                   page_size, heads + 1)
    scale = torch.tensor([0.375], device="cuda")
    cache8 = (cache.float() / scale).to(getattr(torch, kv_dtype))
    mla = attnc.MLAAttention(heads, CKV, KPE, page_size, sm_scale=SCALE,
                             return_lse=True, kv_dtype=kv_dtype)
    mla.plan(qo, indptr, order, kv_len)
    out = poisoned(q[..., :CKV])
    lse = torch.full(q.shape[:2], float("nan"), device="cuda")
    out, lse = mla.run(q[..., :CKV], q[..., CKV:], cache8[..., :CKV],
                       cache8[..., CKV:], out=out, lse=lse, kv_scale=scale)
    expect_reference(out, lse, q, qo, cache8.double() * 0.375, order, indptr,
                     kv_lens, False)

