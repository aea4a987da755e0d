"""Cascade attention: paged KV shared as a tree of prefixes, each shared
prefix read once for all the requests under it.

The levels are FlashInfer's MultiLevelCascadeAttentionWrapper's: level l
partitions the batch's query rows into contiguous entries (qo_indptr) and
gives each entry pages (kv_indptr, kv_indices, kv_last_page_len). Every
level but the last holds shared prefixes: an entry's rows are the tokens
of every request under one radix-tree node, which see all of its keys
(the keys come before any of the rows' positions); an entry without pages
is rows that share nothing at that level. The last level holds each
request's own pages, attended to causally or not as the wrapper says.
Each shared entry runs as one request of a `shared_keys` kernel, whose
CTAs split its keys; the levels' states are merged per row by
attn.merge_states. CascadeAttention takes K/V caches (PagedAttention's
own level), CascadeMLAAttention a latent cache (MLAAttention's)."""

from ._capi import LIMITS
from ._tensors import check_tensor, current_stream, require
from ._values import as_sequence
from .functional import cached_plan, host_ints, kernel_for, merge_kernel, \
    scale_tensor
from .mla import MLAAttention
from .paged import PagedAttention, index_array_on_device, pages_in_use

_LEVEL_ARRAYS = ("qo_indptr", "kv_indptr", "kv_indices", "kv_last_page_len")


def shared_runs(qo_indptr, kv_indptr):
    """The maximal runs [first, end) of adjacent entries that have rows and
    pages: each is one launch (its requests' rows lie together)."""
    runs, first = [], None
    entries = len(kv_indptr) - 1
    for e in range(entries + 1):
        has_pages = (e < entries and kv_indptr[e + 1] > kv_indptr[e] and
                     qo_indptr[e + 1] > qo_indptr[e])
        if has_pages and first is None:
            first = e
        elif not has_pages and first is not None:
            runs.append((first, e))
            first = None
    return runs


class _Cascade:
    """What a cascade does whatever its cache: plans the shared levels (a
    shared_keys launch per run of nodes, each level's state), merges them
    with the own level's state. A front end gives the own level's wrapper
    (its plan and run writing out and lse) and the shared kernels'
    inputs."""

    def _setup(self, own, shared_spec, heads, out_dim, page_size, dtype,
               return_lse):
        self._own, self._shared_spec = own, shared_spec
        self._heads, self._out_dim = heads, out_dim
        self.page_size, self.dtype = page_size, dtype
        self.return_lse = bool(return_lse)
        self._levels = None
        self._side_stream = None  # made by the first plan with shared levels
        self._states = []  # (out, lse) buffers of the levels, by index

    def plan(self, levels):
        """levels: a sequence of (qo_indptr, kv_indptr, kv_indices,
        kv_last_page_len) int32 tensors (host or device), the last level's
        entries each request's own pages (at least one). May allocate and
        synchronize; reuse the plan for every layer of the step."""
        levels = as_sequence("levels", levels)
        require(len(levels) >= 1, "levels needs at least the last level")
        host = []
        for l, level in enumerate(levels):
            level = as_sequence(f"levels[{l}]", level)
            require(len(level) == 4, f"levels[{l}] must be (qo_indptr, "
                    f"kv_indptr, kv_indices, kv_last_page_len)")
            for name, array in zip(_LEVEL_ARRAYS, level):
                check_tensor(f"levels[{l}].{name}", array, 1, ("int32",),
                             cuda=False)
            host.append([host_ints(a) for a in level])
        tokens = host[-1][0][-1]
        for l, (qo, kv, indices, last) in enumerate(host):
            entries = len(qo) - 1
            require(entries >= 1 and qo[0] == 0 and qo[-1] == tokens,
                    f"levels[{l}].qo_indptr must run from 0 to {tokens}, "
                    f"the last level's rows")
            require(all(a <= b for a, b in zip(qo, qo[1:])),
                    f"levels[{l}].qo_indptr must not decrease")
            require(len(kv) == entries + 1 and len(last) == entries,
                    f"levels[{l}] needs kv_indptr of {entries + 1} and "
                    f"kv_last_page_len of {entries} entries, as qo_indptr "
                    f"has")
            require(kv[0] >= 0 and all(a <= b for a, b in zip(kv, kv[1:]))
                    and kv[-1] <= len(indices),
                    f"levels[{l}].kv_indptr must not decrease nor pass "
                    f"kv_indices' end")
            if l + 1 < len(host):
                for first, end in shared_runs(qo, kv):
                    require(all(1 <= last[e] <= self.page_size
                                for e in range(first, end)),
                            f"levels[{l}].kv_last_page_len must be in "
                            f"1..{self.page_size} for an entry with pages")
        most = LIMITS["max_merge_states"]
        require(len(levels) <= most, f"levels holds at most {most} levels "
                f"(the states merge_states merges), got {len(levels)}")
        self._plan_own(levels[-1], host[-1])
        import torch
        device = torch.device("cuda", 0)
        self._tokens = tokens
        self._pages_needed = self._own._pages_needed
        # Each shared level: its launches (one per run of entries with
        # pages) and the state they write. Rows no entry of the level
        # covers keep a state of no keys (lse -inf), set here once.
        self._shared = []
        for l, (qo, kv, indices, last) in enumerate(host[:-1]):
            runs = shared_runs(qo, kv)
            if not runs:
                continue
            self._pages_needed = max(
                self._pages_needed,
                pages_in_use([kv[runs[0][0]], kv[runs[-1][1]]], indices))
            # Each run is a launch over its own rows alone: its queries,
            # outputs and LSE from its first row on, its qo_indptr counted
            # from there (a launch that merges its splits in a second pass
            # writes every row it is given).
            rebased = []
            for first, end in runs:
                rebased += [x - qo[first] for x in qo[first:end + 1]]
            arrays = [index_array_on_device(
                torch.tensor(rebased, dtype=torch.int32))] + \
                [index_array_on_device(levels[l][i]) for i in range(1, 4)]
            kernel = kernel_for(self._shared_spec)
            parts, at = [], 0
            for first, end in runs:
                kv_lens = [(kv[e + 1] - kv[e] - 1) * self.page_size + last[e]
                           for e in range(first, end)]
                rows = qo[end] - qo[first]
                parts.append((qo[first], kernel.plan(
                    end - first, max(qo[e + 1] - qo[e]
                                     for e in range(first, end)),
                    max(kv_lens), rows, kv_tokens=sum(kv_lens),
                    q_indptr=arrays[0].data_ptr() + 4 * at,
                    kv_indptr=arrays[1].data_ptr() + 4 * first,
                    page_indices=arrays[2].data_ptr(),
                    last_page_len=arrays[3].data_ptr() + 4 * first)))
                at += end - first + 1
            out, lse = self._state(len(self._shared), tokens, device)
            lse.fill_(float("-inf"))
            self._shared.append((kernel, parts, arrays, out, lse))
        if self._shared:
            self._own_out, self._own_lse = self._state(len(self._shared),
                                                       tokens, device)
            states = len(self._shared) + 1
            self._merge = merge_kernel(states, self.dtype, self._heads,
                                       self._out_dim)
            # The process's plan cache, as merge_states uses it: a merge
            # holds no scratch, so one plan serves every stream.
            self._merge_plan = cached_plan(self._merge, 0, (tokens,),
                                           batch=1, max_query_len=tokens,
                                           max_kv_len=0, query_tokens=tokens)
        self._side_stream = (torch.cuda.Stream(device)
                             if self._shared and self._side_stream is None
                             else self._side_stream)
        self._levels = len(levels)
        return self

    def _state(self, index, tokens, device):
        """Views of `tokens` rows of attention-state buffer `index` (out,
        lse), kept across plans. Outputs start zeroed: rows a level never
        writes stay finite (their lse is -inf, and 0 * NaN would be NaN)."""
        import torch
        while len(self._states) <= index:
            self._states.append(None)
        held = self._states[index]
        if held is None or held[0].shape[0] < tokens:
            rows = max(tokens, 2 * held[0].shape[0] if held else 0)
            held = (torch.zeros((rows, self._heads, self._out_dim),
                                dtype=getattr(torch, self.dtype),
                                device=device),
                    torch.empty((rows, self._heads),
                                dtype=torch.float32, device=device))
            self._states[index] = held
        return held[0][:tokens], held[1][:tokens]

    def _outputs(self, like, out, lse):
        """The merged out and lse, made where not given, checked."""
        import torch
        tokens, heads = self._tokens, self._heads
        if out is None:
            out = like.new_empty(tokens, heads, self._out_dim)
        check_tensor("out", out, 3, (self.dtype,))
        require(tuple(out.shape) == (tokens, heads, self._out_dim),
                f"out must be [{tokens}, {heads}, {self._out_dim}]")
        if lse is None:
            lse = torch.empty(tokens, heads, dtype=torch.float32,
                              device=like.device)
        check_tensor("lse", lse, 2, ("float32",))
        require(tuple(lse.shape) == (tokens, heads),
                f"lse must be [{tokens}, {heads}], got {tuple(lse.shape)}")
        return out, lse

    def _run_levels(self, run_own, q, q_row, inputs, out, lse):
        """Runs the own level (`run_own(out, lse)`) beside the shared ones
        (queries at address q, q_row bytes a row, then `inputs`: caches and
        scales), and merges their states into out and lse."""
        import torch
        # The own level (each request's pages: a decode launch of few CTAs)
        # runs beside the shared levels, on a stream that joins this one
        # before the merge (a fork and join a CUDA graph captures too).
        stream = torch.cuda.current_stream(out.device)
        side = self._side_stream or stream
        side.wait_stream(stream)
        with torch.cuda.stream(side):
            run_own(self._own_out, self._own_lse)
        handle = current_stream(out)
        for kernel, parts, _, level_out, level_lse in self._shared:
            out_row = level_out.stride(0) * level_out.element_size()
            for row, plan in parts:
                kernel.run(plan, [q + row * q_row] + inputs,
                           [level_out.data_ptr() + row * out_row,
                            level_lse.data_ptr() + row * 4 * self._heads],
                           handle)
        stream.wait_stream(side)
        states = []
        for _, _, _, level_out, level_lse in self._shared:
            states += [level_out.data_ptr(), level_lse.data_ptr()]
        states += [self._own_out.data_ptr(), self._own_lse.data_ptr()]
        self._merge.run(self._merge_plan, states,
                        [out.data_ptr(), lse.data_ptr()], handle)
        return (out, lse) if self.return_lse else out

    def _check_pages(self, name, cache):
        if cache.shape[0] < self._pages_needed:
            raise ValueError(f"{name} has {cache.shape[0]} pages, the plan "
                             f"reads page {self._pages_needed - 1}")


class CascadeAttention(_Cascade):
    """Attention over a paged cache whose pages are shared as levels of
    prefixes. Constructed like PagedAttention (no window, sinks, ALiBi or
    mods: a shared prefix's rows belong to many requests, whose positions
    it does not know); plan takes the levels, run the queries [tokens,
    heads, dim] in the levels' row order."""

    def __init__(self, num_qo_heads, num_kv_heads, head_dim, page_size,
                 kv_layout="NHD", dtype="bfloat16", causal=False,
                 softcap=None, scale=None, return_lse=False, kv_dtype=None,
                 kv_scales=None):
        # The last level is each request's own keys: a paged attention
        # whose state is merged with the shared levels'.
        own = PagedAttention(
            num_qo_heads, num_kv_heads, head_dim, page_size, kv_layout,
            dtype, causal=causal, softcap=softcap, scale=scale,
            return_lse=True, kv_dtype=kv_dtype, kv_scales=kv_scales)
        self._setup(own, dict(own._spec, query_layout="ragged",
                              queries_per_request=0, causal=0,
                              shared_keys=1),
                    num_qo_heads, head_dim, page_size, own.dtype, return_lse)
        self.num_qo_heads, self.num_kv_heads = num_qo_heads, num_kv_heads
        self.head_dim = head_dim

    def _plan_own(self, level, host):
        self._own.plan(level[1], level[2], level[3], qo_indptr=level[0])

    def run(self, q, k_cache, v_cache, out=None, lse=None, k_scale=None,
            v_scale=None):
        """Runs on the current stream; with `out` (and `lse`) given, free
        of allocation."""
        require(self._levels is not None, "call plan() before run()",
                RuntimeError)
        if not self._shared:
            result = self._own.run(q, k_cache, v_cache, out=out, lse=lse,
                                   k_scale=k_scale, v_scale=v_scale)
            return result if self.return_lse else result[0]
        # The own level checks q and the caches against its pages; the
        # shared levels' pages are checked here.
        if tuple(q.shape) != (self._tokens, self.num_qo_heads, self.head_dim):
            raise ValueError(f"q must be [{self._tokens}, "
                             f"{self.num_qo_heads}, {self.head_dim}] for "
                             f"this plan, got {tuple(q.shape)}")
        for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
            check_tensor(name, cache, 4, (self._own.kv_dtype,))
            self._check_pages(name, cache)
        out, lse = self._outputs(q, out, lse)
        scales = [s.data_ptr() for s in
                  self._own._scales(k_scale, v_scale, q.device)]
        return self._run_levels(
            lambda o, l: self._own.run(q, k_cache, v_cache, out=o, lse=l,
                                       k_scale=k_scale, v_scale=v_scale),
            q.data_ptr(), q.stride(0) * q.element_size(),
            [k_cache.data_ptr(), v_cache.data_ptr()] + scales, out, lse)


class CascadeMLAAttention(_Cascade):
    """Absorbed MLA over a latent cache whose pages are shared as levels of
    prefixes: MLAAttention's configuration and run arguments, the levels as
    CascadeAttention's plan takes them."""

    def __init__(self, num_heads, head_dim_ckv=512, head_dim_kpe=64,
                 page_size=64, dtype="bfloat16", causal=False, sm_scale=None,
                 return_lse=False, kv_dtype=None):
        own = MLAAttention(num_heads, head_dim_ckv, head_dim_kpe, page_size,
                           dtype, causal=causal, sm_scale=sm_scale,
                           return_lse=True, kv_dtype=kv_dtype)
        self._setup(own, dict(own._spec, query_layout="ragged",
                              queries_per_request=0, causal=0,
                              shared_keys=1),
                    num_heads, head_dim_ckv, page_size, own.dtype, return_lse)

    def _plan_own(self, level, host):
        qo, kv, _, last = host
        kv_lens = [(b - a - 1) * self.page_size + n
                   for a, b, n in zip(kv, kv[1:], last)]
        import torch
        self._own.plan(level[0], level[1], level[2],
                       torch.tensor(kv_lens, dtype=torch.int32))

    def run(self, q_nope, q_pe, ckv_cache, kpe_cache, out=None, lse=None,
            kv_scale=None):
        """Runs on the current stream; with `out` (and `lse`, and an fp8
        cache's kv_scale as a tensor) given, free of allocation."""
        require(self._levels is not None, "call plan() before run()",
                RuntimeError)
        own = self._own
        if not self._shared:
            result = own.run(q_nope, q_pe, ckv_cache, kpe_cache, out=out,
                             lse=lse, kv_scale=kv_scale)
            return result if self.return_lse else result[0]
        self._check_pages("the cache", ckv_cache)
        out, lse = self._outputs(q_nope, out, lse)
        # One query buffer for every level: the own level reads its two
        # column ranges in place.
        if own._parts_of_one(q_nope, q_pe, (self._heads, 1)):
            import torch
            q = torch.as_strided(q_nope, (self._tokens, self._heads, own.dim),
                                 (self._heads * own.dim, own.dim, 1))
        else:
            q = own._q
            q[..., :own.head_dim_ckv].copy_(q_nope)
            q[..., own.head_dim_ckv:].copy_(q_pe)
        nope, pe = q[..., :own.head_dim_ckv], q[..., own.head_dim_ckv:]
        inputs = [ckv_cache.data_ptr()]
        if own._fp8:
            scale = (own._unit_scale if kv_scale is None else
                     scale_tensor("kv_scale", kv_scale, 1, out.device))
            inputs += [scale.data_ptr(), scale.data_ptr()]
        return self._run_levels(
            lambda o, l: own.run(nope, pe, ckv_cache, kpe_cache, out=o,
                                 lse=l, kv_scale=kv_scale),
            q.data_ptr(), self._heads * own.dim * q.element_size(), inputs,
            out, lse)
