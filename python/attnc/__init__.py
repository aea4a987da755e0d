"""attnc: attention kernels compiled from an MLIR description, run on
PyTorch tensors through libattnc's C API (ctypes; no compiled extension).

    import attnc
    out = attnc.attention(q, k, v, causal=True)           # [B, L, H, D]
    wrapper = attnc.PagedAttention(32, 8, 128, page_size=16)
    wrapper.plan(kv_indptr, kv_indices, kv_last_page_len)
    out = wrapper.run(q, k_cache, v_cache)                 # every layer
"""

from .errors import AttncError, InvalidArgumentError
from .functional import attention, merge_states
from .kernel import Kernel, Plan, Variant
from .paged import PagedAttention

__all__ = ["AttncError", "InvalidArgumentError", "Kernel", "PagedAttention",
           "Plan", "Variant", "attention", "merge_states"]
__version__ = "0.1.0"
