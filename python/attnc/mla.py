"""Multi-head latent attention (DeepSeek's MLA, up-projections absorbed into
the queries) over a paged latent cache, called the way an engine calls
FlashInfer's BatchMLAPagedAttentionWrapper: plan once per batch, then run
for every layer with no allocation and no host-device synchronization, so
that run can be captured in a CUDA graph."""

from ._compiled import compiling, eagerly, operator_handle, traced_run
from ._tensors import ELEMENT_TYPES, FP8_TYPES, check_tensor, \
    current_stream, require
from ._values import as_int
from .functional import host_ints, kernel_for, modifier_fields, \
    scale_tensor
from .kernel import Variant
from .paged import pages_in_use


class MLAAttention:
    """Absorbed MLA: every query head attends over one latent row per token,
    its first head_dim_ckv elements (the compressed KV, also the values)
    and then head_dim_kpe rotary elements.

    Where it differs from FlashInfer's wrapper, and why:
    - the configuration (heads, dims, page size, dtype, causal, sm_scale)
      goes to the constructor (sm_scale required: FlashInfer requires it
      too, and no default fits every model), which compiles one kernel for it; plan takes
      the batch's index arrays only;
    - the cache is one tensor [pages, page_size, head_dim_ckv +
      head_dim_kpe] (FlashMLA's layout): the kernel copies each token's row
      whole. run's ckv_cache and kpe_cache are its two column ranges,
      cache[..., :head_dim_ckv] and cache[..., head_dim_ckv:]; separate
      tensors are refused;
    - q_nope and q_pe may be separate tensors; unless they are the two
      column ranges of one tensor, run copies them into a buffer made at
      plan (a copy kernel, still graph-safe).

    Requests with one query each (decode) take q [batch, heads, dim];
    otherwise several queries per request, bottom-right aligned (causal
    masks within the chunk). Pages hold any number of slots (SGLang's 1
    too); pages of a multiple of 8 are bulk-copied, others gathered.

    kv_dtype float8_e4m3fn or float8_e5m2 makes the cache fp8, holding
    cache / kv_scale: run's kv_scale (a float32 tensor of one value, or
    None for 1) dequantizes the keys and the values alike, since they are
    the same bytes (vLLM's one scale per latent cache).
    """

    def __init__(self, num_heads, head_dim_ckv=512, head_dim_kpe=64,
                 page_size=64, dtype="bfloat16", causal=False, sm_scale=None,
                 return_lse=False, kv_dtype=None):
        dtype = str(dtype).replace("torch.", "")
        require(dtype in ELEMENT_TYPES,
                f"dtype must be bfloat16 or float16, got {dtype}", TypeError)
        kv_dtype = dtype if kv_dtype is None else str(kv_dtype).replace(
            "torch.", "")
        require(kv_dtype == dtype or kv_dtype in FP8_TYPES,
                f"kv_dtype must be {dtype} or an fp8 type "
                f"({' or '.join(FP8_TYPES)}), got {kv_dtype}", TypeError)
        self.kv_dtype, self._fp8 = kv_dtype, kv_dtype in FP8_TYPES
        # No default: the absorbed rows are 576 wide, but the softmax scale
        # is the model's, 1/sqrt(qk_nope + qk_rope head dims) (DeepSeek:
        # 1/sqrt(192)); a default of 1/sqrt(576) would be silently wrong.
        require(sm_scale is not None,
                "MLAAttention needs sm_scale, the model's softmax scale "
                "(DeepSeek-V2/V3: 1/sqrt(192), its qk_nope_head_dim + "
                "qk_rope_head_dim), not 1/sqrt(head_dim_ckv + head_dim_kpe)")
        self.num_heads = as_int("num_heads", num_heads)
        self.head_dim_ckv = as_int("head_dim_ckv", head_dim_ckv)
        self.head_dim_kpe = as_int("head_dim_kpe", head_dim_kpe)
        self.page_size = as_int("page_size", page_size)
        require(self.head_dim_ckv > 0 and self.head_dim_kpe > 0,
                "head_dim_ckv and head_dim_kpe must be positive")
        self.dim = self.head_dim_ckv + self.head_dim_kpe
        self.dtype = dtype
        self.return_lse = bool(return_lse)
        self._spec = dict(
            query_heads=self.num_heads, kv_heads=1, head_dim=self.dim,
            rope_dim=self.head_dim_kpe, dtype=dtype,
            kv_layout="paged", page_size=self.page_size, page_order="NHD",
            **(dict(kv_dtype=kv_dtype, kv_scales="tensor")
               if self._fp8 else {}),
            **modifier_fields(causal, None, 0, None, sm_scale, False,
                              return_lse))
        # Verified now: a configuration the dialect refuses fails here.
        Variant.from_spec(**self._decode_spec())
        self._parts = None

    def _decode_spec(self):
        return dict(self._spec, query_layout="dense", queries_per_request=1)

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr):
        """int32 index arrays (host or device): request b's queries are rows
        qo_indptr[b]:qo_indptr[b+1], its keys kv_len_arr[b] tokens in pages
        kv_indices[kv_indptr[b]:kv_indptr[b+1]]. May allocate and
        synchronize; reuse the plan for every layer of the step."""
        for name, array in (("qo_indptr", qo_indptr),
                            ("kv_indptr", kv_indptr),
                            ("kv_indices", kv_indices),
                            ("kv_len_arr", kv_len_arr)):
            check_tensor(name, array, 1, ("int32",), cuda=False)
        qo, indptr, indices, kv_lens = (host_ints(x) for x in (
            qo_indptr, kv_indptr, kv_indices, kv_len_arr))
        batch = len(indptr) - 1
        require(batch >= 1, "kv_indptr needs batch + 1 entries")
        require(len(qo) == batch + 1 and len(kv_lens) == batch,
                "qo_indptr needs batch + 1 entries and kv_len_arr batch")
        require(qo[0] == 0 and indptr[0] >= 0,
                "qo_indptr must start at 0, kv_indptr at 0 or more")
        q_lens = [b - a for a, b in zip(qo, qo[1:])]
        pages = [b - a for a, b in zip(indptr, indptr[1:])]
        require(all(n >= 1 for n in q_lens), "every request needs a query")
        for b, (n, p) in enumerate(zip(kv_lens, pages)):
            require(n >= q_lens[b] and (n + self.page_size - 1) //
                    self.page_size == p,
                    f"request {b}: {n} keys in {p} pages of "
                    f"{self.page_size} (at least its {q_lens[b]} queries, "
                    f"its pages all used)")
        self._pages_needed = pages_in_use(indptr, indices)
        last = [n - (p - 1) * self.page_size for n, p in zip(kv_lens, pages)]
        decode = all(n == 1 for n in q_lens)

        import torch
        device = torch.device("cuda", 0)
        self._indptr = kv_indptr.to(device).contiguous()
        self._indices = kv_indices.to(device).contiguous()
        self._last = torch.tensor(last, dtype=torch.int32, device=device)
        self._qo = qo_indptr.to(device).contiguous()
        self._tokens = qo[-1]
        # Where run gathers q_nope and q_pe given apart.
        self._q = torch.empty(self._tokens, self.num_heads, self.dim,
                              dtype=getattr(torch, self.dtype), device=device)
        self._unit_scale = torch.ones(1, dtype=torch.float32, device=device)
        spec = (self._decode_spec() if decode else
                dict(self._spec, query_layout="ragged",
                     queries_per_request=0))
        kernel = kernel_for(spec)
        self._parts = (kernel, kernel.plan(
            batch, max(q_lens), max(kv_lens), self._tokens,
            kv_tokens=sum(kv_lens),
            q_indptr=0 if decode else self._qo.data_ptr(),
            kv_indptr=self._indptr.data_ptr(),
            page_indices=self._indices.data_ptr(),
            last_page_len=self._last.data_ptr()))
        operator_handle(self)  # what torch.compile's graph names it by
        return self

    @staticmethod
    def _parts_of_one(nope, pe, rows):
        """Whether nope and pe are the column ranges of one tensor of rows
        of nope's + pe's width: the leading and the trailing one."""
        width = nope.shape[-1] + pe.shape[-1]
        strides = tuple(width * r for r in rows) + (1,)
        return (nope.stride() == strides and pe.stride() == strides and
                pe.data_ptr() == nope.data_ptr() +
                nope.shape[-1] * nope.element_size())

    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, out=None, lse=None,
            kv_scale=None):
        """Runs on the current stream; returns out [tokens, heads,
        head_dim_ckv] (and lse [tokens, heads] with return_lse). Pass `out`
        (and `lse`, and an fp8 cache's kv_scale as a tensor) to keep run
        free of allocation."""
        if compiling():
            return traced_run(self, "mla_run",
                              (q_nope, q_pe, ckv_cache, kpe_cache),
                              dict(out=out, lse=lse, kv_scale=kv_scale),
                              _EAGER_RUN)
        require(self._parts is not None, "call plan() before run()",
                RuntimeError)
        tokens, heads = self._tokens, self.num_heads
        for name, x, dim in (("q_nope", q_nope, self.head_dim_ckv),
                             ("q_pe", q_pe, self.head_dim_kpe)):
            check_tensor(name, x, 3, (self.dtype,), contiguous=False)
            if tuple(x.shape) != (tokens, heads, dim):
                raise ValueError(f"{name} must be [{tokens}, {heads}, {dim}]"
                                 f" for this plan, got {tuple(x.shape)}")
        for name, x, dim in (("ckv_cache", ckv_cache, self.head_dim_ckv),
                             ("kpe_cache", kpe_cache, self.head_dim_kpe)):
            check_tensor(name, x, 3, (self.kv_dtype,), contiguous=False)
            if tuple(x.shape[1:]) != (self.page_size, dim):
                raise ValueError(f"{name} must be [pages, {self.page_size}, "
                                 f"{dim}], got {tuple(x.shape)}")
        if not self._parts_of_one(ckv_cache, kpe_cache,
                                  (self.page_size, 1)):
            raise ValueError(
                f"ckv_cache and kpe_cache must be cache[..., "
                f":{self.head_dim_ckv}] and cache[..., {self.head_dim_ckv}:]"
                f" of one contiguous [pages, {self.page_size}, {self.dim}] "
                f"latent cache: attnc reads each token's row whole")
        if ckv_cache.shape[0] < self._pages_needed:
            raise ValueError(f"the cache has {ckv_cache.shape[0]} pages, the "
                             f"plan reads page {self._pages_needed - 1}")
        if self._parts_of_one(q_nope, q_pe, (heads, 1)):
            q = q_nope.data_ptr()
        else:
            self._q[..., :self.head_dim_ckv].copy_(q_nope)
            self._q[..., self.head_dim_ckv:].copy_(q_pe)
            q = self._q.data_ptr()
        if out is None:
            out = q_nope.new_empty(tokens, heads, self.head_dim_ckv)
        check_tensor("out", out, 3, (self.dtype,))
        require(tuple(out.shape) == (tokens, heads, self.head_dim_ckv),
                f"out must be [{tokens}, {heads}, {self.head_dim_ckv}]")
        outputs = [out.data_ptr()]
        if self.return_lse:
            if lse is None:
                import torch
                lse = torch.empty(tokens, heads, dtype=torch.float32,
                                  device=out.device)
            check_tensor("lse", lse, 2, ("float32",))
            require(tuple(lse.shape) == (tokens, heads),
                    f"lse must be [{tokens}, {heads}]")
            outputs.append(lse.data_ptr())
        else:
            require(lse is None, "lse given, but the wrapper was made "
                    "without return_lse")
        inputs = [q, ckv_cache.data_ptr()]
        if self._fp8:
            # One value: the cache has one (latent) head.
            scale = (self._unit_scale if kv_scale is None else
                     scale_tensor("kv_scale", kv_scale, 1, out.device))
            inputs += [scale.data_ptr(), scale.data_ptr()]
        else:
            require(kv_scale is None, f"kv_scale dequantizes an fp8 cache; "
                    f"this wrapper's cache is {self.kv_dtype}")
        kernel, plan = self._parts
        kernel.run(plan, inputs, outputs, current_stream(out))
        return (out, lse) if self.return_lse else out


# run as a compiled graph calls it given out, lse or kv_scale, which
# torch.ops.attnc.mla_run does not take.
_EAGER_RUN = eagerly(
    MLAAttention.run, "MLAAttention.run with out, lse or kv_scale runs "
    "eagerly: torch.ops.attnc.mla_run takes the tensors only")
