"""How a dense call's tensors reach a kernel (python/attnc/_layouts.py):
which memory order each operand lies in, and the route taken, on
stand-ins whose strides say where their elements are; no torch, no GPU.
The GPU tests (test_layouts_gpu.py) run the same routes against SDPA."""

import pytest

from attnc._layouts import choose_route, fold_allowed, in_order
from fakes import FakeTensor

B, S, H, KVH, D = 2, 64, 8, 2, 32


def stored(shape, order_of_dims):
    """A stand-in of logical `shape` whose memory is row-major over its
    dimensions taken in `order_of_dims` (outermost first)."""
    strides = [0] * len(shape)
    step = 1
    for dim in reversed(order_of_dims):
        strides[dim] = step
        step *= shape[dim]
    return FakeTensor(shape, strides=strides)


def bshd(batch, seq, heads, memory):
    """[B, S, H, D] logically, in `memory` ("bshd" or "bhsd") order."""
    return stored((batch, seq, heads, D),
                  (0, 1, 2, 3) if memory == "bshd" else (0, 2, 1, 3))


def bhsd(batch, heads, seq, memory):
    """[B, H, S, D] logically, in `memory` order."""
    return stored((batch, heads, seq, D),
                  (0, 1, 2, 3) if memory == "bhsd" else (0, 2, 1, 3))


@pytest.mark.parametrize("layout, make", [("bshd", bshd), ("bhsd", bhsd)])
def test_each_tensor_lies_in_the_order_its_strides_say(layout, make):
    for memory in ("bshd", "bhsd"):
        x = make(B, S if layout == "bshd" else H, H if layout == "bshd"
                 else S, memory)
        assert in_order(x, layout, memory)
        assert not in_order(x, layout, "bhsd" if memory == "bshd"
                            else "bshd")
    gap = FakeTensor((B, S, H, D), contiguous=False)
    assert not in_order(gap, "bshd", "bshd")
    assert not in_order(gap, "bshd", "bhsd")


def test_one_query_lies_in_both_orders():
    # [B, 1, H, D] and [B, H, 1, D] share their memory.
    q = bshd(B, 1, H, "bshd")
    assert in_order(q, "bshd", "bshd") and in_order(q, "bshd", "bhsd")


@pytest.mark.parametrize("heads, kv_heads, q_len, alibi, reads, allowed", [
    (8, 8, 64, False, False, True),    # MHA: a pair's rows are one head's
    (8, 2, 1, False, False, True),     # decode: a pair's rows are its group
    (8, 2, 64, False, False, False),   # GQA prefill: rows interleave
    (8, 8, 64, True, False, False),    # ALiBi reads the head
    (8, 8, 64, False, True, False),    # a mod or document ids read it
    (8, 3, 1, False, False, False),    # heads that do not group
])
def test_folding_is_allowed_where_nothing_reads_the_indices(
        heads, kv_heads, q_len, alibi, reads, allowed):
    assert fold_allowed(heads, kv_heads, q_len, alibi, reads) is allowed


@pytest.mark.parametrize("memory, foldable, fold, copies", [
    # FlashAttention's tensors: read as they lie.
    (("bshd", "bshd", "bshd"), True, False, (False, False, False)),
    # SDPA's tensors of an MHA call: folded, nothing copied.
    (("bhsd", "bhsd", "bhsd"), True, True, (False, False, False)),
    # The same where folding is not allowed: all three copied.
    (("bhsd", "bhsd", "bhsd"), False, False, (True, True, True)),
    # transformers' prefill: q a transposed projection, k and v from the
    # cache; folding copies q alone, the cheaper.
    (("bshd", "bhsd", "bhsd"), True, True, (True, False, False)),
    (("bshd", "bhsd", "bhsd"), False, False, (False, True, True)),
])
def test_the_route_copies_the_fewest_bytes(memory, foldable, fold, copies):
    q, k, v = (bhsd(B, H, S, m) for m in memory)
    route = choose_route(q, k, v, "bhsd", foldable)
    assert (route.fold, route.copies) == (fold, copies)
    assert route.order() == ("bhsd" if fold else "bshd")


def test_ties_read_tokens_of_heads():
    # One query: both orders hold q, k and v as they lie; the kernels'
    # own order wins.
    q = bshd(B, 1, H, "bshd")
    k = v = bshd(B, S, KVH, "bshd")
    route = choose_route(q, k, v, "bshd", True)
    assert not route.fold and not any(route.copies)


def test_a_call_of_other_strides_or_options_is_another_call():
    # The cached launch path trusts what its key holds: strides and the
    # types of values a check would refuse (causal=1.0 equals True) too.
    from attnc.functional import _call_key
    q = bshd(B, S, H, "bshd")
    k = bshd(B, S, KVH, "bshd")
    key = _call_key(q, k, k, "bshd", True, None, 0, None, None, False,
                    False, None)
    assert key == _call_key(bshd(B, S, H, "bshd"), k, k, "bshd", True, None,
                            0, None, None, False, False, None)
    assert key != _call_key(bshd(B, S, H, "bhsd"), k, k, "bshd", True, None,
                            0, None, None, False, False, None)
    assert key != _call_key(q, k, k, "bshd", 1.0, None, 0, None, None, False,
                            False, None)
    assert key != _call_key(q, k, k, "bhsd", True, None, 0, None, None, False,
                            False, None)
