"""Issue 45's reach on the GPU, against a float64 reference: document ids
as attention()'s `segments` (ragged and dense, prefill, chunked prefill
and decode), and PagedAttention with ALiBi and traced score_mod and
mask_mod reading captured tensors (decode, and steps mixing decodes with
prefill chunks), outputs poisoned before each run."""

import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import attnc  # noqa: E402
from test_gpu import page_table, poisoned  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU on this machine"),
]

HEADS, KV_HEADS, DIM = 16, 4, 128


def relative_error(ours, ref):
    ours = ours.double()
    assert not torch.isnan(ours).any(), "NaN in attnc's output"
    return ((ours - ref).norm() / ref.norm()).item()


def attend(q, k, v, causal=False, visible=None, score_mod=None, b=0,
           slopes=None):
    """One request in float64: q [n, heads, dim] the last n of the keys'
    positions, k and v [kv, kv_heads, dim]. visible(h, q_idx, kv_idx) and
    score_mod(score, b, h, q_idx, kv_idx) are called once on broadcast
    index tensors, after ALiBi's slope[h] * (kv_idx - q_idx) where slopes
    are given."""
    n, heads, dim = q.shape
    kv = k.shape[0]
    group = heads // k.shape[1]
    qd = q.double().transpose(0, 1)
    kd = k.double().transpose(0, 1).repeat_interleave(group, dim=0)
    vd = v.double().transpose(0, 1).repeat_interleave(group, dim=0)
    scores = qd @ kd.transpose(-1, -2) / math.sqrt(dim)
    h = torch.arange(heads, device=q.device).view(-1, 1, 1)
    q_idx = (torch.arange(n, device=q.device) + kv - n).view(1, -1, 1)
    kv_idx = torch.arange(kv, device=q.device).view(1, 1, -1)
    if slopes is not None:
        scores = scores + slopes.double().view(-1, 1, 1) * (kv_idx - q_idx)
    if score_mod is not None:
        scores = score_mod(scores, b, h, q_idx, kv_idx).double().expand(
            scores.shape)
    shown = torch.ones(scores.shape, dtype=torch.bool, device=q.device)
    if visible is not None:
        shown = shown & visible(h, q_idx, kv_idx)
    if causal:
        shown = shown & (q_idx >= kv_idx)
    scores = scores.masked_fill(~shown, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ vd).transpose(0, 1)


def document_ids(length, documents, generator=None):
    """int32 ids of `documents` runs of random lengths over `length`
    tokens (a packed training row), on the GPU."""
    cuts = torch.randperm(length - 1, generator=generator)[:documents - 1] + 1
    starts = torch.zeros(length, dtype=torch.int32)
    starts[cuts] = 1
    return starts.cumsum(0).to(torch.int32).cuda()


def same_document(q_ids, kv_ids):
    return lambda h, q_idx, kv_idx: q_ids[q_idx - q_idx.min()] == \
        kv_ids[kv_idx]


def bf16(*shape):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


# --- segments on attention() --------------------------------------------

@pytest.mark.parametrize("causal", [True, False])
def test_ragged_prefill_with_document_ids_matches_the_reference(causal):
    torch.manual_seed(45)
    lens = [300, 77, 520]
    offsets = [0]
    for n in lens:
        offsets.append(offsets[-1] + n)
    indptr = torch.tensor(offsets, dtype=torch.int32, device="cuda")
    q = bf16(offsets[-1], HEADS, DIM)
    k, v = bf16(offsets[-1], KV_HEADS, DIM), bf16(offsets[-1], KV_HEADS, DIM)
    ids = torch.cat([document_ids(n, 4) for n in lens])
    out = attnc.attention(q, k, v, causal=causal, q_indptr=indptr,
                          kv_indptr=indptr, segments=ids, out=poisoned(q))
    for b, n in enumerate(lens):
        rows = slice(offsets[b], offsets[b + 1])
        visible = same_document(ids[rows], ids[rows])
        ref = attend(q[rows], k[rows], v[rows], causal, visible)
        assert relative_error(out[rows], ref) < 1e-2, f"request {b}"
        plain = attend(q[rows], k[rows], v[rows], causal)
        assert relative_error(out[rows], plain) > 5e-2  # the ids mattered


def test_ragged_chunks_take_their_own_and_their_keys_ids():
    # Chunked prefill: each request's queries are its last tokens, with
    # ids of their own beside the keys' (the pair form).
    torch.manual_seed(46)
    q_lens, kv_lens = [40, 200], [333, 200]
    qo = torch.tensor([0, 40, 240], dtype=torch.int32, device="cuda")
    kvo = torch.tensor([0, 333, 533], dtype=torch.int32, device="cuda")
    q = bf16(240, HEADS, DIM)
    k, v = bf16(533, KV_HEADS, DIM), bf16(533, KV_HEADS, DIM)
    kv_ids = torch.cat([document_ids(n, 3) for n in kv_lens])
    q_ids = torch.cat([kv_ids[333 - 40:333], kv_ids[333:]]).contiguous()
    out = attnc.attention(q, k, v, causal=True, q_indptr=qo, kv_indptr=kvo,
                          segments=(q_ids, kv_ids), out=poisoned(q))
    for b in range(2):
        rows = slice(int(qo[b]), int(qo[b + 1]))
        keys = slice(int(kvo[b]), int(kvo[b + 1]))
        ref = attend(q[rows], k[keys], v[keys], True,
                     same_document(q_ids[rows], kv_ids[keys]))
        assert relative_error(out[rows], ref) < 1e-2, f"request {b}"


@pytest.mark.parametrize("batch, q_len, kv_len, causal", [
    (2, 333, 333, True),    # prefill: one tensor for both
    (2, 64, 500, True),     # chunked prefill: a pair
    (3, 1, 700, False),     # decode: a pair
])
def test_dense_document_ids_match_the_reference(batch, q_len, kv_len,
                                                causal):
    torch.manual_seed(q_len + kv_len)
    q = bf16(batch, q_len, HEADS, DIM)
    k, v = bf16(batch, kv_len, KV_HEADS, DIM), bf16(batch, kv_len, KV_HEADS,
                                                     DIM)
    kv_ids = torch.stack([document_ids(kv_len, 5) for _ in range(batch)])
    q_ids = kv_ids[:, kv_len - q_len:].contiguous()
    segments = kv_ids if q_len == kv_len else (q_ids, kv_ids)
    out = attnc.attention(q, k, v, layout="bshd", causal=causal,
                          segments=segments,
                          out=poisoned(q))
    for b in range(batch):
        ref = attend(q[b], k[b], v[b], causal,
                     same_document(q_ids[b], kv_ids[b]))
        assert relative_error(out[b], ref) < 1e-2, f"request {b}"


def test_segments_agree_with_the_traced_document_mask():
    # The declarative form and FlexAttention's document mask are one
    # attention: the same outputs to rounding.
    torch.manual_seed(47)
    q, k, v = bf16(2, 400, HEADS, DIM), bf16(2, 400, KV_HEADS, DIM), \
        bf16(2, 400, KV_HEADS, DIM)
    doc = torch.stack([document_ids(400, 6) for _ in range(2)])

    def same_doc(b, h, q_idx, kv_idx):
        return doc[b, q_idx] == doc[b, kv_idx]

    declarative = attnc.attention(q, k, v, layout="bshd", causal=True,
                                  segments=doc)
    traced = attnc.attention(q, k, v, layout="bshd", causal=True,
                             mask_mod=same_doc)
    assert relative_error(declarative, traced.double()) < 2e-3


# --- PagedAttention: ALiBi and traced mods over a paged cache ------------

def alibi_slopes(heads):
    """The standard geometric ALiBi slopes (device/attnc/device/math.h)."""
    pow2 = 1 << (heads.bit_length() - 1)
    slopes = [2.0 ** (-8.0 * (h + 1) / pow2) for h in range(min(heads, pow2))]
    slopes += [2.0 ** (-4.0 * (2 * (h - pow2) + 1) / pow2)
               for h in range(pow2, heads)]
    return torch.tensor(slopes, device="cuda")


PAGE, P_HEADS, P_KV_HEADS = 16, 32, 8


def paged_inputs(q_lens, kv_lens, seed):
    torch.manual_seed(seed)
    total, order, indptr, last = page_table(kv_lens, PAGE, 5)
    k_cache = bf16(total, PAGE, P_KV_HEADS, DIM)
    v_cache = bf16(total, PAGE, P_KV_HEADS, DIM)
    qo = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0)),
                      dtype=torch.int32)
    q = bf16(int(qo[-1]), P_HEADS, DIM)
    return q, k_cache, v_cache, (order, indptr, last, qo)


def request_keys(cache, table, b, kv_len):
    order, indptr = table[0], table[1]
    pages = order[indptr[b]:indptr[b + 1]].long().cuda()
    return cache[pages].reshape(-1, P_KV_HEADS, DIM)[:kv_len]


def check_paged(out, q, k_cache, v_cache, table, kv_lens, causal, **mods):
    qo = table[3]
    for b, kv in enumerate(kv_lens):
        rows = slice(int(qo[b]), int(qo[b + 1]))
        ref = attend(q[rows], request_keys(k_cache, table, b, kv),
                     request_keys(v_cache, table, b, kv), causal, b=b,
                     **{name: (mod(b) if name == "visible" else mod)
                        for name, mod in mods.items()})
        assert relative_error(out[rows], ref) < 1e-2, f"request {b}"


# An engine's step (decodes, then prefill chunks), and decodes alone.
STEPS = {"mixed": ([1, 1, 1, 40, 7, 300], [901, 18, 3001, 104, 14, 800]),
         "decode": ([1] * 5, [1, 17, 300, 64, 1000])}


@pytest.mark.parametrize("step", sorted(STEPS))
def test_paged_alibi_matches_the_reference(step):
    q_lens, kv_lens = STEPS[step]
    q, k_cache, v_cache, table = paged_inputs(q_lens, kv_lens, 17)
    order, indptr, last, qo = table
    wrapper = attnc.PagedAttention(P_HEADS, P_KV_HEADS, DIM, PAGE,
                                   causal=True, alibi=True)
    wrapper.plan(indptr, order, last,
                 qo_indptr=qo if step == "mixed" else None)
    out = wrapper.run(q, k_cache, v_cache, out=poisoned(q))
    check_paged(out, q, k_cache, v_cache, table, kv_lens, True,
                slopes=alibi_slopes(P_HEADS))


@pytest.mark.parametrize("step", sorted(STEPS))
@pytest.mark.parametrize("mask_reads_b", [True, False])
def test_paged_traced_mods_and_alibi_match_the_reference(step, mask_reads_b):
    """A learned bias by head and key, and a document mask by position:
    reading b ([batch, positions] ids) or not (ids shared by the batch).
    A mod that reads b runs a mixed step in one launch, so that b is the
    request's index in the whole batch."""
    q_lens, kv_lens = STEPS[step]
    q, k_cache, v_cache, table = paged_inputs(q_lens, kv_lens, 19)
    order, indptr, last, qo = table
    positions = max(kv_lens)
    bias = 0.5 * torch.randn(P_HEADS, positions, device="cuda")
    docs = torch.stack([document_ids(positions, 4)
                        for _ in range(len(kv_lens))])
    shared = docs[0].clone()

    def learned_bias(score, b, h, q_idx, kv_idx):
        return score + bias[h, kv_idx]

    if mask_reads_b:
        def documents(b, h, q_idx, kv_idx):
            return docs[b, q_idx] == docs[b, kv_idx]
    else:
        def documents(b, h, q_idx, kv_idx):
            return shared[q_idx] == shared[kv_idx]

    wrapper = attnc.PagedAttention(P_HEADS, P_KV_HEADS, DIM, PAGE,
                                   causal=True, alibi=True,
                                   score_mod=learned_bias,
                                   mask_mod=documents)
    assert wrapper.captures == (bias, docs if mask_reads_b else shared)
    wrapper.plan(indptr, order, last,
                 qo_indptr=qo if step == "mixed" else None)
    out = wrapper.run(q, k_cache, v_cache, out=poisoned(q))
    launches = 1 if step == "decode" or mask_reads_b else 2
    assert len(wrapper._parts) == launches

    def visible(b):
        ids = docs[b] if mask_reads_b else shared
        return lambda h, q_idx, kv_idx: ids[q_idx] == ids[kv_idx]

    check_paged(out, q, k_cache, v_cache, table, kv_lens, True,
                slopes=alibi_slopes(P_HEADS), score_mod=learned_bias,
                visible=visible)
    plain = attnc.PagedAttention(P_HEADS, P_KV_HEADS, DIM, PAGE,
                                 causal=True, alibi=True)
    plain.plan(indptr, order, last, qo_indptr=qo if step == "mixed" else None)
    assert relative_error(out, plain.run(q, k_cache, v_cache).double()) > \
        5e-2  # the mods mattered

    # A new step's ids, passed at run in the captured tensor's place.
    fresh = torch.stack([document_ids(positions, 7)
                         for _ in range(len(kv_lens))])
    if not mask_reads_b:
        fresh = fresh[0].clone()
    out = wrapper.run(q, k_cache, v_cache, out=poisoned(q),
                      captures=(bias, fresh))

    def fresh_visible(b):
        ids = fresh[b] if mask_reads_b else fresh
        return lambda h, q_idx, kv_idx: ids[q_idx] == ids[kv_idx]

    check_paged(out, q, k_cache, v_cache, table, kv_lens, True,
                slopes=alibi_slopes(P_HEADS), score_mod=learned_bias,
                visible=fresh_visible)


def test_paged_mods_replay_in_a_cuda_graph():
    q_lens, kv_lens = STEPS["decode"]
    q, k_cache, v_cache, table = paged_inputs(q_lens, kv_lens, 23)
    order, indptr, last, _ = table
    bias = torch.randn(P_HEADS, max(kv_lens), device="cuda")
    wrapper = attnc.PagedAttention(
        P_HEADS, P_KV_HEADS, DIM, PAGE,
        score_mod=lambda score, b, h, q_idx, kv_idx: score + bias[h, kv_idx])
    wrapper.plan(indptr, order, last)
    out = torch.empty_like(q)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        wrapper.run(q, k_cache, v_cache, out=out)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        wrapper.run(q, k_cache, v_cache, out=out)
    bias.copy_(torch.randn_like(bias))  # read by the replay, in place
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    check_paged(out, q, k_cache, v_cache, table, kv_lens, False,
                score_mod=lambda score, b, h, q_idx, kv_idx:
                score + bias[h, kv_idx])
