"""How a dense call's tensors become the kernel's operands, without a copy
wherever their strides allow.

A dense call names its tensors' logical layout: "bshd", [batch, seq_len,
heads, dim] (FlashAttention's), or "bhsd", [batch, heads, seq_len, dim]
(SDPA's and FlexAttention's). Shapes alone cannot tell them apart (32
heads of 1024 tokens read as 1024 heads of 32 tokens pass every check), so
the call must say which.

The kernels read a dense operand as tokens of heads: [batch, seq_len, heads,
dim] in memory. An operand whose memory is in that order, whatever its logical
layout (a transposed view included), is read as it is. When q, k and v are
[batch, heads, seq_len, dim] in memory instead, each (request, KV head) is a
request of its own: its query rows are contiguous where a KV head has one query
head or a request one query, and nothing the kernel computes may depend on the
request or head index then (ALiBi's slopes, a score_mod or mask_mod that reads
them, document ids). The cheaper of the two reads is taken; an operand in
neither order is copied into the chosen one."""

from dataclasses import dataclass

LAYOUTS = {
    "bshd": "[batch, seq_len, heads, dim], FlashAttention's",
    "bhsd": "[batch, heads, seq_len, dim], SDPA's and FlexAttention's",
}


def layout_help():
    return "; ".join(f"{name!r} {what}" for name, what in LAYOUTS.items())


def swap_middle(values):
    """(a, b, c, ...) as (a, c, b, ...): a shape or strides in one dense
    layout's order as in the other's (out's 4 dimensions, lse's 3)."""
    return (values[0], values[2], values[1]) + tuple(values[3:])


def row_major(shape, strides):
    """Whether sizes and strides are row-major contiguous (the stride of a
    size-1 dimension aside, as torch's is_contiguous)."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def in_order(x, layout, order):
    """Whether x, a 4-D tensor in logical `layout`, lies in memory in
    `order` ("bshd" or "bhsd") without gaps."""
    shape, strides = tuple(x.shape), tuple(x.stride())
    if layout != order:
        shape, strides = swap_middle(shape), swap_middle(strides)
    return row_major(shape, strides)


def as_order(x, layout, order):
    """x, a 4-D tensor in logical `layout`, as a tensor of logical `order`
    laid out in that order: a view where its memory already is, else a
    copy."""
    if layout != order:
        x = x.transpose(1, 2)
    return x.contiguous()


@dataclass(frozen=True)
class Route:
    """How a dense call runs: `fold` reads (request, KV head) pairs as
    requests of `group` query heads and one KV head; `copies` says which of
    q, k and v are copied first."""
    fold: bool
    copies: tuple

    def order(self):
        return "bhsd" if self.fold else "bshd"


def fold_allowed(heads, kv_heads, q_len, alibi, reads_indices):
    """Whether a call may read (request, KV head) pairs as requests: its
    heads group evenly, a pair's query rows are contiguous (one query per
    request, or one query head per KV head) and nothing reads the request
    or head index (ALiBi's slopes; `reads_indices`: a score_mod or mask_mod
    reading them, or document ids)."""
    return (kv_heads > 0 and heads % kv_heads == 0 and not alibi and
            not reads_indices and (q_len == 1 or heads == kv_heads))


def choose_route(q, k, v, layout, foldable):
    """The route copying the fewest bytes; reading tokens of heads, the
    kernels' own order, where both copy as much. `foldable`: whether the
    call may read (request, KV head) pairs as requests."""
    routes = [Route(False, tuple(not in_order(x, layout, "bshd")
                                 for x in (q, k, v)))]
    if foldable:
        routes.append(Route(True, tuple(not in_order(x, layout, "bhsd")
                                        for x in (q, k, v))))

    def copied_bytes(route):
        return sum(x.numel() * x.element_size()
                   for x, copy in zip((q, k, v), route.copies) if copy)
    return min(routes, key=copied_bytes)
