"""attnc.attention and attnc.merge_states on PyTorch tensors."""

from collections import OrderedDict

from ._capi import LIMITS
from ._compiled import compiling, eagerly
from ._launch import DenseCall
from ._layouts import LAYOUTS, choose_route, fold_allowed, in_order, \
    layout_help, swap_middle
from ._regions import reads_argument
from ._tensors import ELEMENT_TYPES, FP8_TYPES, IR_NAMES, KV_TYPES, \
    check_tensor, current_stream, dtype_name, require
from ._values import INT32, as_float32, as_flag, as_int, as_sequence, \
    window_extents
from . import trace
from .kernel import Kernel, Variant
from .trace.captures import memref_type

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


def _cached(cache, key, make, most):
    """cache[key], made by make() on a miss; the least recently used entry
    goes once the cache holds more than `most`."""
    value = cache.get(key)
    if value is None:
        value = cache[key] = make()
        if len(cache) > most:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return value


def cached_plan(kernel, stream, key, **batch):
    """A plan per kernel, stream and batch (shapes, and a ragged batch's
    index pointers, which the plan holds), made once and reused. A plan
    serves one launch at a time (its split-KV scratch and arrival
    counters, a persistent prefill's item-claim counters), so each stream
    has its own; a new plan allocates and synchronizes."""
    return _cached(_PLANS, (id(kernel), stream) + key,
                   lambda: kernel.plan(**batch), _MAX_PLANS)


def modifier_fields(causal, window, sinks, softcap, scale, alibi,
                    return_lse):
    """The attnc_variant_spec fields of masks, score modifiers and the LSE
    result. window is None, an int (keys to the left) or (left, right).
    softcap None or 0 is none (FlashAttention's convention); scale None is
    1/sqrt(head_dim)."""
    window_extents(window)  # checked here, converted by from_spec
    if scale is not None:
        scale = as_float32("scale", scale)
        # The C spec spells the default scale 0: a 0 must not become it.
        require(scale != 0, "scale must be positive, got 0 (None: "
                "1/sqrt(head_dim))")
    return dict(causal=as_flag("causal", causal), window=window,
                sinks=as_int("sinks", sinks),
                scale=scale or 0.0,
                softcap=0.0 if softcap is None else as_float32("softcap",
                                                               softcap),
                alibi=as_flag("alibi", alibi),
                return_lse=as_flag("return_lse", return_lse))


# The tensors Python float scales became, by (value, device): a model's
# scales are a few fixed numbers, so a call passing one allocates nothing
# after its first. Bounded: a caller sweeping values evicts the oldest.
_FLOAT_SCALES = OrderedDict()
_MAX_FLOAT_SCALES = 256


def scale_tensor(name, scale, kv_heads, device):
    """An fp8 cache's dequantization scale as attnc reads it: a float32
    CUDA tensor of one element or one per KV head. A Python float becomes
    such a tensor once per value and device (the first call with a value
    allocates; pass tensors where that call is captured in a CUDA graph)."""
    if not hasattr(scale, "data_ptr"):
        value = as_float32(name, scale)
        import torch
        return _cached(_FLOAT_SCALES, (value, str(device)),
                       lambda: torch.full((1,), value, dtype=torch.float32,
                                          device=device), _MAX_FLOAT_SCALES)
    check_tensor(name, scale, (0, 1), ("float32",))
    if scale_count(scale) not in (1, kv_heads):
        raise ValueError(f"{name} must hold 1 (per tensor) or {kv_heads} "
                         f"(per KV head) values, got {scale_count(scale)}")
    return scale


def scale_count(scale):
    """Values in a scale tensor of rank 0 or 1."""
    return scale.shape[0] if len(scale.shape) else 1


def kv_scale_fields(kv_dtype, k_scale, v_scale, kv_heads, device):
    """The spec fields of a cache's element type and scales, and the scale
    tensors to pass after k and v. Scales dequantize fp8 caches only; both
    or neither (then both are 1). When one is per tensor and the other per
    head, the per-tensor one is repeated per head (a copy)."""
    if kv_dtype not in FP8_TYPES:
        require(k_scale is None and v_scale is None,
                f"k_scale and v_scale dequantize fp8 caches; the cache is "
                f"{kv_dtype}")
        return {}, []
    fields = dict(kv_dtype=kv_dtype)
    if k_scale is None and v_scale is None:
        return fields, []
    require(k_scale is not None and v_scale is not None,
            "give k_scale and v_scale together (None for both means 1)")
    scales = [scale_tensor("k_scale", k_scale, kv_heads, device),
              scale_tensor("v_scale", v_scale, kv_heads, device)]
    if scale_count(scales[0]) != scale_count(scales[1]):
        scales = [s.reshape(-1).expand(kv_heads).contiguous()
                  for s in scales]
    fields["kv_scales"] = "tensor" if scale_count(scales[0]) == 1 else "head"
    return fields, scales


def region_fields(score_mod, mask_mod, captures):
    """The spec fields of score_mod and mask_mod (each None, MLIR text or a
    Python function, traced once) and the tensors their kernel reads: the
    listed captures (int32 or float32 CUDA tensors), then the tensors the
    functions read that are not listed."""
    captures = list(as_sequence("captures", captures))
    capture_types = []
    for i, c in enumerate(captures):
        check_tensor(f"captures[{i}]", c, None, ("int32", "float32"))
        require(len(c.shape) >= 1, f"captures[{i}] must have rank 1 or more")
        capture_types.append(memref_type(len(c.shape),
                                         IR_NAMES[dtype_name(c)]))
    score_mod, mask_mod, traced = trace.lower(score_mod, mask_mod, captures,
                                              capture_types)
    for name, c, capture_type in traced:
        check_tensor(f"{name} (read by a traced mod)", c)
        captures.append(c)
        capture_types.append(capture_type)
    return dict(score_mod=score_mod, mask_mod=mask_mod,
                capture_types=tuple(capture_types)), captures


def segment_tensors(segments, q_shape, k_shape, q_indptr, kv_indptr):
    """The queries' and the keys' document ids of `segments`: None (no
    ids, []), one int32 tensor labelling the tokens of q and k alike
    (self-attention: q and k are the same tokens), or a (q_segments,
    kv_segments) pair. Ids are indexed like the tokens they label: [tokens]
    of a ragged batch, [batch, seq_len] of a dense one (q_shape and k_shape
    are [tokens, ..] or [batch, seq_len, ..])."""
    if segments is None:
        return []
    ragged = q_indptr is not None
    if isinstance(segments, (list, tuple)):
        if len(segments) != 2:
            raise ValueError(f"segments must be a tensor or a (q_segments, "
                             f"kv_segments) pair, got {len(segments)} values")
        pair = [("segments[0] (the queries' ids)", segments[0]),
                ("segments[1] (the keys' ids)", segments[1])]
    else:
        # One tensor labels both only where q's tokens are k's.
        same = (q_indptr is kv_indptr or
                host_ints(q_indptr) == host_ints(kv_indptr)
                ) if ragged else q_shape[1] == k_shape[1]
        if not same:
            raise ValueError(
                "one segments tensor labels q's and k's tokens alike, and q "
                "and k are not the same tokens (" +
                ("q_indptr and kv_indptr differ" if ragged else
                 f"q_len {q_shape[1]}, kv_len {k_shape[1]}") +
                "): give segments=(q_segments, kv_segments)")
        pair = [("segments", segments), ("segments", segments)]
    tensors = []
    for (name, ids), (x, x_shape) in zip(pair, (("q", q_shape),
                                                 ("k", k_shape))):
        shape = (x_shape[0],) if ragged else (x_shape[0], x_shape[1])
        check_tensor(name, ids, len(shape), ("int32",))
        if tuple(ids.shape) != shape:
            raise ValueError(
                f"{name} must be {list(shape)} (one id per token of "
                f"{x}), got {list(ids.shape)}")
        tensors.append(ids)
    return tensors


def host_ints(indptr):
    return [int(x) for x in indptr.tolist()]


def _check_indptr(name, values, rows_name, rows):
    """An index pointer's values, checked to stay within `rows` rows."""
    require(values[0] >= 0, f"{name} must start at 0 or more, got "
            f"{values[0]}")
    require(all(a <= b for a, b in zip(values, values[1:])),
            f"{name} must not decrease")
    require(values[-1] <= rows, f"{name} ends at {values[-1]}, past "
            f"{rows_name}'s {rows} rows")
    return values


_CALLS = OrderedDict()
_MAX_CALLS = 256



def _call_key(q, k, v, layout, causal, window, sinks, softcap, scale, alibi,
              return_lse, out):
    """What decides a dense call's kernel, route and checks: equal keys,
    equal calls. Types are in it where a value of another type is refused
    (causal=1.0, window=2.0) but compares equal."""
    return (layout, q.shape, q.stride(), q.dtype, q.device, k.shape,
            k.stride(), k.dtype, k.device, v.shape, v.stride(), v.dtype,
            v.device, causal, type(causal), window, type(window), sinks,
            type(sinks), softcap, scale, alibi, type(alibi), return_lse,
            type(return_lse), None if out is None else
            (out.shape, out.stride(), out.dtype, out.device))


def attention(q, k, v, causal=False, window=None, sinks=0, softcap=None,
              scale=None, alibi=False, score_mod=None, mask_mod=None,
              captures=(), segments=None, return_lse=False, q_indptr=None,
              kv_indptr=None, max_q_len=None, max_kv_len=None, out=None,
              k_scale=None, v_scale=None, layout=None):
    """Attention of q over (k, v), FlashAttention's conventions.

    Dense: `layout` says how the 4-D tensors are laid out, and must be
    given (shapes cannot tell): "bshd", q [batch, q_len, heads, dim] and k,
    v [batch, kv_len, kv_heads, dim] (FlashAttention's), or "bhsd", q
    [batch, heads, q_len, dim] and k, v [batch, kv_heads, kv_len, dim]
    (SDPA's and FlexAttention's). Any strides: tensors are read where they
    lie when their memory is in either order, and copied otherwise. out
    (and lse, [batch, q_len, heads] or [batch, heads, q_len]) come back in
    the call's layout. Ragged: q [tokens, heads, dim] and k, v [tokens,
    kv_heads, dim], contiguous, with int32 index pointers q_indptr and
    kv_indptr [batch + 1] (layout None or "thd"). v may have another head
    dim than q and k (DeepSeek's MLA prefill: 192 and 128); out and the
    output then have v's. Queries
    are bottom-right aligned when q_len < kv_len. heads must be a multiple
    of kv_heads (GQA / MQA). window is an int (keys to the left) or a
    (left, right) pair; sinks keeps the first keys visible. score_mod and
    mask_mod are FlexAttention's functions, `score_mod(score, b, h, q_idx,
    kv_idx)` and `mask_mod(b, h, q_idx, kv_idx)`, q_idx the query's
    position in the sequence (bottom-right aligned: causal is q_idx >=
    kv_idx in decode too), traced once; the int32 or float32 tensors they
    read are found in their closure, globals and defaults. Or MLIR region
    blocks, `^bb0(%score: f32, %b: index, %h: index, %qi: index, %kvi:
    index, %q_len: index, %kv_len: index, <captures>)` (mask_mod without
    %score, yielding i1), reading `captures` (int32 or float32 tensors);
    there the position is qi + kv_len - q_len (docs/regions.md).
    segments are document ids, int32: a key is visible only to the
    queries of its document (FlexAttention's document mask, in closed
    form: docs/regions.md). One tensor where q and k are the same tokens
    ([batch, seq_len] dense, [tokens] ragged), or a (q_segments,
    kv_segments) pair, each indexed like the tokens it labels. k and v
    may be an fp8 cache (float8_e4m3fn or float8_e5m2) holding k / k_scale
    and v / v_scale:
    the scales are floats or float32 tensors of 1 or kv_heads values (None:
    1). Returns out, or (out, lse) with
    lse in float32, natural log. Ragged index pointers are read
    on the host and checked against q and k unless max_q_len and max_kv_len
    are given: then they are trusted, and those must be the true maxima.
    A dense call's checks and kernel are resolved once per shape, strides,
    dtypes and options: later such calls only launch.
    """
    if compiling():
        return _traced_attention(q, k, v, causal, window, sinks, softcap,
                                 scale, alibi, return_lse, layout, dict(
                                     score_mod=score_mod, mask_mod=mask_mod,
                                     captures=captures, segments=segments,
                                     q_indptr=q_indptr, kv_indptr=kv_indptr,
                                     max_q_len=max_q_len,
                                     max_kv_len=max_kv_len, out=out,
                                     k_scale=k_scale, v_scale=v_scale))
    plain = (score_mod is None and mask_mod is None and segments is None
             and q_indptr is None and kv_indptr is None and k_scale is None
             and v_scale is None and type(captures) is tuple and
             not captures)
    key = None
    if plain:
        try:
            key = _call_key(q, k, v, layout, causal, window, sinks, softcap,
                            scale, alibi, return_lse, out)
            call = _CALLS.get(key)
        except (AttributeError, TypeError):  # not tensors; a list window
            key = call = None
        if call is not None:
            return call.launch(q, k, v, out)
    ragged = q_indptr is not None or kv_indptr is not None
    if ragged:
        require(layout in (None, "thd"), f"ragged tensors are [tokens, "
                f"heads, dim] (layout None or 'thd'), got layout={layout!r}")
        return _ragged_attention(
            q, k, v, causal, window, sinks, softcap, scale, alibi, score_mod,
            mask_mod, captures, segments, return_lse, q_indptr, kv_indptr,
            max_q_len, max_kv_len, out, k_scale, v_scale)
    require(max_q_len is None and max_kv_len is None,
            "max_q_len and max_kv_len are for ragged attention (with "
            "q_indptr and kv_indptr)")
    require_layout(layout)
    for name, x, types in (("q", q, ELEMENT_TYPES), ("k", k, KV_TYPES),
                           ("v", v, KV_TYPES)):
        check_tensor(name, x, 4, types, contiguous=False)
    # The shapes as [batch, seq_len, heads, dim], whatever the layout.
    qs, ks, vs = ((tuple(x.shape) if layout == "bshd" else
                   swap_middle(tuple(x.shape))) for x in (q, k, v))
    dtype, kv_dtype, heads, dim, kv_heads, v_dim = _check_kinds(
        q, k, v, qs, ks, vs)
    if ks[0] != qs[0]:
        raise ValueError(f"q has batch {qs[0]}, k has {ks[0]}")
    batch, q_len, kv_len = qs[0], qs[1], ks[1]
    regions, captures = region_fields(score_mod, mask_mod, captures)
    segment_ids = segment_tensors(segments, qs, ks, None, None)
    kv_fields, scales = kv_scale_fields(kv_dtype, k_scale, v_scale,
                                        kv_heads, q.device)
    # A mod may see folded requests only where it reads neither the
    # request's index nor the head's.
    reads_indices = bool(segment_ids) or any(
        reads_argument(kind, regions[kind], argument)
        for kind in ("score_mod", "mask_mod") for argument in ("batch",
                                                               "head"))
    route = choose_route(q, k, v, layout, fold_allowed(
        heads, kv_heads, q_len, alibi, reads_indices))
    order = route.order()
    if route.fold:
        kernel_heads, kernel_kv_heads = heads // kv_heads, 1
        kernel_batch = batch * kv_heads
    else:
        kernel_heads, kernel_kv_heads, kernel_batch = heads, kv_heads, batch
    # One query per request is decode: a kernel specialized for it splits
    # the keys instead of tiling queries.
    spec = dict(query_heads=kernel_heads, kv_heads=kernel_kv_heads,
                head_dim=dim, value_head_dim=0 if v_dim == dim else v_dim,
                dtype=dtype, query_layout="dense", **kv_fields,
                queries_per_request=1 if q_len == 1 else 0,
                kv_layout="dense", segments=int(bool(segment_ids)),
                **regions, **modifier_fields(causal, window, sinks, softcap,
                                             scale, alibi, return_lse))
    out_logical = qs[:3] + (v_dim,)
    out_direct = False
    if out is not None:
        check_tensor("out", out, 4, (dtype,), contiguous=False)
        want = out_logical if layout == "bshd" else swap_middle(out_logical)
        require(tuple(out.shape) == want,
                f"out must have q's shape with v's head dim, "
                f"{list(want)}, got {list(out.shape)}")
        out_direct = in_order(out, layout, order)
    kernel = kernel_for(spec)
    call = DenseCall(
        kernel, dict(batch=kernel_batch, max_query_len=q_len,
                     max_kv_len=kv_len, query_tokens=kernel_batch * q_len),
        layout, route,
        out_logical if order == "bshd" else swap_middle(out_logical),
        qs[:3] if order == "bshd" else swap_middle(qs[:3]),
        out_direct, bool(return_lse))
    buffers = segment_ids + scales + captures
    if key is not None:
        _CALLS[key] = call
        if len(_CALLS) > _MAX_CALLS:
            _CALLS.popitem(last=False)
    return call.launch(q, k, v, out, buffers,
                       [list(b.shape) for b in buffers])


def _traced_attention(q, k, v, causal, window, sinks, softcap, scale, alibi,
                      return_lse, layout, rest):
    """attention() as torch.compile traces it: torch.ops.attnc.attention,
    which takes a dense call's declarative options; any other argument is
    run eagerly, outside the graph (a graph break)."""
    if any(value is not None for name, value in rest.items()
           if name != "captures") or tuple(rest["captures"]):
        return _EAGER_ATTENTION(
            q, k, v, causal=causal, window=window, sinks=sinks,
            softcap=softcap, scale=scale, alibi=alibi, return_lse=return_lse,
            layout=layout, **rest)
    require_layout(layout)
    left, right = window_extents(window)
    import torch
    out, lse = torch.ops.attnc.attention(
        q, k, v, layout, bool(causal), left, right, int(sinks),
        float(softcap or 0.0), float(scale or 0.0), bool(alibi),
        bool(return_lse))
    return (out, lse) if return_lse else out


# attention() as a compiled graph calls it given what its operator lacks.
_EAGER_ATTENTION = eagerly(
    attention, "attnc.attention with score_mod, mask_mod, captures, "
    "segments, ragged tensors, fp8 scales or out= runs eagerly: "
    "torch.ops.attnc.attention takes dense tensors and declarative options")


def require_layout(layout):
    """A dense call's layout, which shapes cannot tell."""
    if layout not in LAYOUTS:
        raise ValueError(f"dense attention needs layout= (shapes cannot "
                         f"tell which dimension holds the heads): "
                         f"{layout_help()}; got {layout!r}")


def _check_kinds(q, k, v, qs, ks, vs):
    """dtype, kv_dtype, heads, dim, kv_heads and v_dim of q, k and v (shapes
    qs, ks, vs: [.., heads, dim]), checked to fit one another."""
    dtype = dtype_name(q)
    kv_dtype = dtype_name(k)
    if dtype_name(v) != kv_dtype or (kv_dtype != dtype and
                                     kv_dtype not in FP8_TYPES):
        raise TypeError(f"k and v must have q's dtype ({dtype}) or be one "
                        f"fp8 cache, got {kv_dtype} and {dtype_name(v)}")
    # Head counts and their group are the verifier's to check (a zero
    # included); only what the spec cannot say is checked here.
    heads, dim = qs[-2], qs[-1]
    kv_heads = ks[-2]
    if tuple(ks[:-1]) != tuple(vs[:-1]):
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must "
                         f"have one shape but for the head dim")
    if ks[-1] != dim:
        raise ValueError(f"k's head dim {ks[-1]} differs from q's {dim}")
    return dtype, kv_dtype, heads, dim, kv_heads, vs[-1]


def _ragged_attention(q, k, v, causal, window, sinks, softcap, scale, alibi,
                      score_mod, mask_mod, captures, segments, return_lse,
                      q_indptr, kv_indptr, max_q_len, max_kv_len, out,
                      k_scale, v_scale):
    """attention() of ragged [tokens, heads, dim] tensors."""
    check_tensor("q", q, 3, ELEMENT_TYPES)
    check_tensor("k", k, 3, KV_TYPES)
    check_tensor("v", v, 3, KV_TYPES)
    dtype, kv_dtype, heads, dim, kv_heads, v_dim = _check_kinds(
        q, k, v, tuple(q.shape), tuple(k.shape), tuple(v.shape))
    require(q_indptr is not None and kv_indptr is not None,
            "ragged attention needs both q_indptr and kv_indptr")
    check_tensor("q_indptr", q_indptr, 1, ("int32",))
    check_tensor("kv_indptr", kv_indptr, 1, ("int32",))
    require(q_indptr.shape[0] == kv_indptr.shape[0] >= 2,
            "q_indptr and kv_indptr must both have batch + 1 entries")
    batch = q_indptr.shape[0] - 1
    if max_q_len is None or max_kv_len is None:
        # Read anyway: check that the kernel stays inside q and k.
        qs = _check_indptr("q_indptr", host_ints(q_indptr), "q", q.shape[0])
        ks = _check_indptr("kv_indptr", host_ints(kv_indptr), "k",
                           k.shape[0])
        max_q_len = max(b - a for a, b in zip(qs, qs[1:]))
        max_kv_len = max(b - a for a, b in zip(ks, ks[1:]))
    q_len = as_int("max_q_len", max_q_len, (0, INT32[1]))
    kv_len = as_int("max_kv_len", max_kv_len, (0, INT32[1]))
    tokens = q.shape[0]
    regions, captures = region_fields(score_mod, mask_mod, captures)
    segment_ids = segment_tensors(segments, q.shape, k.shape, q_indptr,
                                  kv_indptr)
    kv_fields, scales = kv_scale_fields(kv_dtype, k_scale, v_scale,
                                        kv_heads, q.device)
    spec = dict(query_heads=heads, kv_heads=kv_heads, head_dim=dim,
                value_head_dim=0 if v_dim == dim else v_dim,
                dtype=dtype, query_layout="ragged", **kv_fields,
                queries_per_request=0, kv_layout="ragged",
                segments=int(bool(segment_ids)), **regions,
                **modifier_fields(causal, window, sinks, softcap, scale,
                                  alibi, return_lse))
    if out is not None:
        check_tensor("out", out, 3, (dtype,))
        require(tuple(out.shape) == tuple(q.shape[:-1]) + (v_dim,),
                "out must have q's shape with v's head dim")
    kernel = kernel_for(spec)

    import torch
    if out is None:
        out = q.new_empty(tuple(q.shape[:-1]) + (v_dim,))
    outputs = [out.data_ptr()]
    lse = None
    if return_lse:
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        outputs.append(lse.data_ptr())
    stream = current_stream(q)
    plan = cached_plan(kernel, stream,
                       (batch, q_len, kv_len, tokens, q_indptr.data_ptr(),
                        kv_indptr.data_ptr(), k.shape[0]),
                       batch=batch, max_query_len=q_len,
                       max_kv_len=kv_len, query_tokens=tokens,
                       q_indptr=q_indptr.data_ptr(),
                       kv_indptr=kv_indptr.data_ptr(),
                       kv_tokens=k.shape[0])
    # The kernel's buffers in its operands' order: segment ids, scales,
    # captures.
    buffers = segment_ids + scales + captures
    kernel.run(plan, [q.data_ptr(), k.data_ptr(), v.data_ptr()] +
               [b.data_ptr() for b in buffers], outputs, stream,
               [list(b.shape) for b in buffers])
    return (out, lse) if return_lse else out


def merge_kernel(states, dtype, heads, dim):
    """The kernel merging `states` (out, lse) pairs of rows of `heads` x
    `dim` elements of `dtype` ("bfloat16", "float16") into one: inputs the
    pairs in order, outputs the merged out and lse."""
    element = IR_NAMES[dtype]
    out_t = f"!attn.out<?x{heads}x{dim}x{element}>"
    lse_t = f"!attn.lse<?x{heads}>"
    args = ", ".join(f"%o{i}: {out_t}, %l{i}: {lse_t}" for i in range(states))
    pairs = ", ".join(f"(%o{i}, %l{i})" for i in range(states))
    text = (f"func.func @merge_{states}({args}) -> ({out_t}, {lse_t}) {{\n"
            f"  %out, %lse = attn.merge_states {pairs}\n"
            f"      : {out_t}, {lse_t} -> {out_t}\n"
            f"  return %out, %lse : {out_t}, {lse_t}\n}}\n")
    return kernel_for(mlir=text)


def merge_states(outs, lses):
    """Merges attention states over disjoint key sets: outs[i] [.., heads,
    dim] (bf16 or f16), lses[i] [.., heads] float32 (natural log). Returns
    (out, lse); a state with lse -inf contributes nothing."""
    if compiling():
        import torch
        return torch.ops.attnc.merge_states(list(outs), list(lses))
    outs = as_sequence("outs", outs)
    lses = as_sequence("lses", lses)
    require(len(outs) == len(lses) >= 2, "merge_states needs two or more "
            "(out, lse) pairs")
    most = LIMITS["max_merge_states"]
    require(len(outs) <= most, f"merge_states merges at most {most} states, "
            f"got {len(outs)}")
    first = outs[0]
    check_tensor("outs[0]", first, None, ELEMENT_TYPES)
    require(len(first.shape) >= 2, f"outs[0] must be [.., heads, dim], got "
            f"shape {tuple(first.shape)}")
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
    kernel = merge_kernel(len(outs), dtype_name(first), heads, dim)
    import torch
    out = torch.empty_like(first)
    lse = torch.empty(first.shape[:-1], dtype=torch.float32,
                      device=first.device)
    stream = current_stream(first)
    plan = cached_plan(kernel, stream, (rows,), batch=1,
                       max_query_len=rows, max_kv_len=0, query_tokens=rows)
    inputs = []
    for o, s in zip(outs, lses):
        inputs += [o.data_ptr(), s.data_ptr()]
    kernel.run(plan, inputs, [out.data_ptr(), lse.data_ptr()], stream)
    return out, lse
