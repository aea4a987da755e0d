"""attnc: attention kernels compiled from an MLIR description, run on
PyTorch tensors through libattnc's C API (ctypes; no compiled extension).

    import attnc
    out = attnc.attention(q, k, v, causal=True)           # [B, L, H, D]
    out = attnc.attention(q, k, v, mask_mod=lambda b, h, q_idx, kv_idx:
                          doc[q_idx] == doc[kv_idx])      # FlexAttention's
    wrapper = attnc.PagedAttention(32, 8, 128, page_size=16)
    wrapper.plan(kv_indptr, kv_indices, kv_last_page_len)
    out = wrapper.run(q, k_cache, v_cache)                 # every layer
    mla = attnc.MLAAttention(128, 512, 64, page_size=64,   # DeepSeek MLA
                             sm_scale=192 ** -0.5)
    mla.plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr)
    out = mla.run(q_nope, q_pe, cache[..., :512], cache[..., 512:])

    pool = attnc.KVPool(4096, page_size=16, num_kv_heads=8, head_dim=128)
    scheduler = attnc.Scheduler(pool, attnc.RadixCache(pool))
    scheduler.add(0, prompt, max_tokens=64)
    step = scheduler.step()                                # a forward pass
    scheduler.commit([attnc.Sample(0, token)])             # what it sampled
"""

from ._capi import library_version as _library_version
from .cascade import CascadeAttention, CascadeMLAAttention
from .errors import AttncError, InvalidArgumentError
from .functional import attention, merge_states
from .kernel import Kernel, Plan, Variant
from .mla import MLAAttention
from .paged import PagedAttention
from .serving import KVPool, RadixCache, Sample, Scheduler, SchedulerStats, \
    Step
from .trace import MATH as _MATH
from .trace import TraceError, abs, ceil, clamp, exp, exp2, floor, log, \
    log2, maximum, minimum, rsqrt, sigmoid, sqrt, tanh, where

__all__ = ["AttncError", "CascadeAttention", "CascadeMLAAttention",
           "InvalidArgumentError", "KVPool", "Kernel",
           "MLAAttention", "PagedAttention", "Plan", "RadixCache", "Sample", "Scheduler",
           "SchedulerStats", "Step", "TraceError", "Variant", "attention",
           "merge_states"] + _MATH
__version__ = _library_version()  # the CLI's and the C API's

try:
    import torch as _torch  # noqa: F401
except ImportError:  # no torch: the operators have nothing to register with
    pass
else:
    from . import ops  # noqa: F401  torch.ops.attnc.*
