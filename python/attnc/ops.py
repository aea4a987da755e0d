"""attnc's front ends as PyTorch operators, torch.ops.attnc.*, with fake
(meta) implementations, so that torch.compile traces through them with
no graph break and CUDA graphs capture them.

Registered with torch.library's Library (a schema, a CUDA kernel and a
fake) over the same Python front ends (ctypes over the C API), not as a
C++ extension, which would have to be built against each installed
torch; and not with torch.library.custom_op, whose wrappers cost 40-50
us a call more on the GPU machine (docs/perf-log, 2026-11-29).
attnc.attention, merge_states and the wrappers' run call them only while
torch.compile traces (their eager path is cheaper than any operator
dispatch), so a compiled model and an eager one run the same kernels.

    torch.ops.attnc.attention(q, k, v, layout, causal, window_left,
        window_right, sinks, softcap, scale, alibi, return_lse)
        -> (out, lse)                  # lse empty without return_lse
    torch.ops.attnc.merge_states(outs, lses) -> (out, lse)
    torch.ops.attnc.paged_run(q, k_cache, v_cache, wrapper) -> (out, lse)
    torch.ops.attnc.mla_run(q_nope, q_pe, ckv, kpe, wrapper) -> (out, lse)

`wrapper` names a planned PagedAttention or MLAAttention (an int given
at plan): a wrapper is planned outside the compiled region, as engines
plan once per step, and its run is what the graph calls.
"""

import torch

from . import functional
from ._compiled import wrapper_of as _wrapper
from ._layouts import choose_route, fold_allowed, swap_middle


def _window(left, right):
    """attention()'s window of the operator's two extents, (-1, -1) for
    none; any other negative extent is attention()'s to refuse."""
    return None if (left, right) == (-1, -1) else (left, right)


def _no_lse(q):
    return q.new_empty((0,), dtype=torch.float32)


_LIBRARY = torch.library.Library("attnc", "DEF")
_LIBRARY.define(
    "attention(Tensor q, Tensor k, Tensor v, str layout, bool causal, "
    "SymInt window_left, SymInt window_right, SymInt sinks, float softcap, "
    "float scale, bool alibi, bool return_lse) -> (Tensor, Tensor)")
_LIBRARY.define("merge_states(Tensor[] outs, Tensor[] lses) -> "
                "(Tensor, Tensor)")
_LIBRARY.define("paged_run(Tensor q, Tensor k_cache, Tensor v_cache, "
                "int wrapper) -> (Tensor, Tensor)")
_LIBRARY.define("mla_run(Tensor q_nope, Tensor q_pe, Tensor ckv, "
                "Tensor kpe, int wrapper) -> (Tensor, Tensor)")


def _kernel(name):
    """Registers fn as operator `name`'s CUDA kernel."""
    def register(fn):
        _LIBRARY.impl(name, fn, "CUDA")
        return fn
    return register


def _fake(name):
    def register(fn):
        torch.library.register_fake(f"attnc::{name}", fn, lib=_LIBRARY)
        return fn
    return register


@_kernel("attention")
def attention(q, k, v, layout, causal, window_left, window_right, sinks,
              softcap, scale, alibi, return_lse):
    result = functional.attention(
        q, k, v, layout=layout, causal=causal,
        window=_window(window_left, window_right), sinks=sinks,
        softcap=softcap or None, scale=scale or None, alibi=alibi,
        return_lse=return_lse)
    if return_lse:
        return result
    return result, _no_lse(q)


@_fake("attention")
def _(q, k, v, layout, causal, window_left, window_right, sinks, softcap,
      scale, alibi, return_lse):
    # The outputs in the memory order the eager call writes them in, which
    # the same route decides from the same strides.
    functional.require_layout(layout)
    shape = list(q.shape)
    shape[-1] = v.shape[-1]
    heads_dim = 2 if layout == "bshd" else 1
    seq_dim = 3 - heads_dim
    order = choose_route(q, k, v, layout, fold_allowed(
        q.shape[heads_dim], k.shape[heads_dim], q.shape[seq_dim], alibi,
        False)).order()
    swap = order != layout

    def empty(logical, dtype):
        if not swap:
            return q.new_empty(logical, dtype=dtype)
        return q.new_empty(swap_middle(logical), dtype=dtype).transpose(1, 2)
    out = empty(tuple(shape), q.dtype)
    if not return_lse:
        return out, _no_lse(q)
    return out, empty(tuple(shape[:3]), torch.float32)


@_kernel("merge_states")
def merge_states(outs, lses):
    return functional.merge_states(list(outs), list(lses))


@_fake("merge_states")
def _(outs, lses):
    return torch.empty_like(outs[0]), torch.empty_like(lses[0])


@_kernel("paged_run")
def paged_run(q, k_cache, v_cache, wrapper):
    result = _wrapper(wrapper).run(q, k_cache, v_cache)
    return result if isinstance(result, tuple) else (result, _no_lse(q))


@_fake("paged_run")
def _(q, k_cache, v_cache, wrapper):
    lse = (q.new_empty(q.shape[:2], dtype=torch.float32)
           if _wrapper(wrapper).return_lse else _no_lse(q))
    return torch.empty_like(q), lse


@_kernel("mla_run")
def mla_run(q_nope, q_pe, ckv, kpe, wrapper):
    result = _wrapper(wrapper).run(q_nope, q_pe, ckv, kpe)
    return result if isinstance(result, tuple) else (result,
                                                     _no_lse(q_nope))


@_fake("mla_run")
def _(q_nope, q_pe, ckv, kpe, wrapper):
    tokens, heads = q_nope.shape[0], q_nope.shape[1]
    lse = (q_nope.new_empty((tokens, heads), dtype=torch.float32)
           if _wrapper(wrapper).return_lse else _no_lse(q_nope))
    return q_nope.new_empty((tokens, heads, ckv.shape[-1])), lse
