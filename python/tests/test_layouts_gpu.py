"""attnc.attention on tensors of either dense layout, whatever their
memory order: FlashAttention's [B, S, H, D] and SDPA's [B, H, S, D], each
contiguous, a transposed view of the other, or strided (a slice of a
wider tensor), against a float64 SDPA reference on fresh random inputs,
outputs poisoned. The second call of a shape takes the cached launch path:
every case runs twice on new values."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import attnc  # noqa: E402
from attnc import functional  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU on this machine"),
]

F = torch.nn.functional
BF16 = torch.bfloat16


def relative_error(ours, ref):
    ours, ref = ours.double(), ref.double()
    assert not torch.isnan(ours).any(), "NaN in attnc's output"
    return ((ours - ref).norm() / ref.norm()).item()


def reference(q, k, v, causal, window=None):
    """q [B, H, Sq, D], k/v [B, Hkv, Skv, D] in float64: out [B, H, Sq, Dv]
    and lse [B, H, Sq]; causal bottom-right aligned, as attnc's."""
    q, k, v = q.double(), k.double(), v.double()
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    lq, lk = q.shape[2], k.shape[2]
    rows = torch.arange(lq, device=q.device)[:, None] + (lk - lq)
    keys = torch.arange(lk, device=q.device)[None, :]
    visible = torch.ones(lq, lk, dtype=torch.bool, device=q.device)
    if causal:
        visible &= keys <= rows
    if window is not None:
        visible &= keys >= rows - window
    scores = scores.masked_fill(~visible, float("-inf"))
    return scores.softmax(-1) @ v, torch.logsumexp(scores, -1)


def tensor(batch, heads, seq, dim, layout, memory):
    """A random [B, H, S, D] tensor given in `layout`, lying in memory as
    `memory` says: "own" (contiguous in its layout), "other" (a transposed
    view of the other layout's contiguous tensor) or "strided" (every
    other element of a wider head dim: neither order)."""
    x = torch.randn(batch, heads, seq, dim, device="cuda", dtype=BF16)
    if memory == "strided":
        wide = torch.randn(batch, heads, seq, 2 * dim, device="cuda",
                           dtype=BF16)
        wide[..., :dim] = x
        x = wide[..., :dim]
        return x if layout == "bhsd" else x.transpose(1, 2)
    own_is_bhsd = layout == "bhsd"
    if (memory == "own") == own_is_bhsd:
        stored = x.contiguous()  # [B, H, S, D] in memory
    else:
        stored = x.transpose(1, 2).contiguous().transpose(1, 2)
    return stored if layout == "bhsd" else stored.transpose(1, 2)


def as_bhsd(x, layout):
    return x if layout == "bhsd" else x.transpose(1, 2)


SHAPES = [
    # batch, q_len, kv_len, heads, kv_heads, dim, causal
    (2, 300, 300, 8, 8, 64, True),      # MHA prefill: foldable
    (2, 200, 500, 8, 2, 128, True),     # GQA prefill: not foldable
    (3, 1, 777, 32, 8, 128, False),     # GQA decode: foldable
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("memory", ["own", "other", "strided"])
def test_any_layout_and_memory_order_matches_sdpa(shape, layout, memory):
    batch, q_len, kv_len, heads, kv_heads, dim, causal = shape
    torch.manual_seed(q_len + heads + len(memory))
    for attempt in range(2):  # the second call takes the cached path
        q = tensor(batch, heads, q_len, dim, layout, memory)
        k = tensor(batch, kv_heads, kv_len, dim, layout, memory)
        v = tensor(batch, kv_heads, kv_len, dim, layout, memory)
        out, lse = attnc.attention(q, k, v, layout=layout, causal=causal,
                                   return_lse=True)
        assert out.shape == q.shape
        ref, ref_lse = reference(as_bhsd(q, layout), as_bhsd(k, layout),
                                 as_bhsd(v, layout), causal)
        assert relative_error(as_bhsd(out, layout), ref) < 1e-2, attempt
        # lse is [B, S, H] beside [B, S, H, D] outputs, [B, H, S] beside
        # [B, H, S, D] ones.
        lse = lse if layout == "bhsd" else lse.transpose(1, 2)
        assert relative_error(lse, ref_lse) < 1e-3, attempt


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_out_in_either_memory_order_is_written(layout):
    torch.manual_seed(3)
    batch, heads, kv_heads, q_len, kv_len, dim = 2, 8, 8, 130, 260, 64
    q = tensor(batch, heads, q_len, dim, layout, "own")
    k = tensor(batch, kv_heads, kv_len, dim, layout, "other")
    v = tensor(batch, kv_heads, kv_len, dim, layout, "other")
    ref, _ = reference(as_bhsd(q, layout), as_bhsd(k, layout),
                       as_bhsd(v, layout), True, window=64)
    for memory in ("own", "other", "strided"):
        out = tensor(batch, heads, q_len, dim, layout, memory).fill_(
            float("nan"))
        result = attnc.attention(q, k, v, layout=layout, causal=True,
                                 window=64, out=out)
        assert result is out
        assert relative_error(as_bhsd(out, layout), ref) < 1e-2, memory


def test_sdpa_tensors_run_without_a_copy():
    # An SDPA user's [B, H, S, D] tensors (MHA prefill, GQA decode): each
    # (request, KV head) is read as a request, no operand copied.
    torch.manual_seed(5)
    # SDPA's causal is top-left aligned, attnc's bottom-right: they agree
    # where q and k are the same tokens (and for one query, which sees
    # every key).
    for q_len, kv_len, heads, kv_heads in ((512, 512, 16, 16),
                                           (1, 512, 32, 4)):
        q = torch.randn(2, heads, q_len, 128, device="cuda", dtype=BF16)
        k = torch.randn(2, kv_heads, kv_len, 128, device="cuda", dtype=BF16)
        v = torch.randn_like(k)
        out = attnc.attention(q, k, v, layout="bhsd", causal=True)
        call = next(reversed(functional._CALLS.values()))
        assert call.route.fold and not any(call.route.copies)
        ref, _ = reference(q, k, v, True)
        assert relative_error(out, ref) < 1e-2
        # The same tensors through SDPA itself, as its user calls it.
        sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=q_len > 1,
                                              enable_gqa=True)
        assert relative_error(out, sdpa) < 1e-2


def test_flex_layout_without_a_layout_is_refused():
    # SDPA's [B, H, S, D] tensors passed as FlashAttention users pass
    # theirs would be read with heads and tokens swapped: the call must say.
    q = torch.randn(1, 8, 64, 64, device="cuda", dtype=BF16)
    k = torch.randn(1, 2, 64, 64, device="cuda", dtype=BF16)
    with pytest.raises(ValueError, match="needs layout="):
        attnc.attention(q, k, k)


@pytest.mark.parametrize("reads_head", [False, True])
def test_mods_fold_unless_they_read_the_head(reads_head):
    # SDPA-layout decode under a sliding mask_mod: a mod that reads neither
    # the request's index nor the head's sees (request, KV head) pairs as
    # requests, q, k and v read where they lie; one that reads the head
    # keeps the real heads (then k and v are copied into tokens of heads).
    torch.manual_seed(6 + reads_head)
    batch, heads, kv_heads, kv_len, dim, window = 3, 32, 8, 700, 128, 200
    q = torch.randn(batch, heads, 1, dim, device="cuda", dtype=BF16)
    k = torch.randn(batch, kv_heads, kv_len, dim, device="cuda", dtype=BF16)
    v = torch.randn_like(k)

    def recent(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window

    def recent_but_head_zero(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx <= window) | (h == 0)

    mod = recent_but_head_zero if reads_head else recent
    attnc.attention(q, k, v, layout="bhsd", mask_mod=mod)  # compiled
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = attnc.attention(q, k, v, layout="bhsd", mask_mod=mod)
    # What the call allocated beyond its output: k's and v's copies, or
    # nothing where it folds.
    copied = torch.cuda.max_memory_allocated() - before - \
        out.numel() * out.element_size()
    kv_bytes = k.numel() * k.element_size()
    assert (copied >= 2 * kv_bytes) if reads_head else (copied < kv_bytes)
    ref, _ = reference(q, k, v, False, window=window)
    if reads_head:
        full, _ = reference(q, k, v, False)
        ref[:, 0] = full[:, 0]  # head 0 sees every key
    assert out.shape == q.shape
    assert relative_error(out, ref) < 1e-2
