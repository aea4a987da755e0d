"""attnc.attention and attnc.merge_states on PyTorch tensors."""

from collections import OrderedDict

from ._tensors import ELEMENT_TYPES, check_tensor, current_stream, \
    dtype_name, require
from .kernel import Kernel, Variant

_KERNELS = {}
_PLANS = OrderedDict()
_MAX_PLANS = 64


def kernel_for(spec=None, mlir=None):
    """The compiled kernel of a spec (a dict of attnc_variant_spec fields)
    or of MLIR text, compiled once per process (and cached on disk)."""
    key = mlir if mlir is not None else tuple(sorted(spec.items()))
    kernel = _KERNELS.get(key)
    if kernel is None:
        variant = (Variant.from_mlir(mlir) if mlir is not None
                   else Variant.from_spec(**spec))
        kernel = Kernel(variant)
        _KERNELS[key] = kernel
    return kernel


def _plan(kernel, key, **batch):
    """Dense shapes plan once and reuse (split-KV scratch included)."""
    key = (id(kernel),) + key
    plan = _PLANS.get(key)
    if plan is None:
        plan = kernel.plan(**batch)
        _PLANS[key] = plan
        if len(_PLANS) > _MAX_PLANS:
            _PLANS.popitem(last=False)
    else:
        _PLANS.move_to_end(key)
    return plan


def modifier_fields(causal, window, sinks, softcap, scale, alibi,
                    return_lse):
    """The attnc_variant_spec fields of masks, score modifiers and the LSE
    result. window is None, an int (keys to the left) or (left, right)."""
    if window is None:
        left, right = -1, -1
    elif isinstance(window, int):
        left, right = window, 0
    else:
        left, right = window
    return dict(causal=int(bool(causal)), window_left=left,
                window_right=right, sinks=sinks, scale=float(scale or 0),
                softcap=float(softcap or 0), alibi=int(bool(alibi)),
                return_lse=int(bool(return_lse)))


def _host_ints(indptr):
    return [int(x) for x in indptr.tolist()]


def attention(q, k, v, causal=False, window=None, sinks=0, softcap=None,
              scale=None, alibi=False, score_mod=None, mask_mod=None,
              captures=(), return_lse=False, q_indptr=None, kv_indptr=None,
              max_q_len=None, max_kv_len=None, out=None):
    """Attention of q over (k, v), FlashAttention's conventions.

    Dense: q [batch, q_len, heads, dim], k and v [batch, kv_len, kv_heads,
    dim]. Ragged: q [tokens, heads, dim] and k, v [tokens, kv_heads, dim]
    with int32 index pointers q_indptr and kv_indptr [batch + 1]. Queries
    are bottom-right aligned when q_len < kv_len. heads must be a multiple
    of kv_heads (GQA / MQA). window is an int (keys to the left) or a
    (left, right) pair; sinks keeps the first keys visible. score_mod and
    mask_mod are MLIR region blocks, `^bb0(%score: f32, %b: index, %h:
    index, %qi: index, %kvi: index, %q_len: index, %kv_len: index,
    <captures>)` (mask_mod without %score, yielding i1), reading `captures`
    (int32 or float32 tensors); the query's position in the sequence is
    qi + kv_len - q_len (docs/regions.md). Returns out, or (out, lse) with
    lse [.., heads] in float32, natural log.
    """
    ragged = q_indptr is not None or kv_indptr is not None
    rank = 3 if ragged else 4
    check_tensor("q", q, rank, ELEMENT_TYPES)
    check_tensor("k", k, rank, ELEMENT_TYPES)
    check_tensor("v", v, rank, ELEMENT_TYPES)
    dtype = dtype_name(q)
    require(dtype_name(k) == dtype and dtype_name(v) == dtype,
            "q, k and v must have the same dtype", TypeError)
    heads, dim = q.shape[-2], q.shape[-1]
    kv_heads = k.shape[-2]
    require(tuple(k.shape) == tuple(v.shape),
            f"k {tuple(k.shape)} and v {tuple(v.shape)} must have one shape")
    require(k.shape[-1] == dim, f"k's head dim {k.shape[-1]} differs from "
            f"q's {dim}")
    require(heads % kv_heads == 0,
            f"q's {heads} heads must be a multiple of k's {kv_heads}")
    if ragged:
        require(q_indptr is not None and kv_indptr is not None,
                "ragged attention needs both q_indptr and kv_indptr")
        check_tensor("q_indptr", q_indptr, 1, ("int32",))
        check_tensor("kv_indptr", kv_indptr, 1, ("int32",))
        require(q_indptr.shape[0] == kv_indptr.shape[0] >= 2,
                "q_indptr and kv_indptr must both have batch + 1 entries")
        batch = q_indptr.shape[0] - 1
        if max_q_len is None or max_kv_len is None:
            qs, ks = _host_ints(q_indptr), _host_ints(kv_indptr)
            max_q_len = max(b - a for a, b in zip(qs, qs[1:]))
            max_kv_len = max(b - a for a, b in zip(ks, ks[1:]))
        q_len, kv_len, tokens = max_q_len, max_kv_len, q.shape[0]
    else:
        require(k.shape[0] == q.shape[0],
                f"q has batch {q.shape[0]}, k has {k.shape[0]}")
        batch, q_len, kv_len = q.shape[0], q.shape[1], k.shape[1]
        tokens = batch * q_len
    capture_types = []
    for i, c in enumerate(captures):
        check_tensor(f"captures[{i}]", c, None, ("int32", "float32"))
        element = "i32" if dtype_name(c) == "int32" else "f32"
        capture_types.append(
            "memref<" + "x".join(["?"] * len(c.shape)) + "x" + element + ">")
    # One query per request is decode: a kernel specialized for it splits
    # the keys instead of tiling queries.
    decode = not ragged and q_len == 1
    spec = dict(query_heads=heads, kv_heads=kv_heads, head_dim=dim,
                dtype=ELEMENT_TYPES[dtype], query_layout=1 if ragged else 0,
                queries_per_request=1 if decode else 0,
                kv_layout=1 if ragged else 0, score_mod=score_mod or "",
                mask_mod=mask_mod or "", capture_types=tuple(capture_types),
                **modifier_fields(causal, window, sinks, softcap, scale,
                                  alibi, return_lse))
    kernel = kernel_for(spec)

    import torch
    if out is None:
        out = torch.empty_like(q)
    check_tensor("out", out, rank, (dtype,))
    require(tuple(out.shape) == tuple(q.shape), "out must have q's shape")
    outputs = [out.data_ptr()]
    lse = None
    if return_lse:
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        outputs.append(lse.data_ptr())
    if ragged:
        plan = kernel.plan(batch, q_len, kv_len, tokens,
                           q_indptr=q_indptr.data_ptr(),
                           kv_indptr=kv_indptr.data_ptr())
    else:
        plan = _plan(kernel, (batch, q_len, kv_len), batch=batch,
                     max_query_len=q_len, max_kv_len=kv_len,
                     query_tokens=tokens)
    kernel.run(plan, [q.data_ptr(), k.data_ptr(), v.data_ptr()] +
               [c.data_ptr() for c in captures], outputs,
               current_stream(q), [list(c.shape) for c in captures])
    return (out, lse) if return_lse else out


def merge_states(outs, lses):
    """Merges attention states over disjoint key sets: outs[i] [.., heads,
    dim] (bf16 or f16), lses[i] [.., heads] float32 (natural log). Returns
    (out, lse); a state with lse -inf contributes nothing."""
    require(len(outs) == len(lses) >= 2, "merge_states needs two or more "
            "(out, lse) pairs")
    require(len(outs) <= 32, "merge_states merges at most 32 states")
    first = outs[0]
    check_tensor("outs[0]", first, None, ELEMENT_TYPES)
    heads, dim = first.shape[-2], first.shape[-1]
    rows = 1
    for size in first.shape[:-2]:
        rows *= size
    for i, (o, s) in enumerate(zip(outs, lses)):
        check_tensor(f"outs[{i}]", o, None, (dtype_name(first),))
        check_tensor(f"lses[{i}]", s, None, ("float32",))
        require(tuple(o.shape) == tuple(first.shape),
                f"outs[{i}] {tuple(o.shape)} differs from outs[0] "
                f"{tuple(first.shape)}")
        require(tuple(s.shape) == tuple(first.shape[:-1]),
                f"lses[{i}] must have shape {tuple(first.shape[:-1])}")
    element = "bf16" if dtype_name(first) == "bfloat16" else "f16"
    out_t = f"!attn.out<?x{heads}x{dim}x{element}>"
    lse_t = f"!attn.lse<?x{heads}>"
    n = len(outs)
    args = ", ".join(f"%o{i}: {out_t}, %l{i}: {lse_t}" for i in range(n))
    pairs = ", ".join(f"(%o{i}, %l{i})" for i in range(n))
    text = (f"func.func @merge_{n}({args}) -> ({out_t}, {lse_t}) {{\n"
            f"  %out, %lse = attn.merge_states {pairs}\n"
            f"      : {out_t}, {lse_t} -> {out_t}\n"
            f"  return %out, %lse : {out_t}, {lse_t}\n}}\n")
    kernel = kernel_for(mlir=text)
    import torch
    out = torch.empty_like(first)
    lse = torch.empty(first.shape[:-1], dtype=torch.float32,
                      device=first.device)
    plan = _plan(kernel, (rows,), batch=1, max_query_len=rows, max_kv_len=0,
                 query_tokens=rows)
    inputs = []
    for o, s in zip(outs, lses):
        inputs += [o.data_ptr(), s.data_ptr()]
    kernel.run(plan, inputs, [out.data_ptr(), lse.data_ptr()],
               current_stream(first))
    return out, lse
