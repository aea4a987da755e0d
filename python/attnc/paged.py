"""A paged-KV attention wrapper called the way an inference engine calls
it: plan once per batch (index arrays, split decisions, scratch), then run
for every layer with no allocation and no host-device synchronization, so
that run can be captured in a CUDA graph."""

from ._tensors import ELEMENT_TYPES, check_tensor, current_stream, \
    dtype_name, require
from .functional import kernel_for, modifier_fields


class PagedAttention:
    """Attention of queries over a paged KV cache.

    The cache is one tensor for K and one for V, [pages, page_size,
    kv_heads, dim] ("NHD") or [pages, kv_heads, page_size, dim] ("HND").
    Request b owns pages kv_indices[kv_indptr[b]:kv_indptr[b+1]], the last
    holding kv_last_page_len[b] tokens. Decode (qo_indptr None at plan) takes
    q [batch, heads, dim]; prefill and chunked prefill take ragged q
    [tokens, heads, dim] with qo_indptr, bottom-right aligned (causal).
    """

    def __init__(self, num_qo_heads, num_kv_heads, head_dim, page_size,
                 kv_layout="NHD", dtype="bfloat16", causal=False,
                 window=None, sinks=0, softcap=None, scale=None,
                 return_lse=False):
        require(kv_layout in ("NHD", "HND"),
                f"kv_layout must be NHD or HND, got {kv_layout!r}")
        dtype = str(dtype).replace("torch.", "")
        require(dtype in ELEMENT_TYPES,
                f"dtype must be bfloat16 or float16, got {dtype}", TypeError)
        require(num_qo_heads % num_kv_heads == 0,
                f"{num_qo_heads} query heads must be a multiple of "
                f"{num_kv_heads} KV heads")
        require(1 <= page_size <= 256, "page_size must be in 1..256")
        self._spec = dict(
            query_heads=num_qo_heads, kv_heads=num_kv_heads,
            head_dim=head_dim, dtype=ELEMENT_TYPES[dtype], kv_layout=2,
            page_size=page_size, page_order=int(kv_layout == "HND"),
            **modifier_fields(causal, window, sinks, softcap, scale, False,
                              return_lse))
        self.num_qo_heads, self.num_kv_heads = num_qo_heads, num_kv_heads
        self.head_dim, self.page_size = head_dim, page_size
        self.kv_layout, self.dtype = kv_layout, dtype
        self.return_lse = bool(return_lse)
        self._plan = None  # the kernel's Plan, once plan() has run

    def plan(self, kv_indptr, kv_indices, kv_last_page_len, qo_indptr=None):
        """Index arrays: int32 tensors (host or device). May allocate and
        synchronize; reuse the plan for every layer of the step."""
        import torch
        host = [x.to("cpu", torch.int32) for x in
                (kv_indptr, kv_indices, kv_last_page_len)]
        indptr, indices, last = host
        batch = indptr.shape[0] - 1
        require(batch >= 1, "kv_indptr needs batch + 1 entries")
        require(last.shape[0] == batch,
                "kv_last_page_len needs one entry per request")
        pages = indptr[1:] - indptr[:-1]
        require(bool((pages >= 1).all()), "every request needs a page")
        require(bool(((last >= 1) & (last <= self.page_size)).all()),
                f"kv_last_page_len must be in 1..{self.page_size}")
        require(int(indptr[-1]) <= indices.shape[0],
                "kv_indices is shorter than kv_indptr says")
        kv_lens = (pages - 1) * self.page_size + last
        decode = qo_indptr is None
        spec = dict(self._spec, query_layout=0 if decode else 1,
                    queries_per_request=1 if decode else 0)
        self._kernel = kernel_for(spec)
        device = torch.device("cuda", 0)
        self._indptr = indptr.to(device)
        self._indices = indices.to(device)
        self._last = last.to(device)
        if decode:
            q_len, tokens, self._qo = 1, batch, None
        else:
            qo = qo_indptr.to("cpu", torch.int32)
            require(qo.shape[0] == batch + 1,
                    "qo_indptr needs batch + 1 entries")
            q_lens = qo[1:] - qo[:-1]
            require(bool((q_lens <= kv_lens).all()),
                    "a request has more queries than keys")
            q_len, tokens = int(q_lens.max()), int(qo[-1])
            self._qo = qo.to(device)
        self._tokens = tokens
        self._plan = self._kernel.plan(
            batch, q_len, int(kv_lens.max()), tokens,
            q_indptr=self._qo.data_ptr() if self._qo is not None else 0,
            kv_indptr=self._indptr.data_ptr(),
            page_indices=self._indices.data_ptr(),
            last_page_len=self._last.data_ptr())
        return self

    def run(self, q, k_cache, v_cache, out=None, lse=None):
        """Runs on the current stream. Pass `out` (and `lse`) to keep run
        free of allocation, e.g. under CUDA-graph capture."""
        require(self._plan is not None, "call plan() before run()",
                RuntimeError)
        check_tensor("q", q, 3, (self.dtype,))
        require(q.shape[0] == self._tokens and
                q.shape[1] == self.num_qo_heads and
                q.shape[2] == self.head_dim,
                f"q must be [{self._tokens}, {self.num_qo_heads}, "
                f"{self.head_dim}] for this plan, got {tuple(q.shape)}")
        page = ((self.page_size, self.num_kv_heads)
                if self.kv_layout == "NHD"
                else (self.num_kv_heads, self.page_size))
        for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
            check_tensor(name, cache, 4, (self.dtype,))
            require(tuple(cache.shape[1:]) == page + (self.head_dim,),
                    f"{name} must be [pages, {page[0]}, {page[1]}, "
                    f"{self.head_dim}] ({self.kv_layout}), got "
                    f"{tuple(cache.shape)}")
        if out is None:
            out = q.new_empty(q.shape)
        check_tensor("out", out, 3, (self.dtype,))
        require(tuple(out.shape) == tuple(q.shape), "out must have q's shape")
        outputs = [out.data_ptr()]
        if self.return_lse:
            if lse is None:
                import torch
                lse = torch.empty(q.shape[:2], dtype=torch.float32,
                                  device=q.device)
            check_tensor("lse", lse, 2, ("float32",))
            outputs.append(lse.data_ptr())
        self._kernel.run(self._plan,
                         [q.data_ptr(), k_cache.data_ptr(),
                          v_cache.data_ptr()],
                         outputs, current_stream(q))
        return (out, lse) if self.return_lse else out
