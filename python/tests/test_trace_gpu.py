"""FlexAttention-style Python mods, traced, against a float64 reference
that evaluates the same functions on index tensors (as FlexAttention's
eager path does), with q_idx the query's position in the sequence: in
prefill, chunked prefill and decode."""

import math

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import attnc  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU on this machine"),
]

HEADS, KV_HEADS, DIM = 8, 2, 64
# (batch, q_len, kv_len): the queries are the last q_len of kv_len tokens.
SHAPES = {"prefill": (2, 200, 200), "chunked prefill": (2, 64, 300),
          "decode": (3, 1, 300)}


def reference(q, k, v, score_mod=None, mask_mod=None, causal=False):
    """Attention in float64, score_mod and mask_mod called once on
    broadcast index tensors; q_idx = qi + kv_len - q_len."""
    batch, q_len, heads, dim = q.shape
    kv_len, group = k.shape[1], heads // k.shape[2]
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(group, dim=1)
    vd = v.double().transpose(1, 2).repeat_interleave(group, dim=1)
    scores = qd @ kd.transpose(-1, -2) / math.sqrt(dim)
    index = dict(device=q.device)
    b = torch.arange(batch, **index).view(-1, 1, 1, 1)
    h = torch.arange(heads, **index).view(1, -1, 1, 1)
    q_idx = (torch.arange(q_len, **index) + kv_len - q_len).view(1, 1, -1, 1)
    kv_idx = torch.arange(kv_len, **index).view(1, 1, 1, -1)
    if score_mod is not None:
        scores = score_mod(scores, b, h, q_idx, kv_idx).double().expand(
            scores.shape)
    visible = torch.ones_like(scores, dtype=torch.bool)
    if mask_mod is not None:
        visible = visible & mask_mod(b, h, q_idx, kv_idx)
    if causal:
        visible = visible & (q_idx >= kv_idx)
    scores = scores.masked_fill(~visible, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ vd).transpose(1, 2)


def relative_error(ours, ref):
    ours = ours.double()
    assert not torch.isnan(ours).any(), "NaN in attnc's output"
    return ((ours - ref).norm() / ref.norm()).item()


def inputs(shape, seed):
    torch.manual_seed(seed)
    batch, q_len, kv_len = shape
    make = dict(device="cuda", dtype=torch.bfloat16)
    q = torch.randn(batch, q_len, HEADS, DIM, **make)
    k = torch.randn(batch, kv_len, KV_HEADS, DIM, **make)
    v = torch.randn(batch, kv_len, KV_HEADS, DIM, **make)
    return q, k, v


def check(shape, seed, causal=False, score_mod=None, mask_mod=None,
          plain_differs=True):
    q, k, v = inputs(shape, seed)
    out = attnc.attention(q, k, v, layout="bshd", causal=causal,
                          score_mod=score_mod,
                          mask_mod=mask_mod)
    ref = reference(q, k, v, score_mod, mask_mod, causal)
    assert relative_error(out, ref) < 1e-2
    if plain_differs:  # the mod mattered
        assert relative_error(out, reference(q, k, v, causal=causal)) > 2e-2


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_alibi_from_captured_slopes(shape):
    slopes = torch.tensor([2.0 ** (-0.5 * (i + 1)) for i in range(HEADS)],
                          device="cuda")

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    check(SHAPES[shape], 1, causal=True, score_mod=alibi)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_soft_cap(shape):
    def soft_cap(score, b, h, q_idx, kv_idx):
        return 2.0 * torch.tanh(score / 2.0)

    check(SHAPES[shape], 2, score_mod=soft_cap)


def document_mask(doc):
    def mask_mod(b, h, q_idx, kv_idx):
        return (doc[q_idx] == doc[kv_idx]) & (q_idx >= kv_idx)
    return mask_mod


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_document_mask_from_a_captured_doc_id_tensor(shape):
    kv_len = SHAPES[shape][2]
    for seed in (3, 4):  # a new batch's ids: the trace is reused
        torch.manual_seed(seed)
        starts = torch.zeros(kv_len, dtype=torch.int32, device="cuda")
        starts[torch.randint(1, kv_len, (6,), device="cuda")] = 1
        doc = torch.cumsum(starts, 0, dtype=torch.int32)
        check(SHAPES[shape], seed, mask_mod=document_mask(doc))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_sliding_window(shape):
    def window(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx <= 48)

    check(SHAPES[shape], 5, mask_mod=window)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_prefix_lm(shape):
    batch = SHAPES[shape][0]
    prefix = torch.tensor([40, 150, 7][:batch], dtype=torch.int32,
                          device="cuda")

    def prefix_lm(b, h, q_idx, kv_idx):
        return (kv_idx < prefix[b]) | (q_idx >= kv_idx)

    # Decode's one query sees every key either way.
    check(SHAPES[shape], 6, mask_mod=prefix_lm,
          plain_differs=shape != "decode")
