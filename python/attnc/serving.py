"""The serving runtime from Python: a paged KV pool, a radix prefix cache
over it, and a cache-aware scheduler that forms each forward pass (the C
API's attnc_kv_pool, attnc_radix_cache and attnc_scheduler).

    pool = attnc.KVPool(num_pages=4096, page_size=16, num_kv_heads=8,
                        head_dim=128, memory="device")
    cache = attnc.RadixCache(pool)
    scheduler = attnc.Scheduler(pool, cache, policy="lpm")
    scheduler.add(0, prompt_tokens, max_tokens=256)
    while not scheduler.idle:
        step = scheduler.step()
        if step.num_requests:
            # caches of the engine's own first get the step's page copies
            # in every layer (the pool's own caches have them already):
            #     for src, dst in step.page_copies: copy page src over dst
            # then the model writes each token's K/V at step.slot_mapping
            # (pool.append_slots) and attends through the page table:
            wrapper.plan(*step.page_table,
                         qo_indptr=step.tensor("qo_indptr"))
            ...
        finished = scheduler.commit(
            [attnc.Sample(r, token, stop) for r, token, stop in sampled])

A cache keeps its pool alive and a scheduler both (in the library as
here), so close() and garbage collection may come in any order. A step is a
copy of the scheduler's arrays as Python lists of ints; `page_table` and
`tensor()` give them as torch CPU tensors (int32, int64 for ids and slots),
the types PagedAttention.plan takes. Nothing here needs torch or a GPU but
those two and a device pool.
"""

import ctypes
from collections import namedtuple

from . import _capi
from ._capi import check, lib
from ._tensors import IR_NAMES, check_tensor, current_stream, require
from ._values import INT32, INT64, UINT64, as_flag, as_int, as_sequence
from .kernel import _enum, _live, _optional_text

# The element types a pool holds, by torch's names.
POOL_TYPES = ("bfloat16", "float16", "float32", "float8_e4m3fn",
              "float8_e5m2")

Sample = namedtuple("Sample", "request token stop branch",
                    defaults=(False, 0))
Sample.__doc__ = """What the model sampled for one of a step's samplers:
the request's id, the token, whether the engine stops the request there
(an end-of-sequence token, a stop string), and which of its n parallel
samples this is (the step's sampler_branches)."""

SchedulerStats = namedtuple(
    "SchedulerStats", [name for name, _ in _capi.SchedulerStats._fields_])
SchedulerStats.__doc__ = """A scheduler's queue (num_waiting, num_running)
and its totals since it was made: prompt tokens of admitted requests
(counted at first admission) and those read from the cache, prefill tokens
computed and recomputed after preemptions, tokens evicted, preemptions,
finished requests."""


def _int_array(name, values, ctype, bounds):
    """A ctypes array of `values` (a list, a tuple, or anything with
    tolist()), each checked to fit `ctype`: ctypes would wrap one that
    does not. Returns the array (at least one entry) and the count."""
    if hasattr(values, "tolist") and not isinstance(values, (list, tuple)):
        values = values.tolist()
    values = as_sequence(name, values)
    lo, hi = bounds
    if not all(type(v) is int and lo <= v <= hi for v in values):
        values = [as_int(f"{name}[{i}]", v, bounds)
                  for i, v in enumerate(values)]
    return (ctype * max(1, len(values)))(*values), len(values)


def _list(pointer, count):
    return pointer[:count] if count else []


class KVPool:
    """Pages of keys and values in the layout the attention kernels read:
    a key and a value cache, each [num_pages, page_size, num_kv_heads,
    head_dim] ("NHD") or [num_pages, num_kv_heads, page_size, head_dim]
    ("HND"), for each of num_layers layers over the same pages (a page
    copy copies it in every layer). memory: "host", "device" (needs a GPU)
    or "accounting" (no storage: page accounting only, for scheduling
    without a model, or beside caches the engine keeps itself)."""

    def __init__(self, num_pages, page_size=16, num_kv_heads=1, head_dim=128,
                 dtype="bfloat16", kv_layout="NHD", memory="host",
                 cache_dir=None, num_layers=1):
        require(isinstance(kv_layout, str) and kv_layout.isupper() and
                kv_layout.lower() in _capi.PAGE_ORDERS,
                f"kv_layout must be "
                f"{' or '.join(o.upper() for o in _capi.PAGE_ORDERS)}, got "
                f"{kv_layout!r}")
        dtype = str(dtype).replace("torch.", "")
        require(dtype in POOL_TYPES, f"dtype must be one of "
                f"{', '.join(POOL_TYPES)}, got {dtype}", TypeError)
        require(isinstance(memory, str) and memory in _capi.KV_MEMORY,
                f"memory must be one of {', '.join(_capi.KV_MEMORY)}, got "
                f"{memory!r}")
        config = _capi.KVPoolConfig()
        lib.attnc_kv_pool_config_init(ctypes.byref(config))
        config.num_pages = as_int("num_pages", num_pages)
        config.page_size = as_int("page_size", page_size)
        config.num_kv_heads = as_int("num_kv_heads", num_kv_heads)
        config.head_dim = as_int("head_dim", head_dim)
        config.dtype = _capi.DTYPES[IR_NAMES[dtype]]
        config.page_order = _capi.PAGE_ORDERS[kv_layout.lower()]
        config.memory = _capi.KV_MEMORY[memory]
        cache_dir = _optional_text("cache_dir", cache_dir)
        config.cache_dir = cache_dir
        config.num_layers = as_int("num_layers", num_layers)
        handle = ctypes.c_void_p()
        check(lib.attnc_kv_pool_create(ctypes.byref(config),
                                       ctypes.byref(handle)))
        self._handle = handle
        self.num_kv_heads, self.head_dim = config.num_kv_heads, config.head_dim
        self.dtype, self.kv_layout, self.memory = dtype, kv_layout, memory

    def _live(self):
        return _live(self._handle, "pool")

    @property
    def num_pages(self):
        return lib.attnc_kv_pool_num_pages(self._live())

    @property
    def page_size(self):
        return lib.attnc_kv_pool_page_size(self._live())

    @property
    def num_free_pages(self):
        return lib.attnc_kv_pool_num_free_pages(self._live())

    @property
    def num_layers(self):
        return lib.attnc_kv_pool_num_layers(self._live())

    @property
    def key_cache(self):
        """Address of layer 0's key cache (device for a device pool, host
        for a host pool); 0 for an accounting pool."""
        return lib.attnc_kv_pool_key_cache(self._live())

    @property
    def value_cache(self):
        return lib.attnc_kv_pool_value_cache(self._live())

    def layer_caches(self, layer):
        """(key cache, value cache) addresses of layer `layer`;
        attnc.InvalidArgumentError for a layer outside the pool."""
        keys, values = ctypes.c_uint64(), ctypes.c_uint64()
        check(lib.attnc_kv_pool_layer_caches(
            self._live(), as_int("layer", layer), ctypes.byref(keys),
            ctypes.byref(values)))
        return keys.value, values.value

    def set_stream(self, stream):
        """The stream a device pool makes its own page copies on (a
        scheduler's fork copies, in every layer, never synchronized): a
        torch.cuda.Stream, a raw CUstream address, or None for the legacy
        default stream (the default). Give it the engine's stream."""
        stream = getattr(stream, "cuda_stream", stream)
        stream = as_int("stream", stream or 0, UINT64)
        check(lib.attnc_kv_pool_set_stream(self._live(),
                                           ctypes.c_void_p(stream or None)))

    def copy_pages(self, copies, stream=None):
        """Copies each (source, destination) page of `copies` (a step's
        page_copies), in order and in every layer: a host pool at once, a
        device pool on `stream` (default: torch's current stream) without
        synchronizing, an accounting pool not at all."""
        handle = self._live()
        copies = as_sequence("copies", copies)
        flat = []
        for i, pair in enumerate(copies):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"copies[{i}] must be a (source, destination)"
                                f" pair, got {pair!r}")
            flat.extend(pair)
        array, _ = _int_array("copies", flat, ctypes.c_int32, INT32)
        if stream is None and self.memory == "device":
            import torch
            stream = torch.cuda.current_stream().cuda_stream
        stream = getattr(stream, "cuda_stream", stream)
        check(lib.attnc_kv_pool_copy_pages(
            handle, array, len(copies),
            ctypes.c_void_p(as_int("stream", stream or 0, UINT64) or None)))

    def caches(self, layer=0):
        """Layer `layer`'s key and value caches as torch tensors viewing
        the pool's memory (on the GPU for a device pool, the CPU for a host
        pool), in the shapes PagedAttention.run takes. They stay valid
        while the pool lives."""
        require(self.memory != "accounting", "an accounting pool keeps no "
                "keys or values")
        import torch
        dtype = getattr(torch, self.dtype)
        size = torch.empty((), dtype=dtype).element_size()
        shape = [self.num_pages, self.page_size, self.num_kv_heads,
                 self.head_dim]
        if self.kv_layout == "HND":
            shape[1], shape[2] = shape[2], shape[1]
        count = 1
        for extent in shape:
            count *= extent
        views = []
        for address in self.layer_caches(layer):
            if self.memory == "device":
                # The CUDA array interface has no bf16 or fp8: bytes, then
                # reinterpreted.
                array = _DeviceBytes(address, count * size)
                raw = torch.as_tensor(array, device="cuda")
            else:
                raw = torch.frombuffer(
                    (ctypes.c_uint8 * (count * size)).from_address(address),
                    dtype=torch.uint8)
            views.append(raw.view(dtype).view(shape))
        return tuple(views)

    def append_slots(self, keys, values, slot_mapping, layer=0):
        """Writes keys and values [tokens, num_kv_heads, head_dim] (tensors
        of the pool's dtype, on the CPU for a host pool, on the GPU for a
        device pool, rows of one token contiguous) at the int64 slots
        `slot_mapping` (a step's: a tensor on the same device, or for a
        host pool a list) of layer `layer`; a negative slot is skipped. A
        device pool writes on the current stream without synchronizing."""
        handle = self._live()
        layer = as_int("layer", layer)
        require(self.memory != "accounting", "an accounting pool keeps no "
                "keys or values to append to")
        device = self.memory == "device"
        shape = (self.num_kv_heads, self.head_dim)
        strides = []
        for name, tensor in (("keys", keys), ("values", values)):
            check_tensor(name, tensor, 3, (self.dtype,), cuda=device)
            if not device:
                _require_cpu(name, tensor)
            if tuple(tensor.shape[1:]) != shape:
                raise ValueError(f"{name} must be [tokens, "
                                 f"{self.num_kv_heads}, {self.head_dim}], "
                                 f"got {tuple(tensor.shape)}")
            strides.append(_token_stride(name, tensor))
        tokens = keys.shape[0]
        require(values.shape[0] == tokens, f"keys has {tokens} tokens, "
                f"values {values.shape[0]}")
        keep = None
        if isinstance(slot_mapping, (list, tuple)) and not device:
            keep, count = _int_array("slot_mapping", slot_mapping,
                                     ctypes.c_int64, INT64)
            slots = ctypes.addressof(keep)
        else:
            check_tensor("slot_mapping", slot_mapping, 1, ("int64",),
                         cuda=device)
            if not device:
                _require_cpu("slot_mapping", slot_mapping)
            count, slots = slot_mapping.shape[0], slot_mapping.data_ptr()
        require(count == tokens, f"slot_mapping has {count} slots for "
                f"{tokens} tokens")
        stream = current_stream(keys) if device else 0
        check(lib.attnc_kv_pool_append_layer_slots(
            handle, layer, as_int("keys", keys.data_ptr(), UINT64),
            as_int("values", values.data_ptr(), UINT64), strides[0],
            strides[1], slots, tokens, ctypes.c_void_p(stream or None)))
        del keep  # the slots were read

    def close(self):
        """Gives up the pool's handle; caches and schedulers over it keep
        the pool until they go."""
        if getattr(self, "_handle", None):
            lib.attnc_kv_pool_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if not self._handle:
            return "KVPool(closed)"
        return (f"KVPool({self.num_pages} pages of {self.page_size}, "
                f"{self.num_kv_heads}x{self.head_dim} {self.dtype} "
                f"{self.kv_layout}, {self.memory}, {self.num_free_pages} "
                f"free)")


class _DeviceBytes:
    """`size` bytes of device memory at `address`, as the CUDA array
    interface describes them to torch."""

    def __init__(self, address, size):
        self.__cuda_array_interface__ = {
            "shape": (size,), "typestr": "|u1", "data": (address, False),
            "version": 3, "strides": None}


def _require_cpu(name, tensor):
    kind = getattr(tensor.device, "type", str(tensor.device))
    if kind != "cpu":
        raise ValueError(f"{name} must be on the CPU for a host pool, got "
                         f"{tensor.device}")


def _token_stride(name, tensor):
    """Elements from one token's row to the next; a token's heads must be
    packed (strides head_dim, 1)."""
    stride = getattr(tensor, "stride", None)
    heads, dim = tensor.shape[1], tensor.shape[2]
    if stride is None:  # no strides: taken as contiguous
        return heads * dim
    strides = tuple(stride())
    if strides[2] != 1 or (heads > 1 and strides[1] != dim):
        raise ValueError(f"{name}'s rows must be packed (strides [*, {dim}, "
                         f"1]), got {list(strides)}")
    return strides[0]


class RadixCache:
    """The prefixes the pool holds, as a radix tree of whole pages: what a
    scheduler reads instead of computing again."""

    def __init__(self, pool):
        if not isinstance(pool, KVPool):
            raise TypeError(f"pool must be an attnc.KVPool, got "
                            f"{type(pool).__name__}")
        handle = ctypes.c_void_p()
        check(lib.attnc_radix_cache_create(pool._live(),
                                           ctypes.byref(handle)))
        self._handle = handle
        self.pool = pool
        self._page_size = pool.page_size

    def _live(self):
        return _live(self._handle, "cache")

    @property
    def cached_tokens(self):
        return lib.attnc_radix_cache_cached_tokens(self._live())

    @property
    def evictable_tokens(self):
        """Cached tokens no running request has locked."""
        return lib.attnc_radix_cache_evictable_tokens(self._live())

    def match_prefix(self, tokens, namespace=0):
        """(matched tokens, pages holding them): the longest cached prefix
        of `tokens` in whole pages within `namespace`. Locks nothing."""
        handle = self._live()
        array, count = _int_array("tokens", tokens, ctypes.c_int32, INT32)
        capacity = count // self._page_size
        pages = (ctypes.c_int32 * max(1, capacity))()
        matched, num_pages = ctypes.c_int64(), ctypes.c_int64(capacity)
        check(lib.attnc_radix_cache_match_prefix(
            handle, array, count, as_int("namespace", namespace, UINT64),
            ctypes.byref(matched), pages, ctypes.byref(num_pages)))
        return matched.value, pages[:num_pages.value]

    def evict(self, tokens):
        """Frees the whole pages covering `tokens` tokens, from the tail of
        the least-recently-used unlocked leaf first, or all that is
        evictable when less is; returns the tokens evicted."""
        evicted = ctypes.c_int64()
        check(lib.attnc_radix_cache_evict(
            self._live(), as_int("tokens", tokens), ctypes.byref(evicted)))
        return evicted.value

    def close(self):
        if getattr(self, "_handle", None):
            lib.attnc_radix_cache_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# Step arrays of request ids and slots are int64, the others int32.
_INT64_ARRAYS = ("requests", "slot_mapping", "samplers", "admitted",
                 "preempted")
_ARRAYS = ("requests", "branches", "qo_indptr", "tokens", "positions",
           "slot_mapping", "kv_indptr", "kv_indices", "kv_last_page_len",
           "samplers", "sampler_branches", "sample_rows", "admitted",
           "preempted", "page_copies")


class Step:
    """One forward pass the scheduler formed: requests in batch order,
    decodes (the first num_decodes) first. Request i feeds tokens
    [qo_indptr[i], qo_indptr[i+1]) at `positions`, whose keys and values
    go to `slot_mapping`, and reads the pages kv_indices[kv_indptr[i] :
    kv_indptr[i+1]], the last holding kv_last_page_len[i] tokens. The
    requests in `samplers` sample from the logits of `sample_rows`: commit
    takes one Sample for each, in that order. A request of n > 1 parallel
    samples forks when its prompt completes: that pass samples its n
    branches (`sampler_branches`) from one row, and later passes feed each
    branch as a request of its own (`branches`). Every array is a list of
    ints, but `page_copies`: (source, destination) page pairs to copy, in
    order and in every layer, before the step's keys and values are
    written (vLLM's blocks_to_copy): a fork's copy of its prompt's partial
    last page. The scheduler's pool made them already; an engine whose
    caches are its own must apply them (KVPool.copy_pages does it for a
    pool's caches; twice is harmless)."""

    __slots__ = _ARRAYS + ("num_decodes", "prefill_tokens", "decode_tokens")

    def __init__(self, info):
        n, t = info.num_requests, info.num_tokens
        self.requests = _list(info.requests, n)
        self.branches = _list(info.branches, n)
        self.num_decodes = info.num_decodes
        self.qo_indptr = _list(info.qo_indptr, n + 1)
        self.tokens = _list(info.tokens, t)
        self.positions = _list(info.positions, t)
        self.slot_mapping = _list(info.slot_mapping, t)
        self.kv_indptr = _list(info.page_indptr, n + 1)
        self.kv_indices = _list(info.page_indices, info.num_page_indices)
        self.kv_last_page_len = _list(info.last_page_len, n)
        self.samplers = _list(info.samplers, info.num_samplers)
        self.sampler_branches = _list(info.sampler_branches,
                                      info.num_samplers)
        self.sample_rows = _list(info.sample_rows, info.num_samplers)
        self.admitted = _list(info.admitted, info.num_admitted)
        self.preempted = _list(info.preempted, info.num_preempted)
        self.prefill_tokens = info.prefill_tokens
        self.decode_tokens = info.decode_tokens
        flat = _list(info.page_copies, 2 * info.num_page_copies)
        self.page_copies = list(zip(flat[0::2], flat[1::2]))

    @property
    def num_requests(self):
        return len(self.requests)

    @property
    def num_tokens(self):
        return len(self.tokens)

    def tensor(self, name):
        """The array `name` as a torch CPU tensor: int64 for request ids
        and slots, int32 for the others (what PagedAttention.plan takes);
        page_copies as [copies, 2]."""
        if name not in _ARRAYS:
            raise ValueError(f"a step has no array {name!r} (it has "
                             f"{', '.join(_ARRAYS)})")
        try:
            import torch
        except ImportError:
            raise ImportError(f"Step.tensor makes torch tensors: install "
                              f"PyTorch, or read step.{name}, a list"
                              ) from None
        dtype = torch.int64 if name in _INT64_ARRAYS else torch.int32
        if name == "page_copies":
            return torch.tensor(self.page_copies, dtype=dtype).reshape(-1, 2)
        return torch.tensor(getattr(self, name), dtype=dtype)

    @property
    def page_table(self):
        """(kv_indptr, kv_indices, kv_last_page_len) as int32 CPU tensors:
        PagedAttention.plan's first three arguments."""
        return tuple(self.tensor(name) for name in
                     ("kv_indptr", "kv_indices", "kv_last_page_len"))

    def __repr__(self):
        return (f"Step({self.num_requests} requests, {self.num_decodes} "
                f"decoding, {self.prefill_tokens} prefill + "
                f"{self.decode_tokens} decode tokens, admitted "
                f"{self.admitted}, preempted {self.preempted})")


class Scheduler:
    """Forms each forward pass over `pool` and `cache`: admits waiting
    requests by the policy ("fcfs", "lpm", "dfs-weight") within the token
    budget and the memory the pool has, chunks long prompts, preempts when
    decodes run out of pages. Settings left None take the library's
    defaults (serving/sched/Scheduler.h explains each). A cache serves one
    scheduler at a time."""

    _FIELDS = dict(_capi.SchedulerConfig._fields_)

    def __init__(self, pool, cache, policy=None, token_budget=None,
                 max_running=None, in_flight_share_threshold=None,
                 protect_waiting_prefixes=None, aging_steps=None,
                 initial_new_token_ratio=None, min_new_token_ratio=None,
                 new_token_ratio_decay=None):
        if not isinstance(pool, KVPool):
            raise TypeError(f"pool must be an attnc.KVPool, got "
                            f"{type(pool).__name__}")
        if not isinstance(cache, RadixCache):
            raise TypeError(f"cache must be an attnc.RadixCache, got "
                            f"{type(cache).__name__}")
        config = _capi.SchedulerConfig()
        lib.attnc_scheduler_config_init(ctypes.byref(config))
        given = dict(
            policy=policy, token_budget=token_budget, max_running=max_running,
            in_flight_share_threshold=in_flight_share_threshold,
            protect_waiting_prefixes=protect_waiting_prefixes,
            aging_steps=aging_steps,
            initial_new_token_ratio=initial_new_token_ratio,
            min_new_token_ratio=min_new_token_ratio,
            new_token_ratio_decay=new_token_ratio_decay)
        for name, value in given.items():
            if value is None:
                continue
            if name == "policy":
                value = _enum(name, value, _capi.POLICIES)
            elif name == "protect_waiting_prefixes":
                value = as_flag(name, value)
            elif self._FIELDS[name] is ctypes.c_double:
                value = _as_real(name, value)
            else:
                value = as_int(name, value)
            setattr(config, name, value)
        handle = ctypes.c_void_p()
        check(lib.attnc_scheduler_create(ctypes.byref(config), pool._live(),
                                         cache._live(), ctypes.byref(handle)))
        self._handle = handle
        self.pool, self.cache = pool, cache
        self.policy = {v: k for k, v in _capi.POLICIES.items()}.get(
            config.policy, config.policy)

    def _live(self):
        return _live(self._handle, "scheduler")

    def add(self, request_id, prompt, max_tokens=1, priority=0,
            namespace=0, n=1):
        """Queues a request: its prompt's token ids (a list, a tuple or a
        tensor), the most tokens it may generate, its priority (higher goes
        first), its cache namespace (requests share cached KV only within
        one) and its number of parallel samples. Raises attnc.InvalidArgumentError for an id queued or
        running already, attnc.AttncError ("out of memory") for a request
        the pool could never hold."""
        array, count = _int_array("prompt", prompt, ctypes.c_int32, INT32)
        request = _capi.Request()
        lib.attnc_request_init(ctypes.byref(request))
        request.id = as_int("request_id", request_id)
        request.prompt = ctypes.cast(array, ctypes.POINTER(ctypes.c_int32))
        request.prompt_len = count
        request.max_tokens = as_int("max_tokens", max_tokens)
        request.priority = as_int("priority", priority, INT32)
        request.cache_namespace = as_int("namespace", namespace, UINT64)
        request.n = as_int("n", n, INT32)
        check(lib.attnc_scheduler_add(self._live(), ctypes.byref(request)))

    def step(self):
        """Forms the next forward pass. The last step's samples must have
        been committed."""
        handle = ctypes.c_void_p()
        check(lib.attnc_scheduler_step(self._live(), ctypes.byref(handle)))
        try:
            info = _capi.StepInfo()
            check(lib.attnc_step_get_info(handle, ctypes.byref(info)))
            return Step(info)
        finally:
            lib.attnc_step_destroy(handle)

    def commit(self, samples):
        """Takes one sample for each of the last step's samplers, in that
        order: Samples or (request, token[, stop[, branch]]) tuples. Returns the ids
        of the requests that finished (a stop, or max_tokens reached)."""
        samples = as_sequence("samples", samples)
        array = (_capi.Sample * max(1, len(samples)))()
        for k, sample in enumerate(samples):
            if not isinstance(sample, tuple) or len(sample) not in (2, 3, 4):
                raise TypeError(f"samples[{k}] must be an attnc.Sample or a "
                                f"(request, token[, stop[, branch]]) tuple, "
                                f"got {sample!r}")
            request, token = sample[0], sample[1]
            stop = sample[2] if len(sample) >= 3 else False
            branch = sample[3] if len(sample) == 4 else 0
            array[k].request = as_int(f"samples[{k}].request", request)
            array[k].token = as_int(f"samples[{k}].token", token, INT32)
            array[k].stop = as_flag(f"samples[{k}].stop", stop)
            array[k].branch = as_int(f"samples[{k}].branch", branch, INT32)
        finished = (ctypes.c_int64 * max(1, len(samples)))()
        count = ctypes.c_int64()
        check(lib.attnc_scheduler_commit(self._live(), array, len(samples),
                                         finished, ctypes.byref(count)))
        return finished[:count.value]

    def abort(self, request_id):
        """Drops a queued or running request; attnc.AttncError ("not
        found") when there is none of that id."""
        check(lib.attnc_scheduler_abort(
            self._live(), as_int("request_id", request_id)))

    @property
    def idle(self):
        """Nothing waits and nothing runs."""
        idle = lib.attnc_scheduler_idle(self._live())
        if idle < 0:
            raise _capi.error(_capi.INVALID_ARGUMENT)
        return bool(idle)

    def stats(self):
        """A SchedulerStats of the queue and the totals."""
        stats = _capi.SchedulerStats()
        check(lib.attnc_scheduler_get_stats(self._live(),
                                            ctypes.byref(stats)))
        return SchedulerStats(*(getattr(stats, name)
                                for name in SchedulerStats._fields))

    @property
    def num_waiting(self):
        return self.stats().num_waiting

    @property
    def num_running(self):
        return self.stats().num_running

    def close(self):
        """Destroys the scheduler: what its running requests hold (pages,
        locked prefixes) goes back to the pool and the cache."""
        if getattr(self, "_handle", None):
            lib.attnc_scheduler_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _as_real(name, value):
    """A float for a C double: bools and non-numbers are refused; NaN and
    out-of-range values pass for the library to judge."""
    import numbers
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got "
                        f"{type(value).__name__}")
    return float(value)


__all__ = ["KVPool", "RadixCache", "Sample", "Scheduler", "SchedulerStats",
           "Step"]
