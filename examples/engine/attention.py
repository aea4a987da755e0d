"""Paged attention backends the engine runs a step's layers with, and the
attention function it registers with transformers so that the model's own
modules (projections, RoPE, norms, MLPs) run unchanged around it.

A backend is planned once per step with the step's page table and run
once per layer on queries in the KV caches' dtype:

    backend.plan(kv_indptr, kv_indices, kv_last_page_len, qo_indptr,
                 cascade_levels=step.cascade_levels)
    out = backend.run(q, k_cache, v_cache, LayerAttention(...))

AttncBackend runs attnc.PagedAttention (the GPU), and attnc.CascadeAttention
for the layers without a window when the step has cascade levels (a
scheduler made with cascade=True: shared prefixes read once per layer);
TorchBackend is a plain
float32 reference of the same contract (any device, the CPU included):
keys gathered through the page table, bottom-right causal mask, sliding
window, soft-cap.
"""

from collections import namedtuple

import torch
from transformers import AttentionInterface

# What differs between a model's attention layers: the score scale, the
# sliding window in attnc's convention (keys up to `window` positions left
# of the query; None for none) and the tanh soft-cap (None for none).
LayerAttention = namedtuple("LayerAttention", "scale window softcap")

ENGINE_ATTENTION = "attnc_engine"


def layer_attention(scaling, sliding_window, softcap):
    """A layer's LayerAttention from transformers' arguments: its sliding
    window of W keys is q - k < W, attnc's window of W - 1 keys to the
    left of the query."""
    window = None if sliding_window is None else int(sliding_window) - 1
    return LayerAttention(float(scaling), window,
                          None if not softcap else float(softcap))


def engine_attention(module, query, key, value, attention_mask,
                     scaling=None, dropout=0.0, sliding_window=None,
                     softcap=None, engine_step=None, **kwargs):
    """transformers' attention interface, for a packed batch of one row
    (the step's tokens) whose K/V go to the engine's paged caches: writes
    the layer's keys and values at the step's slots, then attends through
    the step's page table. query [1, heads, tokens, dim], key and value
    [1, kv_heads, tokens, dim]; returns [1, tokens, heads, dim]."""
    if engine_step is None:
        raise RuntimeError(f"the {ENGINE_ATTENTION!r} attention runs inside "
                           f"an engine step (engine_step= is missing)")
    if scaling is None:
        scaling = module.head_dim ** -0.5
    spec = layer_attention(scaling, sliding_window, softcap)
    out = engine_step.attend(module.layer_idx, query[0].transpose(0, 1),
                             key[0].transpose(0, 1), value[0].transpose(0, 1),
                             spec)
    return out.to(query.dtype)[None], None


AttentionInterface.register(ENGINE_ATTENTION, engine_attention)


class TorchBackend:
    """Paged attention in float32 with torch ops, one request at a time:
    the reference the attnc kernels are held to, and the CPU's backend."""

    def __init__(self, page_size):
        self.page_size = page_size
        self._requests = None

    def plan(self, kv_indptr, kv_indices, kv_last_page_len, qo_indptr,
             cascade_levels=()):
        # The levels read the same keys as the page table: the reference
        # reads them through the table.
        indptr, indices = kv_indptr.tolist(), kv_indices.long()
        last, qo = kv_last_page_len.tolist(), qo_indptr.tolist()
        in_page = torch.arange(self.page_size)
        self._requests = []
        for i in range(len(last)):
            pages = indices[indptr[i]:indptr[i + 1]]
            kv_len = (len(pages) - 1) * self.page_size + last[i]
            slots = (pages[:, None] * self.page_size + in_page).flatten()
            self._requests.append((qo[i], qo[i + 1], slots[:kv_len]))

    def run(self, q, k_cache, v_cache, spec):
        heads, dim = q.shape[1], q.shape[2]
        k_rows = k_cache.reshape(-1, k_cache.shape[-2], dim)
        v_rows = v_cache.reshape(-1, v_cache.shape[-2], dim)
        out = torch.empty_like(q)
        for lo, hi, slots in self._requests:
            slots = slots.to(q.device)
            k = k_rows[slots].float()
            v = v_rows[slots].float()
            group = heads // k.shape[1]
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q[lo:hi].float(), k)
            scores = scores * spec.scale
            if spec.softcap is not None:
                scores = spec.softcap * torch.tanh(scores / spec.softcap)
            kv_len, q_len = k.shape[0], hi - lo
            # Bottom-right aligned: query j sits at kv_len - q_len + j.
            rows = torch.arange(q_len, device=q.device)[:, None] + (
                kv_len - q_len)
            cols = torch.arange(kv_len, device=q.device)[None, :]
            hidden = cols > rows
            if spec.window is not None:
                hidden |= rows - cols > spec.window
            scores = scores.masked_fill(hidden, float("-inf"))
            out[lo:hi] = torch.einsum("hqk,khd->qhd", scores.softmax(-1),
                                      v).to(q.dtype)
        return out


class AttncBackend:
    """attnc.PagedAttention, or attnc.CascadeAttention where the step has
    cascade levels and the layer no window (a shared prefix's rows do not
    know their positions): one wrapper per distinct LayerAttention and
    kind (a Gemma-2 has two layer kinds: sliding and global), each planned
    once per step and run for each of its layers. time_attention records
    CUDA events around every run (attention_ms sums them)."""

    def __init__(self, num_qo_heads, num_kv_heads, head_dim, page_size,
                 dtype, time_attention=False):
        import attnc
        self._attnc = attnc
        self._shape = (num_qo_heads, num_kv_heads, head_dim, page_size)
        self._dtype = str(dtype).replace("torch.", "")
        self._wrappers = {}
        self._table = None
        self._levels = ()
        self._planned = set()
        self._events = [] if time_attention else None

    def plan(self, kv_indptr, kv_indices, kv_last_page_len, qo_indptr,
             cascade_levels=()):
        self._table = (kv_indptr, kv_indices, kv_last_page_len, qo_indptr)
        self._levels = cascade_levels
        self._planned = set()

    def _wrapper(self, spec):
        key = (spec, bool(self._levels) and spec.window is None)
        wrapper = self._wrappers.get(key)
        if wrapper is None:
            if key[1]:
                wrapper = self._attnc.CascadeAttention(
                    *self._shape, kv_layout="NHD", dtype=self._dtype,
                    causal=True, softcap=spec.softcap, scale=spec.scale)
            else:
                wrapper = self._attnc.PagedAttention(
                    *self._shape, kv_layout="NHD", dtype=self._dtype,
                    causal=True, window=spec.window, softcap=spec.softcap,
                    scale=spec.scale)
            self._wrappers[key] = wrapper
        if key not in self._planned:
            # A plan serves every layer of its kind in the step. It copies
            # the table to the device with a blocking copy, which waits for
            # the stream: under overlap, the previous step's kernels.
            if key[1]:
                wrapper.plan(self._levels)
            else:
                indptr, indices, last, qo = self._table
                wrapper.plan(indptr, indices, last, qo_indptr=qo)
            self._planned.add(key)
        return wrapper

    def run(self, q, k_cache, v_cache, spec):
        wrapper = self._wrapper(spec)
        if self._events is None:
            return wrapper.run(q.contiguous(), k_cache, v_cache)
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        out = wrapper.run(q.contiguous(), k_cache, v_cache)
        end.record()
        self._events.append((begin, end))
        return out

    def attention_ms(self):
        """The device time of every timed run so far (synchronizes)."""
        torch.cuda.synchronize()
        return sum(b.elapsed_time(e) for b, e in self._events or ())


def make_backend(name, model_config, page_size, kv_dtype,
                 time_attention=False):
    if name == "torch":
        return TorchBackend(page_size)
    if name == "attnc":
        return AttncBackend(model_config.num_attention_heads,
                            model_config.num_key_value_heads,
                            model_config.head_dim, page_size, kv_dtype,
                            time_attention=time_attention)
    raise ValueError(f"backend must be 'torch' or 'attnc', got {name!r}")
