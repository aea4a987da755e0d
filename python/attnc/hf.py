"""attnc as a Hugging Face transformers attention implementation:

    import attnc.hf
    attnc.hf.register()
    model = AutoModelForCausalLM.from_config(config,
                                             attn_implementation="attnc")

register() adds "attnc" to transformers' AttentionInterface (and, where
transformers builds masks per implementation, to its AttentionMaskInterface
with SDPA's masks), so every attention layer calls attention_forward, which
runs attnc.attention on the layer's [batch, heads, seq, dim] tensors: GQA
as it is (no repeat_kv), the layer's scaling, soft-cap and sliding window.

The 4-D mask transformers gives is the truth: it covers padding, a static
cache's unfilled slots, sliding windows and bidirectional blocks. It is
converted once per forward pass (the layers share it) into a capture that
a traced mask_mod reads, one bit per key. A bool mask hides its False
entries, a float mask its -inf (or lowest) ones, and a score_mod adds a
float mask's other values to the scores. Where the mask
hides every key above the diagonal (a causal prefill), causal is passed
too, so that the kernel skips the tiles above it.

Forward only: attnc has no backward pass, so training (dropout, gradients
through attention) is refused, as is output_attentions."""

import weakref
from collections import OrderedDict

from ._tensors import dtype_name, require
from ._compiled import eagerly
from .functional import attention

NAME = "attnc"
# The models attnc.attention runs (its q, k and v types), named here to
# tell a float32 model what to do.
_DTYPES = ("bfloat16", "float16")

# Masks already converted, by (id, version, key length, window) of the
# mask transformers made: one forward pass calls every layer with the same
# mask object. An entry holds its mask weakly and goes when the mask does
# (before its id can be reused), so that a finished pass's masks, a
# prefill's B x q_len x kv_len included, are not kept alive here.
_MASKS = OrderedDict()
_MAX_MASKS = 8

# kwargs transformers passes that change what attention computes and that
# attnc does not do: refused rather than dropped.
_UNSUPPORTED = {
    "position_bias": "a learned position bias (T5-style)",
    "s_aux": "learned attention sinks (gpt-oss's s_aux)",
    "head_mask": "a head mask",
}


def register():
    """Registers attention_forward as attn_implementation="attnc" with
    transformers (once is enough; calling again changes nothing). Needs
    a transformers with AttentionInterface (4.51 and later have it)."""
    try:
        from transformers import AttentionInterface
    except ImportError as error:
        raise ImportError(
            f"attnc.hf.register needs a transformers with "
            f"AttentionInterface (4.51 and later have it): {error}"
            ) from None
    AttentionInterface.register(NAME, attention_forward)
    try:
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError:
        # Before 4.53 each model builds its own 4-D mask whatever the
        # implementation's name.
        return
    # transformers builds no mask at all for a name its mask interface
    # does not know (it assumes a backend such as vLLM's that needs none).
    # SDPA's masks are what attention_forward reads: a 4-D bool mask, or
    # None where SDPA would pass is_causal instead.
    mapping = AttentionMaskInterface._global_mapping
    require("sdpa" in mapping, "this transformers has no 'sdpa' entry in "
            "AttentionMaskInterface to build attnc's masks with", ImportError)
    AttentionMaskInterface.register(NAME, mapping["sdpa"])


def attention_forward(module, query, key, value, attention_mask,
                      scaling=None, dropout=0.0, sliding_window=None,
                      softcap=None, **kwargs):
    """transformers' attention interface: query [batch, heads, q_len,
    dim], key and value [batch, kv_heads, kv_len, dim] (bf16 or f16, on
    the GPU), attention_mask None or 4-D ([batch or 1, heads or 1, q_len,
    kv_len or more]; bool, True where visible, or float, added to the
    scores). Returns (out [batch, q_len, heads, dim], None).

    Without a mask, attention is causal as SDPA's is (the layer's
    is_causal, not for a single query), and a causal prefill into a longer
    static cache reads the first q_len keys, as SDPA's top-left causal
    does. sliding_window is transformers' (a query sees itself and the
    sliding_window - 1 keys before it)."""
    import torch

    if kwargs.get("output_attentions"):
        raise ValueError("attn_implementation='attnc' does not return "
                         "attention weights (output_attentions=True): use "
                         "attn_implementation='eager' for them")
    for name, what in _UNSUPPORTED.items():
        if kwargs.get(name) is not None:
            raise ValueError(f"attn_implementation='attnc' does not "
                             f"support {what} ({name}=...)")
    training = getattr(module, "training", False)
    if dropout and training:
        raise ValueError(f"attn_implementation='attnc' runs inference only "
                         f"and has no attention dropout (dropout={dropout} "
                         f"in training): call model.eval(), or train with "
                         f"another implementation")
    # In eval mode a forward with gradients enabled is a plain inference
    # call (HF's examples make it); a training step needs the backward.
    if training and torch.is_grad_enabled() and any(
            t.requires_grad for t in (query, key, value)):
        raise ValueError("attn_implementation='attnc' has no backward pass, "
                         "and this is a training forward (module.training, "
                         "inputs that require gradients): call "
                         "model.eval(), or train with another "
                         "implementation")
    require(dtype_name(query) in _DTYPES,
            f"attn_implementation='attnc' runs bfloat16 and float16 models, "
            f"got {dtype_name(query)} (load the model in bfloat16: "
            f"dtype=torch.bfloat16, torch_dtype= before transformers 5)",
            TypeError)
    require(query.dim() == 4 and key.dim() == 4 and value.dim() == 4,
            f"query, key and value must be [batch, heads, seq_len, dim], "
            f"got shapes {tuple(query.shape)}, {tuple(key.shape)}, "
            f"{tuple(value.shape)}")
    softcap = softcap or None  # transformers' 0 and None are both none
    q_len, kv_len = query.shape[2], key.shape[2]
    is_causal = kwargs.get("is_causal")
    if is_causal is None:
        is_causal = getattr(module, "is_causal", True)

    if attention_mask is None:
        # SDPA's rules: a single query sees every key; a longer prefill is
        # top-left causal, which over a static cache's unfilled tail means
        # the first q_len keys (attnc's causal is bottom-right aligned).
        causal = bool(is_causal) and q_len > 1
        if causal and kv_len > q_len:
            key, value = key[:, :, :q_len], value[:, :, :q_len]
        window = None
        if sliding_window is not None:
            window = (_left_window(sliding_window) if is_causal else
                      (sliding_window, sliding_window))
        out = attention(query, key, value, layout="bhsd", causal=causal,
                        window=window, softcap=softcap, scale=scaling)
    else:
        mods = _converted(attention_mask, query, kv_len, sliding_window)
        out = attention(query, key, value, layout="bhsd", causal=mods.causal,
                        window=mods.window, softcap=softcap, scale=scaling,
                        mask_mod=mods.mask_mod, score_mod=mods.score_mod)
    return out.transpose(1, 2).contiguous(), None


def _left_window(sliding_window):
    """attnc's window (keys to the left of the query) of transformers'
    sliding_window, which counts the query itself (sliding_window_overlay:
    kv_idx > q_idx - sliding_window)."""
    require(sliding_window >= 1, f"sliding_window must be 1 or more, got "
            f"{sliding_window}")
    return sliding_window - 1


class _Mods:
    """What a converted mask gives attnc.attention; `mask`, once cached,
    is a weak reference to the mask it was made from."""

    def __init__(self, mask_mod, score_mod, causal, window):
        self.mask = None
        self.mask_mod, self.score_mod = mask_mod, score_mod
        self.causal, self.window = causal, window


def _forget(mask_id):
    """Drops the entries of a mask that is being freed."""
    for key in [key for key in list(_MASKS) if key[0] == mask_id]:
        _MASKS.pop(key, None)


def _converted(mask, query, kv_len, sliding_window):
    """The mods of a transformers 4-D mask, made on the first layer that
    reads this mask (object and contents: an in-place change bumps the
    tensor's version) and reused by the others."""
    try:
        version = mask._version
    except RuntimeError:  # an inference-mode tensor has no version counter
        version = None
    cache_key = (id(mask), version, kv_len, sliding_window)
    found = _MASKS.get(cache_key)
    if found is not None and found.mask() is mask:
        _MASKS.move_to_end(cache_key)
        return found
    mods = _convert(mask, query, kv_len, sliding_window)
    mask_id = id(mask)
    mods.mask = weakref.ref(mask, lambda _: _forget(mask_id))
    _MASKS[cache_key] = mods
    if len(_MASKS) > _MAX_MASKS:
        _MASKS.popitem(last=False)
    return mods


# Run eagerly under torch.compile, behind a graph break: the mask cache
# keys on objects and their versions, which a graph would bake in as
# constants.
_converted = eagerly(_converted, "attnc.hf converts a transformers mask "
                     "eagerly: its cache keys on the mask object")


def _convert(mask, query, kv_len, sliding_window):
    """_Mods of a 4-D mask checked against query [batch, heads, q_len,
    dim] and kv_len keys: a mask_mod reading its bits, a score_mod adding
    a float mask's biases where it has any, and the causal and window it
    implies."""
    import torch

    batch, heads, q_len = query.shape[0], query.shape[1], query.shape[2]
    require(mask.dim() == 4, f"attention_mask must be 4-D [batch, heads, "
            f"q_len, kv_len] (transformers' prepared mask), got shape "
            f"{tuple(mask.shape)}")
    mask_batch, mask_heads, mask_rows, mask_keys = mask.shape
    require(mask_batch in (1, batch) and mask_heads in (1, heads) and
            mask_rows == q_len and mask_keys >= kv_len,
            f"attention_mask {tuple(mask.shape)} does not fit query "
            f"{tuple(query.shape)} and {kv_len} keys: it must be [{batch} "
            f"or 1, {heads} or 1, {q_len}, {kv_len} or more]")
    require(mask.device == query.device, f"attention_mask is on "
            f"{mask.device}, query on {query.device}")
    # transformers expands one mask over the batch (stride 0): convert it
    # once, not once per request.
    if mask_batch > 1 and mask.stride(0) == 0:
        mask, mask_batch = mask[:1], 1
    if mask_heads > 1 and mask.stride(1) == 0:
        mask, mask_heads = mask[:, :1], 1
    # Older transformers' SDPA read the first kv_len columns of a longer
    # mask (4.5x's models made such masks over a static cache).
    columns = mask[..., :kv_len]
    if mask.dtype == torch.bool:
        visible, bias = columns, None
    elif mask.is_floating_point():
        # transformers hides a key with -inf or the dtype's lowest value.
        visible = columns > torch.finfo(mask.dtype).min
        bias = None
        # Before 4.53 every model made float masks of 0 and the lowest
        # value, for any implementation: those need no score_mod (one
        # host sync per pass finds out).
        if bool((visible & (columns != 0)).any()):
            bias = columns.to(torch.float32).reshape(-1, kv_len).contiguous()
    else:
        raise TypeError(f"attention_mask must be bool (True where visible) "
                        f"or float (added to the scores), got "
                        f"{dtype_name(mask)}")
    rows = mask_batch * mask_heads * q_len
    bits = _pack_bits(visible.reshape(rows, kv_len))
    mask_mod = _mask_reader(bits, mask_batch > 1, mask_heads)
    score_mod = None if bias is None else _bias_adder(bias, mask_batch > 1,
                                                      mask_heads)
    causal, window = _declarative(visible, q_len, kv_len, sliding_window)
    return _Mods(mask_mod, score_mod, causal, window)


def _pack_bits(visible):
    """[rows, keys] bool as int32 [rows, ceil(keys / 32)]: key j is bit
    j % 32 of word j // 32 (a 32nd of an int32 mask's memory). Built from
    bytes, little-endian as the GPU reads words."""
    import torch

    rows, keys = visible.shape
    words = (keys + 31) // 32
    padded = torch.zeros(rows, words * 32, dtype=torch.bool,
                         device=visible.device)
    padded[:, :keys] = visible
    # Made on the device: a host tensor would be a copy per forward pass.
    weights = torch.arange(8, device=visible.device).exp2().to(torch.uint8)
    # Distinct powers of two sum to at most 255: no byte overflows.
    packed = (padded.view(rows, words * 4, 8) * weights).sum(
        -1, dtype=torch.uint8)
    return packed.view(torch.int32)


def _row(b, h, q_idx, batch_full, heads, q_len, kv_len):
    """The mask row of query q_idx among [batch or 1] x [heads or 1] x
    q_len rows: transformers' masks index the query's row in q, attnc's
    q_idx is its position (bottom-right aligned)."""
    row = q_idx - kv_len + q_len
    if batch_full or heads > 1:
        plane = (b * heads if heads > 1 else b) if batch_full else 0
        if heads > 1:
            plane = plane + h
        row = plane * q_len + row
    return row


def _mask_reader(bits, batch_full, heads):
    """A mask_mod reading `bits` (_pack_bits of the mask's rows, [batch
    or 1] x [heads or 1] x q_len of them). One code object whatever the
    tensor, so every forward pass reuses the trace and the kernel."""
    def visible(b, h, q_idx, kv_idx, *, q_len, kv_len):
        row = _row(b, h, q_idx, batch_full, heads, q_len, kv_len)
        word = bits[row, kv_idx >> 5]
        return ((word >> (kv_idx & 31)) & 1) != 0
    return visible


def _bias_adder(bias, batch_full, heads):
    """A score_mod adding a float mask ([rows, kv_len] float32), as SDPA
    adds a float attn_mask (after the soft-cap, as transformers' eager
    attention does)."""
    def biased(score, b, h, q_idx, kv_idx, *, q_len, kv_len):
        row = _row(b, h, q_idx, batch_full, heads, q_len, kv_len)
        return score + bias[row, kv_idx]
    return biased


def _declarative(visible, q_len, kv_len, sliding_window):
    """(causal, window) where the mask already implies them, so that
    passing them changes nothing but lets the kernel skip the tiles they
    hide: causal where no visible key lies right of its query's
    bottom-right diagonal, and then the sliding window where none lies
    left of it. Checked in prefill only (a host sync or two per forward
    pass): a decode step's diagonal hides nothing, and its sliding layers'
    caches hold little more than their window."""
    import torch

    if q_len == 1:
        return False, None
    device = visible.device
    # Key minus query position, bottom-right aligned: > 0 is the future.
    ahead = (torch.arange(kv_len, device=device)[None, :] -
             torch.arange(q_len, device=device)[:, None] - (kv_len - q_len))
    if bool((visible & (ahead > 0)).any()):
        return False, None
    if sliding_window is None:
        return True, None
    left = _left_window(sliding_window)
    if bool((visible & (ahead < -left)).any()):
        return True, None
    return True, left
