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
            # and the host tier's transfers (RadixCache(pool, host_pages)):
            #     for host, dev, load in step.page_transfers: ...
            # then the model writes each token's K/V at step.slot_mapping
            # (pool.append_slots) and attends through the page table:
            wrapper.plan(*step.page_table,
                         qo_indptr=step.tensor("qo_indptr"))
            ...
        # the tokens sampled at step.sample_rows, one per sampler:
        finished = scheduler.commit_tokens(step, tokens, stops)

A cache keeps its pool alive and a scheduler both (in the library as
here), so close() and garbage collection may come in any order. A step's
arrays stay where the library made them: `view()` gives a memoryview,
`page_table` and `tensor()` torch CPU tensors (int32, int64 for ids and
slots; what PagedAttention.plan takes) over the same memory, the
attributes (step.samplers) lists made on first use. commit_tokens takes
the sampled tokens as one array (an int32 tensor or buffer in place), and
commit a list of Samples. Nothing here needs torch or a GPU but `tensor()`
and a device pool.
"""

import array
import ctypes
from collections import deque, namedtuple

from . import _capi
from ._capi import check, lib
from ._step import Step, _Held
from ._tensors import IR_NAMES, check_tensor, current_stream, require
from ._values import INT32, INT64, UINT64, as_flag, as_int, as_sequence
from .kernel import _enum, _live, _optional_text

# The element types a pool holds, by torch's names.
POOL_TYPES = ("bfloat16", "float16", "float32", "float8_e4m3fn",
              "float8_e5m2")

Sample = namedtuple("Sample", "request token stop branch rejected",
                    defaults=(False, 0, False))
Sample.__doc__ = """What the model sampled for one of a step's samplers:
the request's id, the token, whether the engine stops the request there
(an end-of-sequence token, a stop string), which of its n parallel
samples this is (the step's sampler_branches), and, for a row verifying
drafts (step.num_drafts), whether the verification rejected it."""

SchedulerStats = namedtuple(
    "SchedulerStats", [name for name, _ in _capi.SchedulerStats._fields_])
SchedulerStats.__doc__ = """A scheduler's queue (num_waiting, num_running)
and its totals since it was made: prompt tokens of admitted requests
(counted at first admission) and those read from the cache, prefill tokens
computed and recomputed after preemptions, tokens evicted, preemptions,
finished requests, and prompt tokens loaded back from the cache's host
tier."""


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
        pairs, _ = _int_array("copies", flat, ctypes.c_int32, INT32)
        if stream is None and self.memory == "device":
            import torch
            stream = torch.cuda.current_stream().cuda_stream
        stream = getattr(stream, "cuda_stream", stream)
        check(lib.attnc_kv_pool_copy_pages(
            handle, pairs, len(copies),
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
                device_bytes = _DeviceBytes(address, count * size)
                raw = torch.as_tensor(device_bytes, device="cuda")
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
    # A lone token's stride is never stepped over, and torch keeps any
    # stride on a dimension of size 1 (a decode's [1, heads, dim] view of
    # a transposed projection), so it is not the caller's to get right.
    return heads * dim if tensor.shape[0] == 1 else strides[0]


class RadixCache:
    """The prefixes the pool holds, as a radix tree of whole pages: what a
    scheduler reads instead of computing again. With `host_pages` > 0, a
    host tier of that many pages of the pool's geometry under it: eviction
    moves pages there and the scheduler loads them back instead of
    computing them (each step's page_transfers; take_transfers() while no
    scheduler serves the cache)."""

    def __init__(self, pool, host_pages=0):
        if not isinstance(pool, KVPool):
            raise TypeError(f"pool must be an attnc.KVPool, got "
                            f"{type(pool).__name__}")
        host_pages = as_int("host_pages", host_pages, INT64)
        handle = ctypes.c_void_p()
        if host_pages:
            check(lib.attnc_radix_cache_create_with_host_tier(
                pool._live(), host_pages, ctypes.byref(handle)))
        else:
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

    @property
    def host_tokens(self):
        """Tokens kept in the host tier (0 without one)."""
        return lib.attnc_radix_cache_host_tokens(self._live())

    def match_prefix(self, tokens, namespace=0):
        """(matched tokens, pages holding them): the longest cached prefix
        of `tokens` in whole pages within `namespace`. Locks nothing."""
        handle = self._live()
        given, count = _int_array("tokens", tokens, ctypes.c_int32, INT32)
        capacity = count // self._page_size
        pages = (ctypes.c_int32 * max(1, capacity))()
        matched, num_pages = ctypes.c_int64(), ctypes.c_int64(capacity)
        check(lib.attnc_radix_cache_match_prefix(
            handle, given, count, as_int("namespace", namespace, UINT64),
            ctypes.byref(matched), pages, ctypes.byref(num_pages)))
        return matched.value, pages[:num_pages.value]

    def evict(self, tokens):
        """Frees the whole pages covering `tokens` tokens, from the tail of
        the least-recently-used unlocked leaf first, or all that is
        evictable when less is; returns the tokens evicted. With a host
        tier the pages go there while it has room (take_transfers)."""
        evicted = ctypes.c_int64()
        check(lib.attnc_radix_cache_evict(
            self._live(), as_int("tokens", tokens), ctypes.byref(evicted)))
        return evicted.value

    def take_transfers(self):
        """The pages the host tier moved since they were last taken, in
        order, as (host page, device page, direction) triples like a
        step's page_transfers, and forgets them ([] without a tier).

        Whoever drives the cache takes them: a scheduler serving it, at
        each step (taking them here is then an InvalidArgumentError), else
        its user, after evict(): an engine with caches of its own applies
        them in order, one over the pool's caches drops them (the tier
        moved the pages already). What no one took goes to the first step
        of a scheduler made over the cache later."""
        handle = self._live()
        while True:
            count = ctypes.c_int64()
            check(lib.attnc_radix_cache_take_transfers(
                handle, None, ctypes.byref(count)))
            capacity = count.value
            triples = (ctypes.c_int32 * max(1, 3 * capacity))()
            status = lib.attnc_radix_cache_take_transfers(
                handle, triples, ctypes.byref(count))
            # Another thread's evict between the two calls: ask again.
            if status == _capi.OK or count.value <= capacity:
                check(status)
                break
        flat = triples[:3 * count.value]
        return [tuple(flat[i:i + 3]) for i in range(0, len(flat), 3)]

    def close(self):
        if getattr(self, "_handle", None):
            lib.attnc_radix_cache_destroy(self._handle)
            self._handle = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Scheduler:
    """Forms each forward pass over `pool` and `cache`: admits waiting
    requests by the policy ("fcfs", "lpm", "dfs-weight") within the token
    budget and the memory the pool has, chunks long prompts, preempts when
    decodes run out of pages. Settings left None take the library's
    defaults (serving/sched/Scheduler.h explains each). A cache serves one
    scheduler at a time. With cascade=True each step also plans cascade
    attention (Step.cascade_levels): a shared prefix becomes a level's entry
    when cascade_min_sharers requests and cascade_min_shared_tokens tokens
    share it."""

    _FIELDS = dict(_capi.SchedulerConfig._fields_)

    def __init__(self, pool, cache, policy=None, token_budget=None,
                 max_running=None, in_flight_share_threshold=None,
                 protect_waiting_prefixes=None, aging_steps=None,
                 initial_new_token_ratio=None, min_new_token_ratio=None,
                 new_token_ratio_decay=None, clip_max_new_tokens=None,
                 dfs_weight_window=None, speculative_tokens=None,
                 cascade=None, cascade_min_sharers=None,
                 cascade_min_shared_tokens=None):
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
            new_token_ratio_decay=new_token_ratio_decay,
            clip_max_new_tokens=clip_max_new_tokens,
            dfs_weight_window=dfs_weight_window,
            speculative_tokens=speculative_tokens, cascade=cascade,
            cascade_min_sharers=cascade_min_sharers,
            cascade_min_shared_tokens=cascade_min_shared_tokens)
        for name, value in given.items():
            if value is None:
                continue
            if name == "policy":
                value = _enum(name, "attnc_policy", value, _capi.POLICIES)
            elif name in ("protect_waiting_prefixes", "cascade"):
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
        # The steps formed and not committed, oldest first: what
        # commit_tokens checks its step against.
        self._uncommitted = deque()
        # Room for a commit's finished ids (at most one a sampler, and a
        # step has at most max_running), reused: a buffer allocated each
        # step costs the loop more than its size suggests.
        self._finished = array.array("q", bytes(8 * config.max_running))
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
        one) and its number of parallel samples. Raises
        attnc.InvalidArgumentError for an id queued or running already,
        attnc.AttncError ("out of memory") for a request the pool could
        never hold."""
        tokens, count = _int_array("prompt", prompt, ctypes.c_int32, INT32)
        request = _capi.Request()
        lib.attnc_request_init(ctypes.byref(request))
        request.id = as_int("request_id", request_id)
        request.prompt = ctypes.cast(tokens, ctypes.POINTER(ctypes.c_int32))
        request.prompt_len = count
        request.max_tokens = as_int("max_tokens", max_tokens)
        request.priority = as_int("priority", priority, INT32)
        request.cache_namespace = as_int("namespace", namespace, UINT64)
        request.n = as_int("n", n, INT32)
        check(lib.attnc_scheduler_add(self._live(), ctypes.byref(request)))

    def propose(self, request_id, drafts, branch=0):
        """Gives the running request (its `branch`) the drafts of its next
        tokens (a list, a tuple or a tensor of token ids, at most
        speculative_tokens), for its next step to feed and verify
        (step.num_drafts; speculative decoding). Raises
        attnc.InvalidArgumentError when it cannot take them (too many, a
        negative token, a request computing its prompt still) and
        attnc.AttncError ("not found") when no such request runs."""
        tokens, count = _int_array("drafts", drafts, ctypes.c_int32, INT32)
        check(lib.attnc_scheduler_propose(
            self._live(), as_int("request_id", request_id),
            as_int("branch", branch, INT32), ctypes.addressof(tokens),
            count))

    def step(self):
        """Forms the next forward pass: a Step, whose arrays are views of
        the library's own (nothing copied). Whether a step may be formed
        before the last one's samples are committed is the scheduler's
        rule (attnc.InvalidArgumentError when not)."""
        handle = ctypes.c_void_p()
        check(lib.attnc_scheduler_step(self._live(), ctypes.byref(handle)))
        held = _Held(handle)  # destroys the step if what follows fails
        info = _capi.StepInfo()
        check(lib.attnc_step_get_info(handle, ctypes.byref(info)))
        step = Step(held, info)
        self._uncommitted.append(step)
        return step

    def commit(self, samples):
        """Takes one sample for each sampler of the step the scheduler
        awaits samples for, in that order: Samples or (request, token[,
        stop[, branch[, rejected]]]) tuples. Returns the ids of the
        requests that finished (a stop, or max_tokens reached).
        commit_tokens takes the tokens as one array instead."""
        handle = self._live()
        samples = as_sequence("samples", samples)
        arrays = _sample_arrays(samples)
        if arrays is None:  # not all Samples of valid ints: say which
            return self._commit_records(handle, samples)
        requests, tokens, stops, branches, rejected = arrays
        return self._commit_arrays(
            handle, len(samples), requests.buffer_info()[0],
            branches.buffer_info()[0], tokens.buffer_info()[0],
            stops.buffer_info()[0], rejected.buffer_info()[0])

    def commit_tokens(self, step, tokens, stops=None, rejected=None):
        """Commits the tokens the model sampled for `step`'s samplers, one
        each in that order (the step the scheduler awaits samples for): a
        list or tuple of ints, an int32 buffer (a memoryview, an
        array.array("i")) or an int32 CPU tensor, read in place, or any
        other tensor or buffer of ints, converted in one pass. `stops`
        (the same forms; None: none) says which of them stop their request
        there, and `rejected` (the same forms; None: none) which of them
        the verification of drafts rejected (Sample.rejected). The
        requests and branches are the step's own samplers and
        sampler_branches, passed as they are. Returns the ids of the
        requests that finished."""
        handle = self._live()
        # The scheduler can tell samples of the wrong request, not of the
        # wrong step: two steps may sample the same requests.
        if not self._uncommitted or self._uncommitted[0] is not step:
            if not isinstance(step, Step):
                raise TypeError(f"step must be an attnc.Step, got "
                                f"{type(step).__name__}")
            raise ValueError("step is not the step this scheduler awaits "
                             "samples for (the oldest it formed and did "
                             "not commit)")
        count, requests, branches = step._samplers()
        tokens, keep_tokens = _int32_address("tokens", tokens, count)
        stops, keep_stops = ((0, None) if stops is None else
                             _int32_address("stops", stops, count))
        rejected, keep_rejected = (
            (0, None) if rejected is None else
            _int32_address("rejected", rejected, count))
        finished = self._commit_arrays(handle, count, requests, branches,
                                       tokens, stops, rejected)
        del keep_tokens, keep_stops, keep_rejected  # read by the commit
        return finished

    def _commit_arrays(self, handle, count, requests, branches, tokens,
                       stops, rejected):
        """attnc_scheduler_commit_verdict_arrays on addresses (0:
        NULL)."""
        # Taken, not shared: a commit of another thread allocates its own.
        finished = self.__dict__.pop("_finished", None)
        if finished is None or len(finished) < count:
            finished = array.array("q", bytes(8 * max(1, count)))
        done = ctypes.c_int64()
        try:
            check(lib.attnc_scheduler_commit_verdict_arrays(
                handle, count, requests or None, branches or None,
                tokens or None, stops or None, rejected or None,
                finished.buffer_info()[0], ctypes.byref(done)))
            self._committed()
            return finished[:done.value].tolist()
        finally:
            self._finished = finished

    def _commit_records(self, handle, samples):
        """commit() one attnc_sample at a time, each field checked by
        name: the slow path, taken when some sample is not a 4-tuple of
        valid ints (so that the error names it)."""
        records = (_capi.Sample * max(1, len(samples)))()
        for k, sample in enumerate(samples):
            if not isinstance(sample, tuple) or len(sample) not in range(2, 6):
                raise TypeError(f"samples[{k}] must be an attnc.Sample or a "
                                f"(request, token[, stop[, branch[, "
                                f"rejected]]]) tuple, got {sample!r}")
            request, token = sample[0], sample[1]
            stop = sample[2] if len(sample) >= 3 else False
            branch = sample[3] if len(sample) >= 4 else 0
            rejected = sample[4] if len(sample) == 5 else False
            records[k].request = as_int(f"samples[{k}].request", request)
            records[k].token = as_int(f"samples[{k}].token", token, INT32)
            records[k].stop = as_flag(f"samples[{k}].stop", stop)
            records[k].branch = as_int(f"samples[{k}].branch", branch, INT32)
            records[k].rejected = as_flag(f"samples[{k}].rejected", rejected)
        finished = (ctypes.c_int64 * max(1, len(samples)))()
        count = ctypes.c_int64()
        check(lib.attnc_scheduler_commit(handle, records, len(samples),
                                         finished, ctypes.byref(count)))
        self._committed()
        return finished[:count.value]

    def _committed(self):
        """The oldest step's samples went in (a commit with no step
        formed takes none)."""
        if self._uncommitted:
            self._uncommitted.popleft()

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
        locked prefixes) goes back to the pool and the cache; the steps it
        awaited samples for are the caller's alone."""
        if getattr(self, "_handle", None):
            lib.attnc_scheduler_destroy(self._handle)
            self._handle = None
            self._uncommitted.clear()

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _sample_arrays(samples):
    """(requests, tokens, stops, branches, rejected) as array.arrays of
    int64 and int32, converted a column at a time (array.array refuses a
    value that does not fit), when every sample is an attnc.Sample or
    every one a tuple of four (not rejected), whose values fit and whose
    stops and rejections are flags; None otherwise."""
    width = len(Sample._fields)
    if all(type(s) is Sample for s in samples):
        columns = tuple(zip(*samples)) or ((),) * width
    elif all(isinstance(s, tuple) and len(s) == width - 1 for s in samples):
        columns = (tuple(zip(*samples)) or ((),) * (width - 1)) + (
            (0,) * len(samples),)
    else:
        return None
    try:
        arrays = tuple(array.array(code, column) for code, column in
                       zip("qiiii", columns))
    except (TypeError, OverflowError):
        return None
    flags = {0, 1}
    return arrays if set(arrays[2]) <= flags and set(arrays[4]) <= flags \
        else None


# An int32 buffer read in place: memoryview formats of a native int32.
_INT32_FORMATS = {"i", "=i", "<i", "@i"} | (
    {"l", "=l", "<l", "@l"} if ctypes.sizeof(ctypes.c_long) == 4 else set())


def _int32_address(name, values, count):
    """(address, what keeps it alive) of `count` int32 `values` for C: an
    int32 CPU tensor or a contiguous int32 buffer in place, a list, a
    tuple or another tensor or buffer of ints converted in one pass (each
    value checked to fit: ctypes would wrap one that does not)."""
    if (type(values) is memoryview and values.format == "i" and
            values.ndim == 1 and values.c_contiguous and not values.readonly):
        _check_count(name, len(values), count)  # a step's view: in place
        if not len(values):
            return 0, None
        keep = ctypes.c_char.from_buffer(values)  # its first byte
        return ctypes.addressof(keep), keep
    if hasattr(values, "data_ptr") and hasattr(values, "dtype"):
        kind = getattr(values.device, "type", str(values.device))
        contiguous = getattr(values, "is_contiguous", lambda: True)()
        if (str(values.dtype) == "torch.int32" and kind == "cpu" and
                contiguous and len(values.shape) == 1):
            _check_count(name, values.shape[0], count)
            return values.data_ptr(), values
        values = values.tolist()  # another type or device: converted
    elif not isinstance(values, (list, tuple)):
        try:
            view = memoryview(values)
        except TypeError:
            raise TypeError(f"{name} must be a list or tuple of ints, an "
                            f"int32 buffer or a tensor, got "
                            f"{type(values).__name__}") from None
        if view.format in _INT32_FORMATS and view.c_contiguous:
            view = view.cast("B").cast("i")
            _check_count(name, len(view), count)
            if not len(view):
                return 0, None
            if view.readonly:  # ctypes takes writable buffers only
                view = memoryview(bytearray(view))
            keep = ctypes.c_char.from_buffer(view)  # its first byte
            return ctypes.addressof(keep), keep
        values = view.tolist()
    _check_count(name, len(values), count)
    try:
        converted = array.array("i", values)
    except (TypeError, OverflowError):
        for i, value in enumerate(values):
            as_int(f"{name}[{i}]", value, INT32)
        raise
    return converted.buffer_info()[0], converted


def _check_count(name, length, count):
    if length != count:
        raise ValueError(f"{name} has {length} entries, the step has "
                         f"{count} samplers")


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
