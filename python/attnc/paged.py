"""A paged-KV attention wrapper called the way an inference engine calls
it: plan once per batch (index arrays, split decisions, scratch), then run
for every layer with no allocation and no host-device synchronization, so
that run can be captured in a CUDA graph."""

from ._capi import PAGE_ORDERS
from ._tensors import ELEMENT_TYPES, FP8_TYPES, check_tensor, \
    current_stream, dtype_name, require
from ._values import as_int, as_sequence
from ._launch import run as run_launch
from ._layouts import row_major
from ._regions import reads_argument
from ._compiled import compiling, eagerly, operator_handle, traced_run
from .functional import host_ints, kernel_for, modifier_fields, \
    region_fields, scale_count, scale_tensor
from .kernel import Variant


def pages_in_use(indptr, indices):
    """The page count a cache must have for the page table (kv_indptr and
    kv_indices, as host ints): one more than the largest page used. Checked
    against the caches at run, without a sync."""
    require(indptr[-1] <= len(indices),
            "kv_indices is shorter than kv_indptr says")
    used = indices[indptr[0]:indptr[-1]]
    require(min(used) >= 0, "kv_indices must not be negative")
    return max(used) + 1


def index_array_on_device(x):
    """An index array on the GPU, contiguous, copied without waiting for
    the stream: from pageable memory a copy waits for the whole stream (the
    last step's kernels, which an overlapped engine plans behind); staged
    through pinned memory it is queued like a kernel (torch's host
    allocator keeps the staging buffer until the copy has run). One on the
    device already is made contiguous (a strided view would be passed as
    it is)."""
    if x.is_cuda:
        return x.contiguous()
    import torch
    staged = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
    staged.copy_(x)
    return staged.to(torch.device("cuda", 0), non_blocking=True)


class PagedAttention:
    """Attention of queries over a paged KV cache.

    The cache is one tensor for K and one for V, [pages, page_size,
    kv_heads, dim] ("NHD") or [pages, kv_heads, page_size, dim] ("HND").
    Request b owns pages kv_indices[kv_indptr[b]:kv_indptr[b+1]], the last
    holding kv_last_page_len[b] tokens. Decode (qo_indptr None at plan) takes
    q [batch, heads, dim]; prefill and chunked prefill take ragged q
    [tokens, heads, dim] with qo_indptr, bottom-right aligned (causal).
    A batch's leading one-token requests (an engine's decodes) run on the
    decode schedule, the rest on the prefill schedule (all of them, where a
    mod reads b: see below).

    Every slot of a request's last page must hold finite values, written or
    not: on sm_90a the prefill schedule copies whole pages, and a masked
    probability (0) times a NaN value is NaN. attnc.KVPool's caches start
    zeroed; allocate caches of your own with torch.zeros, not torch.empty.

    kv_dtype float8_e4m3fn or float8_e5m2 makes the caches fp8, holding
    k / k_scale and v / v_scale; run takes both scales or neither (then
    both are 1): float32 tensors of one value (kv_scales="tensor", the
    default) or one per KV head (kv_scales="head"); with "tensor", floats
    too (a value's first call allocates its tensor, later ones reuse it).

    alibi adds the standard ALiBi biases. score_mod and mask_mod are as
    attnc.attention's: FlexAttention's functions (traced once, here), q_idx
    the query's position in its request's sequence, b its index in the
    batch given to plan; or MLIR region text reading `captures`. The
    tensors listed in `captures` and those the functions read (found here,
    in their closures, globals and defaults) are the wrapper's `captures`,
    passed at every run; run(captures=...) passes others of the same
    dtypes and ranks instead (a new step's document ids). A mod that reads
    b runs a step's requests in one launch, on the prefill schedule: the
    decode schedule's launch would number its requests apart.
    """

    def __init__(self, num_qo_heads, num_kv_heads, head_dim, page_size,
                 kv_layout="NHD", dtype="bfloat16", causal=False,
                 window=None, sinks=0, softcap=None, scale=None,
                 return_lse=False, kv_dtype=None, kv_scales=None,
                 alibi=False, score_mod=None, mask_mod=None, captures=()):
        require(isinstance(kv_layout, str) and
                kv_layout.lower() in PAGE_ORDERS and kv_layout.isupper(),
                f"kv_layout must be "
                f"{' or '.join(o.upper() for o in PAGE_ORDERS)}, got "
                f"{kv_layout!r}")
        dtype = str(dtype).replace("torch.", "")
        require(dtype in ELEMENT_TYPES,
                f"dtype must be bfloat16 or float16, got {dtype}", TypeError)
        kv_dtype = dtype if kv_dtype is None else str(kv_dtype).replace(
            "torch.", "")
        require(kv_dtype == dtype or kv_dtype in FP8_TYPES,
                f"kv_dtype must be {dtype} or an fp8 type "
                f"({' or '.join(FP8_TYPES)}), got {kv_dtype}", TypeError)
        fp8 = kv_dtype in FP8_TYPES
        require(kv_scales in ((None, "tensor", "head") if fp8 else (None,)),
                f"kv_scales must be None, 'tensor' or 'head' for an fp8 "
                f"cache and None otherwise, got {kv_scales!r}")
        kv_fields = (dict(kv_dtype=kv_dtype,
                          kv_scales=kv_scales or "tensor") if fp8 else {})
        regions, captures = region_fields(score_mod, mask_mod, captures)
        self.captures = tuple(captures)
        # What run checks of the captures passed instead of these.
        self._capture_kinds = [(dtype_name(c), len(c.shape))
                               for c in captures]
        self._reads_batch = any(reads_argument(kind, regions[kind], "batch")
                                for kind in ("score_mod", "mask_mod"))
        self._spec = dict(
            query_heads=as_int("num_qo_heads", num_qo_heads),
            kv_heads=as_int("num_kv_heads", num_kv_heads),
            head_dim=as_int("head_dim", head_dim), dtype=dtype,
            kv_layout="paged", page_size=as_int("page_size", page_size),
            page_order=kv_layout, **kv_fields, **regions,
            **modifier_fields(causal, window, sinks, softcap, scale, alibi,
                              return_lse))
        # Verified now, so that a configuration the attn dialect refuses
        # (heads, their group, the page size) fails here, with its message.
        Variant.from_spec(**self._decode_spec())
        self.num_qo_heads, self.num_kv_heads = num_qo_heads, num_kv_heads
        self.head_dim, self.page_size = head_dim, page_size
        self.kv_layout, self.dtype = kv_layout, dtype
        self.kv_dtype, self._fp8 = kv_dtype, fp8
        self.return_lse = bool(return_lse)
        self._plan = None  # the kernel's Plan, once plan() has run
        self._checked = None  # the last run's tensors, as checked

    def _decode_spec(self):
        return dict(self._spec, query_layout="dense", queries_per_request=1)

    def plan(self, kv_indptr, kv_indices, kv_last_page_len, qo_indptr=None):
        """Index arrays: int32 tensors (host or device). May allocate and
        synchronize; reuse the plan for every layer of the step."""
        arrays = [("kv_indptr", kv_indptr), ("kv_indices", kv_indices),
                  ("kv_last_page_len", kv_last_page_len)]
        if qo_indptr is not None:
            arrays.append(("qo_indptr", qo_indptr))
        for name, array in arrays:
            check_tensor(name, array, 1, ("int32",), cuda=False)
        # Checked on host ints, which cannot overflow: the kernel trusts
        # these arrays to stay inside the caches and the queries.
        indptr, indices, last = (host_ints(x) for x in
                                 (kv_indptr, kv_indices, kv_last_page_len))
        batch = len(indptr) - 1
        require(batch >= 1, "kv_indptr needs batch + 1 entries")
        require(len(last) == batch,
                "kv_last_page_len needs one entry per request")
        require(indptr[0] >= 0, "kv_indptr must start at 0 or more")
        pages = [b - a for a, b in zip(indptr, indptr[1:])]
        require(all(p >= 1 for p in pages), "every request needs a page")
        require(all(1 <= n <= self.page_size for n in last),
                f"kv_last_page_len must be in 1..{self.page_size}")
        self._pages_needed = pages_in_use(indptr, indices)
        kv_lens = [(p - 1) * self.page_size + n for p, n in zip(pages, last)]
        decode = qo_indptr is None
        if decode:
            q_len, tokens = 1, batch
        else:
            qo = host_ints(qo_indptr)
            require(len(qo) == batch + 1, "qo_indptr needs batch + 1 entries")
            require(qo[0] >= 0, "qo_indptr must start at 0 or more")
            q_lens = [b - a for a, b in zip(qo, qo[1:])]
            require(all(n >= 0 for n in q_lens), "qo_indptr must not decrease")
            require(all(q <= k for q, k in zip(q_lens, kv_lens)),
                    "a request has more queries than keys")
            q_len, tokens = max(q_lens), qo[-1]
        # Leading one-token requests (an engine's decodes, which come first)
        # take the decode schedule: GQA groups packed into a tile's rows and
        # KV split across CTAs. Planned as prefill, each would take a whole
        # tile of query rows per head to walk its keys alone (2.8-3.7x the
        # time of the two launches in docs/PERFORMANCE.md's engine loop).
        # Each launch numbers its requests from 0: where a mod reads b, the
        # step is one launch, so that b is the request's index in the batch.
        decodes = batch if decode else 0
        if not decode and qo[0] == 0 and not self._reads_batch:
            while decodes < batch and q_lens[decodes] == 1:
                decodes += 1
        import torch
        device = torch.device("cuda", 0)

        on_device = index_array_on_device
        self._indptr = on_device(kv_indptr)
        self._indices = on_device(kv_indices)
        self._last = on_device(kv_last_page_len)
        self._qo = None if decode else on_device(qo_indptr)
        self._tokens = tokens
        # Scales of 1 for a run given none, made here so that run stays
        # free of allocation.
        self._unit_scales = (torch.ones(1, dtype=torch.float32,
                                        device=device).expand(
                                            self._scale_count()).contiguous()
                             if self._fp8 else None)
        # Each part reads its requests' entries of the same device arrays
        # (int32: 4 bytes an entry) and writes its rows of the same output:
        # (spec, plan arguments) here, planned per pair of page strides the
        # caches come with (_parts_for).
        self._part_plans = []
        if decodes:
            self._part_plans.append((self._decode_spec(), dict(
                batch=decodes, max_query_len=1,
                max_kv_len=max(kv_lens[:decodes]), query_tokens=decodes,
                kv_tokens=sum(kv_lens[:decodes]),
                kv_indptr=self._indptr.data_ptr(),
                page_indices=self._indices.data_ptr(),
                last_page_len=self._last.data_ptr())))
        if decodes < batch:
            self._part_plans.append((dict(
                self._spec, query_layout="ragged", queries_per_request=0),
                dict(batch=batch - decodes,
                     max_query_len=max(q_lens[decodes:]),
                     max_kv_len=max(kv_lens[decodes:]), query_tokens=tokens,
                     kv_tokens=sum(kv_lens[decodes:]),
                     q_indptr=self._qo.data_ptr() + 4 * decodes,
                     kv_indptr=self._indptr.data_ptr() + 4 * decodes,
                     page_indices=self._indices.data_ptr(),
                     last_page_len=self._last.data_ptr() + 4 * decodes)))
        self._parts_by_strides = {}
        self._parts = self._parts_for((0, 0))
        self._plan = self._parts[-1][1]
        self._checked = None  # run's checks are against this plan
        operator_handle(self)  # what torch.compile's graph names it by
        return self

    def _parts_for(self, page_strides):
        """The (kernel, plan) parts of this step for caches whose pages are
        page_strides (k's, v's) elements apart, 0 where packed: planned on
        the first run with such caches (an allocation and a sync)."""
        parts = self._parts_by_strides.get(page_strides)
        if parts is None:
            k_stride, v_stride = page_strides
            parts = self._parts_by_strides[page_strides] = [
                (kernel, kernel.plan(**args, k_page_stride=k_stride,
                                     v_page_stride=v_stride))
                for kernel, args in ((kernel_for(spec), args)
                                     for spec, args in self._part_plans)]
        return parts

    def _split_cache(self, kv_cache):
        """k and v of FlashInfer's cache forms: a (k_cache, v_cache) pair,
        or one interleaved [pages, 2, ...] tensor (k then v in each page,
        read where they lie)."""
        if isinstance(kv_cache, (tuple, list)):
            require(len(kv_cache) == 2, f"a paged cache given alone is a "
                    f"(k_cache, v_cache) pair, got {len(kv_cache)} tensors")
            return kv_cache[0], kv_cache[1]
        check_tensor("kv_cache", kv_cache, 5, (self.kv_dtype,),
                     contiguous=False)
        require(kv_cache.shape[1] == 2, f"an interleaved kv_cache is "
                f"[pages, 2, ...] (k, then v), got shape "
                f"{tuple(kv_cache.shape)}")
        return kv_cache[:, 0], kv_cache[:, 1]

    def _scale_count(self):
        return (self.num_kv_heads if self._spec.get("kv_scales") == "head"
                else 1)

    def _scales(self, k_scale, v_scale, device):
        """The scale tensors run passes after the caches."""
        if not self._fp8:
            require(k_scale is None and v_scale is None,
                    f"k_scale and v_scale dequantize fp8 caches; this "
                    f"wrapper's cache is {self.kv_dtype}")
            return []
        require((k_scale is None) == (v_scale is None),
                "give k_scale and v_scale together (None for both means 1)")
        count = self._scale_count()
        scales = []
        for name, scale in (("k_scale", k_scale), ("v_scale", v_scale)):
            scale = (self._unit_scales if scale is None else
                     scale_tensor(name, scale, self.num_kv_heads, device))
            if scale_count(scale) != count:
                raise ValueError(f"{name} must hold {count} value(s) "
                                 f"(kv_scales={self._spec['kv_scales']!r}),"
                                 f" got {scale_count(scale)}")
            scales.append(scale)
        return scales

    def _captures(self, captures):
        """The tensors run passes to the mods: the wrapper's, or `captures`
        in their place, of the same dtypes and ranks (the kernel's
        types)."""
        if captures is None:
            return self.captures
        captures = as_sequence("captures", captures)
        if len(captures) != len(self._capture_kinds):
            raise ValueError(f"captures must replace the wrapper's "
                             f"{len(self._capture_kinds)} captured "
                             f"tensor(s), got {len(captures)}")
        for i, (c, (dtype, rank)) in enumerate(zip(captures,
                                                   self._capture_kinds)):
            check_tensor(f"captures[{i}]", c, rank, (dtype,))
        return captures

    def run(self, q, k_cache, v_cache=None, out=None, lse=None,
            k_scale=None, v_scale=None, captures=None):
        """Runs on the current stream. The caches: k_cache and v_cache, or, as
        FlashInfer takes them, one (k_cache, v_cache) pair or one interleaved
        [pages, 2, ...] tensor in k_cache's place. Pages may lie any distance
        apart (each page's rows packed): the first run with new page strides
        plans for them (an allocation and a sync: run once before capturing
        such a run in a CUDA graph). Pass `out` (and `lse`) to keep run free of
        allocation, e.g. under CUDA-graph capture; fp8 scales are then tensors
        (or None). captures: None, the wrapper's `captures`; or tensors to read
        in their place, one for each, of its dtype and rank. The checks of a
        call like the last one checked (shapes, strides, dtypes, devices) are
        not run again."""
        if v_cache is None:
            k_cache, v_cache = self._split_cache(k_cache)
        if compiling():
            return traced_run(self, "paged_run", (q, k_cache, v_cache),
                              dict(out=out, lse=lse, k_scale=k_scale,
                                   v_scale=v_scale, captures=captures),
                              _EAGER_RUN)
        require(self._plan is not None, "call plan() before run()",
                RuntimeError)
        key = None
        if k_scale is None and v_scale is None and captures is None:
            key = (q.shape, q.stride(), q.dtype, q.device, k_cache.shape,
                   k_cache.stride(), k_cache.dtype, k_cache.device,
                   v_cache.shape, v_cache.stride(), v_cache.dtype,
                   v_cache.device, None if out is None else
                   (out.shape, out.stride(), out.dtype, out.device),
                   None if lse is None else
                   (lse.shape, lse.stride(), lse.dtype, lse.device))
        if key is None or key != self._checked:
            self._active = self._check_run(q, k_cache, v_cache, out, lse)
            self._checked = key
        if out is None:
            out = q.new_empty(q.shape)
        outputs = [out.data_ptr()]
        if self.return_lse:
            if lse is None:
                import torch
                lse = torch.empty(q.shape[:2], dtype=torch.float32,
                                  device=q.device)
            outputs.append(lse.data_ptr())
        inputs = [q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr()]
        stream = current_stream(q)
        if key is not None and not self.captures and not self._fp8:
            for kernel, plan in self._active:
                run_launch(kernel, plan, inputs, outputs, stream)
            return (out, lse) if self.return_lse else out
        scales = self._scales(k_scale, v_scale, q.device)
        captures = self._captures(captures)
        buffers = list(scales) + list(captures)
        inputs += [b.data_ptr() for b in buffers]
        # Captures are read through their sizes; without any, none are
        # passed (the decode step's common case).
        sizes = [list(b.shape) for b in buffers] if captures else None
        for kernel, plan in self._active:
            kernel.run(plan, inputs, outputs, stream, sizes)
        return (out, lse) if self.return_lse else out

    def _check_run(self, q, k_cache, v_cache, out, lse):
        """run's checks of its tensors against the plan; returns the parts
        planned for the caches' page strides."""
        check_tensor("q", q, 3, (self.dtype,))
        # Messages are formatted only on failure: run is every decode step.
        if tuple(q.shape) != (self._tokens, self.num_qo_heads, self.head_dim):
            raise ValueError(f"q must be [{self._tokens}, "
                             f"{self.num_qo_heads}, {self.head_dim}] for "
                             f"this plan, got {tuple(q.shape)}")
        page = ((self.page_size, self.num_kv_heads)
                if self.kv_layout == "NHD"
                else (self.num_kv_heads, self.page_size))
        page_shape = page + (self.head_dim,)
        packed = page_shape[0] * page_shape[1] * page_shape[2]
        page_strides = []
        for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
            check_tensor(name, cache, 4, (self.kv_dtype,), contiguous=False)
            if tuple(cache.shape[1:]) != page_shape:
                raise ValueError(f"{name} must be [pages, {page[0]}, "
                                 f"{page[1]}, {self.head_dim}] "
                                 f"({self.kv_layout}), got "
                                 f"{tuple(cache.shape)}")
            if cache.shape[0] < self._pages_needed:
                raise ValueError(f"{name} has {cache.shape[0]} pages, the "
                                 f"plan reads page {self._pages_needed - 1}")
            strides = tuple(cache.stride())
            if cache.shape[0] == 1:  # one page: no distance to keep
                strides = (packed,) + strides[1:]
            if not row_major(page_shape, strides[1:]) or strides[0] < packed:
                raise ValueError(
                    f"{name}'s pages must each be packed and apart from one "
                    f"another (strides [>= {packed}, "
                    f"{page_shape[1] * page_shape[2]}, {page_shape[2]}, 1]), "
                    f"got strides {list(strides)}")
            page_strides.append(0 if strides[0] == packed else strides[0])
        if out is not None:
            check_tensor("out", out, 3, (self.dtype,))
            require(tuple(out.shape) == tuple(q.shape),
                    "out must have q's shape")
        if not self.return_lse:
            require(lse is None, "lse given, but the wrapper was made "
                    "without return_lse")
        elif lse is not None:
            check_tensor("lse", lse, 2, ("float32",))
            if tuple(lse.shape) != tuple(q.shape[:2]):
                raise ValueError(f"lse must be {tuple(q.shape[:2])}, got "
                                 f"{tuple(lse.shape)}")
        return self._parts_for(tuple(page_strides))


# run as a compiled graph calls it given out, lse, k_scale, v_scale or
# captures, which torch.ops.attnc.paged_run does not take.
_EAGER_RUN = eagerly(
    PagedAttention.run, "PagedAttention.run with out, lse, k_scale, v_scale "
    "or captures runs eagerly: torch.ops.attnc.paged_run takes the tensors "
    "only")
