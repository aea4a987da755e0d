"""The serving runtime from Python (attnc.KVPool, RadixCache, Scheduler)
without a GPU: accounting and host pools, every step's arrays checked
against the requests' own tokens, preemption, lifetimes and errors. The
device pool's test is marked gpu and skips visibly without one."""

import ctypes
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import attnc
from attnc import _capi
from attnc.errors import AttncError, InvalidArgumentError
from fakes import FakeDevice

PACKAGE_DIR = Path(__file__).resolve().parents[1]


class HostTensor:
    """A CPU array with what attnc's checks read of a torch tensor, over
    ctypes memory (torch is not needed here)."""

    CTYPES = {"float32": ctypes.c_float, "int64": ctypes.c_int64,
              "bfloat16": ctypes.c_uint16, "int32": ctypes.c_int32}

    def __init__(self, shape, dtype="float32", values=None, strides=None,
                 device="cpu"):
        self.shape = tuple(shape)
        self.dtype = f"torch.{dtype}"
        self.device = FakeDevice(device)
        count = 1
        for size in self.shape:
            count *= size
        if strides is not None:  # room for the padded rows
            count = max(count, self.shape[0] * strides[0])
        self._strides = strides
        self.buffer = (self.CTYPES[dtype] * max(1, count))()
        for i, value in enumerate(values or []):
            self.buffer[i] = value

    def data_ptr(self):
        return ctypes.addressof(self.buffer)

    def stride(self):
        if self._strides is not None:
            return self._strides
        strides, step = [], 1
        for size in reversed(self.shape):
            strides.insert(0, step)
            step *= size
        return tuple(strides)

    def is_contiguous(self):
        return self._strides is None

    def tolist(self):
        return list(self.buffer)


def serve(scheduler, answers, max_steps=10000, check=None):
    """Drives `scheduler` to idle with a stand-in model that samples
    request r's n-th token as 10**6 + 1000 r + n and stops after
    answers[r] tokens; `check(step, sampled)` sees every step before its
    commit. Returns the steps, the tokens sampled per request and the
    finished ids in order."""
    sampled = {r: [] for r in answers}
    steps, finished = [], []
    while not scheduler.idle:
        assert len(steps) < max_steps, "the scheduler never went idle"
        step = scheduler.step()
        if check:
            check(step, sampled)
        samples = []
        for r in step.samplers:
            token = 10**6 + 1000 * r + len(sampled[r])
            sampled[r].append(token)
            samples.append(attnc.Sample(r, token,
                                        len(sampled[r]) >= answers[r]))
        finished += scheduler.commit(samples)
        steps.append(step)
    return steps, sampled, finished


def check_step(prompts, page_size):
    """A check for serve(): every array of the step agrees with the
    requests' tokens (prompt, then what was sampled) and the page table."""
    def check(step, sampled):
        n = step.num_requests
        assert len(step.qo_indptr) == n + 1 and step.qo_indptr[0] == 0
        assert step.qo_indptr[-1] == step.num_tokens
        assert len(step.positions) == len(step.slot_mapping) == step.num_tokens
        assert step.prefill_tokens + step.decode_tokens == step.num_tokens
        assert len(step.kv_indptr) == n + 1
        assert step.kv_indptr[-1] == len(step.kv_indices)
        assert len(step.kv_last_page_len) == n
        assert step.decode_tokens == step.num_decodes
        for i, r in enumerate(step.requests):
            sequence = prompts[r] + sampled[r]
            rows = range(step.qo_indptr[i], step.qo_indptr[i + 1])
            pages = step.kv_indices[step.kv_indptr[i]:step.kv_indptr[i + 1]]
            if i < step.num_decodes:
                assert len(rows) == 1
                assert step.positions[rows[0]] == len(sequence) - 1
            for row in rows:
                p = step.positions[row]
                assert step.tokens[row] == sequence[p], (r, p)
                assert step.slot_mapping[row] == (
                    pages[p // page_size] * page_size + p % page_size)
            # The page table covers the keys up to this step's last token.
            keys = step.positions[rows[-1]] + 1
            assert len(pages) == -(-keys // page_size)
            assert step.kv_last_page_len[i] == keys - (len(pages) - 1) * \
                page_size
            if r in step.samplers:
                k = step.samplers.index(r)
                assert step.sample_rows[k] == rows[-1]
                assert keys == len(sequence), "samples once all is fed"
    return check


def make(pages, page_size=4, memory="accounting", **config):
    pool = attnc.KVPool(pages, page_size=page_size, memory=memory)
    cache = attnc.RadixCache(pool)
    return pool, cache, attnc.Scheduler(pool, cache, **config)


def workload():
    """Requests sharing a system prompt, one in another namespace, with
    priorities; {id: prompt}, {id: answer length}."""
    system = list(range(1, 11))
    prompts, answers = {}, {}
    for r in range(10):
        prompts[r] = system + [100 + 10 * r + i for i in range(1 + r % 4)]
        answers[r] = 2 + (r * 5) % 7
    return prompts, answers


def test_the_package_exports_the_serving_types():
    for name in ("KVPool", "RadixCache", "Scheduler", "Sample", "Step",
                 "SchedulerStats"):
        assert name in attnc.__all__
        assert getattr(attnc, name) is getattr(attnc.serving, name)
    # The serving runtime came with version 6.
    assert _capi.API_VERSION == _capi.lib.attnc_api_version() >= 6
    assert set(_capi.POLICIES) == {"fcfs", "lpm", "dfs-weight"}
    assert set(_capi.KV_MEMORY) == {"host", "device", "accounting"}


@pytest.mark.parametrize("policy", ["fcfs", "lpm", "dfs-weight"])
def test_a_workload_is_served_and_every_array_agrees(policy):
    prompts, answers = workload()
    pool, cache, scheduler = make(64, token_budget=12, max_running=4,
                                  policy=policy)
    assert scheduler.policy == policy
    for r, prompt in prompts.items():
        scheduler.add(r, prompt, max_tokens=answers[r] + 2,
                      priority=1 if r == 9 else 0, namespace=7 if r == 5
                      else 0)
    assert scheduler.num_waiting == len(prompts)
    steps, sampled, finished = serve(scheduler, answers,
                                     check=check_step(prompts, 4))
    assert sorted(finished) == sorted(prompts)
    for r in prompts:
        assert len(sampled[r]) == answers[r]
    stats = scheduler.stats()
    assert stats.finished == len(prompts)
    assert stats.num_waiting == stats.num_running == 0
    assert stats.prompt_tokens == sum(map(len, prompts.values()))
    assert 0 < stats.cached_tokens < stats.prompt_tokens
    assert stats.computed_prefill_tokens == \
        stats.prompt_tokens - stats.cached_tokens
    assert sum(s.prefill_tokens for s in steps) == \
        stats.computed_prefill_tokens
    assert max(s.num_tokens for s in steps) <= 12, "the token budget"
    assert max(s.num_requests for s in steps) <= 4, "max_running"
    admitted = [r for s in steps for r in s.admitted]
    assert sorted(admitted) == sorted(prompts)
    # The highest priority goes first under every policy.
    assert admitted[0] == 9
    # Request 5's KV is cached in its own namespace only (nothing was
    # evicted from this pool).
    assert stats.evicted_tokens == 0
    own, others = (cache.match_prefix(prompts[5], namespace=space)
                   for space in (7, 0))
    assert own[0] == len(prompts[5]) == 12  # whole pages of its own
    assert others[0] == 8  # the system prompt's whole pages
    assert set(own[1]).isdisjoint(others[1])
    assert cache.match_prefix(prompts[5], namespace=8) == (0, [])
    # What finished is cached; evicting it all empties the pool.
    assert cache.cached_tokens == cache.evictable_tokens > 0
    assert pool.num_free_pages < pool.num_pages
    assert cache.evict(10**6) > 0
    assert cache.cached_tokens == 0
    assert pool.num_free_pages == pool.num_pages == 64


def test_decodes_out_of_pages_preempt_and_nothing_is_lost():
    prompts, answers = workload()
    pool, cache, scheduler = make(14, initial_new_token_ratio=0,
                                  min_new_token_ratio=0)
    for r, prompt in prompts.items():
        scheduler.add(r, prompt, max_tokens=answers[r])
    steps, sampled, finished = serve(scheduler, answers,
                                     check=check_step(prompts, 4))
    preempted = [r for s in steps for r in s.preempted]
    assert preempted, "a pool of 14 pages preempts"
    assert scheduler.stats().preemptions == len(preempted)
    assert scheduler.stats().recomputed_tokens > 0
    assert sorted(finished) == sorted(prompts)
    assert all(len(sampled[r]) == answers[r] for r in prompts)


def test_max_tokens_stops_a_request_the_model_would_continue():
    pool, cache, scheduler = make(16)
    scheduler.add(3, [1, 2, 3], max_tokens=2)
    steps, sampled, finished = serve(scheduler, {3: 100})
    assert finished == [3] and len(sampled[3]) == 2


def test_match_prefix_and_evict():
    pool, cache, scheduler = make(16)
    scheduler.add(1, list(range(1, 11)), max_tokens=1)
    step = scheduler.step()
    pages = step.kv_indices
    assert scheduler.commit([(1, 77, True)]) == [1]
    assert cache.cached_tokens == 8
    matched, cached = cache.match_prefix(list(range(1, 10)) + [900])
    assert matched == 8 and cached == pages[:2]
    assert cache.match_prefix(list(range(1, 10)), namespace=3) == (0, [])
    assert cache.match_prefix([]) == (0, [])
    # One page goes, from the leaf's tail; the rest of it still hits.
    assert cache.evict(1) == 4
    assert pool.num_free_pages == 15
    assert cache.match_prefix(list(range(1, 10)))[0] == 4
    assert cache.evict(100) == 4
    assert pool.num_free_pages == 16


def test_a_host_pool_appends_at_the_slots():
    for layout in ("NHD", "HND"):
        pool = attnc.KVPool(3, page_size=4, num_kv_heads=2, head_dim=8,
                            dtype="float32", kv_layout=layout)
        heads, dim, tokens = 2, 8, 3
        keys = HostTensor((tokens, heads, dim),
                          values=[float(i) for i in range(tokens * 16)])
        values = HostTensor((tokens, heads, dim),
                            values=[-float(i) for i in range(tokens * 16)])
        slots = [5, -1, 11]
        pool.append_slots(keys, values, slots)
        elements = 3 * 4 * heads * dim
        k = (ctypes.c_float * elements).from_address(pool.key_cache)
        v = (ctypes.c_float * elements).from_address(pool.value_cache)

        def offset(slot, head):
            page, at = divmod(slot, 4)
            row = ((page * 4 + at) * heads + head if layout == "NHD" else
                   (page * heads + head) * 4 + at)
            return row * dim

        for t in (0, 2):
            for h in range(heads):
                for d in range(dim):
                    assert k[offset(slots[t], h) + d] == keys.buffer[
                        t * 16 + h * dim + d]
                    assert v[offset(slots[t], h) + d] == values.buffer[
                        t * 16 + h * dim + d]
        # Slots as an int64 tensor, and padded rows.
        padded = HostTensor((1, heads, dim), values=[7.0] * 16,
                            strides=(20, dim, 1))
        pool.append_slots(padded, padded,
                          HostTensor((1,), "int64", values=[0]))
        assert k[offset(0, 1) + 3] == 7.0
        # One token whose token stride is below a token's elements (torch
        # keeps any stride on a dimension of size 1): written as packed.
        lone = HostTensor((1, heads, dim), values=[5.0] * 16,
                          strides=(dim, dim, 1))
        pool.append_slots(lone, lone, [1])
        assert k[offset(1, 1) + 7] == 5.0 and v[offset(1, 0)] == 5.0
        pool.close()


def test_append_slots_checks_its_arguments():
    pool = attnc.KVPool(2, page_size=4, num_kv_heads=2, head_dim=8,
                        dtype="float32")
    keys = HostTensor((2, 2, 8))
    with pytest.raises(InvalidArgumentError, match="slot 8 of token 1 is "
                       "past the pool's 8"):
        pool.append_slots(keys, keys, [0, 8])
    with pytest.raises(ValueError, match="slot_mapping has 1 slots for 2 "
                       "tokens"):
        pool.append_slots(keys, keys, [0])
    with pytest.raises(TypeError, match="keys must be float32, got int32"):
        pool.append_slots(HostTensor((2, 2, 8), "int32"), keys, [0, 1])
    with pytest.raises(ValueError, match=r"values must be \[tokens, 2, 8\], "
                       r"got \(2, 4, 4\)"):
        pool.append_slots(keys, HostTensor((2, 4, 4)), [0, 1])
    with pytest.raises(ValueError, match="keys must be on the CPU for a "
                       "host pool"):
        pool.append_slots(HostTensor((2, 2, 8), device="cuda"), keys, [0, 1])
    with pytest.raises(ValueError, match="slot_mapping\\[1\\] must be in"):
        pool.append_slots(keys, keys, [0, 2**63])
    with pytest.raises(TypeError, match="slot_mapping must be int64"):
        pool.append_slots(keys, keys, HostTensor((2,), "int32"))
    with pytest.raises(ValueError, match="rows must be packed"):
        pool.append_slots(HostTensor((2, 2, 8), strides=(16, 1, 2)), keys,
                          [0, 1])
    accounting = attnc.KVPool(2, page_size=4, num_kv_heads=2, head_dim=8,
                              dtype="float32", memory="accounting")
    assert accounting.key_cache == accounting.value_cache == 0
    with pytest.raises(ValueError, match="accounting pool keeps no keys"):
        accounting.append_slots(keys, keys, [0, 1])


def test_pool_arguments_are_checked():
    assert attnc.KVPool(4).page_size == 16
    with pytest.raises(InvalidArgumentError, match="a pool needs between 1 "
                       "and 2\\^31-1 pages, got 0"):
        attnc.KVPool(0)
    with pytest.raises(InvalidArgumentError, match="page size must be "
                       "between 1 and 256, got 300"):
        attnc.KVPool(4, page_size=300)
    with pytest.raises(TypeError, match="dtype must be one of bfloat16"):
        attnc.KVPool(4, dtype="int32")
    with pytest.raises(ValueError, match="kv_layout must be NHD or HND"):
        attnc.KVPool(4, kv_layout="nhd")
    with pytest.raises(ValueError, match="memory must be one of host, "
                       "device, accounting, got 'gpu'"):
        attnc.KVPool(4, memory="gpu")
    with pytest.raises(TypeError, match="num_pages must be an int, got "
                       "float"):
        attnc.KVPool(4.0)
    with pytest.raises(ValueError, match="num_pages must be in"):
        attnc.KVPool(2**64)
    with pytest.raises(AttncError) as error:
        attnc.KVPool(2**31 - 1, page_size=256, num_kv_heads=1024,
                     head_dim=1024, dtype="float32")
    assert error.value.kind == "out of memory"
    assert "cannot allocate" in error.value.message


def test_a_device_pool_without_a_gpu_is_an_error_not_a_crash():
    try:
        pool = attnc.KVPool(4, num_kv_heads=2, head_dim=64, memory="device",
                            cache_dir="-")
    except AttncError as error:  # no GPU, driver or NVRTC here
        assert error.kind in ("no GPU", "CUDA error", "compile error"), \
            error
        assert error.message
        return
    assert pool.key_cache != 0 and pool.value_cache > pool.key_cache


def test_scheduler_arguments_are_checked():
    pool = attnc.KVPool(16, page_size=4, memory="accounting")
    cache = attnc.RadixCache(pool)
    with pytest.raises(InvalidArgumentError, match="scheduler token budget "
                       "must be at least 1, got 0"):
        attnc.Scheduler(pool, cache, token_budget=0)
    with pytest.raises(InvalidArgumentError, match=r"scheduler initial "
                       r"new-token ratio must be in \[0, 1\], got nan"):
        attnc.Scheduler(pool, cache, initial_new_token_ratio=float("nan"))
    with pytest.raises(InvalidArgumentError, match="unknown policy 7"):
        attnc.Scheduler(pool, cache, policy=7)
    with pytest.raises(ValueError, match="policy must be one of fcfs, lpm, "
                       "dfs-weight, got 'random'"):
        attnc.Scheduler(pool, cache, policy="random")
    with pytest.raises(TypeError, match="token_budget must be an int, got "
                       "str"):
        attnc.Scheduler(pool, cache, token_budget="8")
    with pytest.raises(ValueError, match="protect_waiting_prefixes must be a "
                       "bool"):
        attnc.Scheduler(pool, cache, protect_waiting_prefixes=2)
    with pytest.raises(TypeError, match="min_new_token_ratio must be a "
                       "number, got bool"):
        attnc.Scheduler(pool, cache, min_new_token_ratio=True)
    with pytest.raises(TypeError, match="cache must be an attnc.RadixCache"):
        attnc.Scheduler(pool, pool)
    other = attnc.KVPool(16, page_size=4, memory="accounting")
    with pytest.raises(InvalidArgumentError, match="cache is a cache over "
                       "another attnc_kv_pool"):
        attnc.Scheduler(other, cache)
    first = attnc.Scheduler(pool, cache)
    with pytest.raises(InvalidArgumentError, match="cache already serves a "
                       "live attnc_scheduler"):
        attnc.Scheduler(pool, cache)
    first.close()
    attnc.Scheduler(pool, cache).close()  # the cache is free again


def test_requests_samples_and_aborts_are_checked():
    pool, cache, scheduler = make(8)
    scheduler.add(7, [1, 2, 3, 4, 5], max_tokens=3)
    with pytest.raises(InvalidArgumentError, match="request 7 is queued or "
                       "running already"):
        scheduler.add(7, [9, 9], max_tokens=1)
    with pytest.raises(AttncError, match="request 8 needs .* of KV "
                       "cache") as error:
        scheduler.add(8, list(range(30)), max_tokens=3)
    assert error.value.kind == "out of memory"
    assert not isinstance(error.value, InvalidArgumentError)
    with pytest.raises(InvalidArgumentError, match="needs a prompt"):
        scheduler.add(9, [], max_tokens=1)
    with pytest.raises(ValueError, match=r"prompt\[1\] must be in "
                       r"-2147483648..2147483647, got 2147483648"):
        scheduler.add(9, [1, 2**31], max_tokens=1)
    with pytest.raises(TypeError, match=r"prompt\[0\] must be an int, got "
                       r"float"):
        scheduler.add(9, [1.0], max_tokens=1)
    with pytest.raises(TypeError, match="max_tokens must be an int, got "
                       "bool"):
        scheduler.add(9, [1], max_tokens=True)
    with pytest.raises(TypeError, match="prompt must be a list or tuple"):
        scheduler.add(9, "abc")
    with pytest.raises(ValueError, match="namespace must be in"):
        scheduler.add(9, [1], namespace=-1)
    with pytest.raises(AttncError, match="request 4 is neither queued nor "
                       "running") as error:
        scheduler.abort(4)
    assert error.value.kind == "not found"

    scheduler.add(2, [40, 41, 42], max_tokens=2)
    step = scheduler.step()
    assert step.samplers == [7, 2]
    with pytest.raises(InvalidArgumentError, match="the last step has 2 "
                       "samplers, got 1 samples"):
        scheduler.commit([attnc.Sample(7, 1)])
    with pytest.raises(InvalidArgumentError, match="sample 0 is for request "
                       "2, the step's sampler 0 is request 7"):
        scheduler.commit([(2, 1), (7, 1)])
    with pytest.raises(TypeError, match=r"samples\[1\] must be an "
                       r"attnc.Sample"):
        scheduler.commit([(7, 1), 2])
    with pytest.raises(ValueError, match=r"samples\[0\].token must be in"):
        scheduler.commit([(7, 2**31), (2, 1)])
    with pytest.raises(ValueError, match=r"samples\[1\].stop must be a "
                       r"bool"):
        scheduler.commit([(7, 1), (2, 1, 2)])
    # A request aborted between its step and the commit: its sample is
    # ignored.
    scheduler.abort(2)
    assert scheduler.commit([(7, 1), (2, 1, True)]) == []
    assert scheduler.num_running == 1 and scheduler.num_waiting == 0


def test_closed_objects_raise_and_handles_outlive_in_any_order():
    pool, cache, scheduler = make(16)
    scheduler.add(1, list(range(1, 10)), max_tokens=3)
    pool.close()
    cache.close()
    with pytest.raises(ValueError, match="this pool has been released"):
        pool.num_free_pages
    with pytest.raises(ValueError, match="this cache has been released"):
        cache.match_prefix([1, 2, 3])
    # The scheduler still has both, in the library.
    steps, sampled, finished = serve(scheduler, {1: 3})
    assert finished == [1]
    scheduler.close()
    scheduler.close()  # twice is nothing
    with pytest.raises(ValueError, match="this scheduler has been released"):
        scheduler.step()
    with pytest.raises(ValueError, match="this scheduler has been released"):
        scheduler.idle


def run_python(code):
    """Runs `code` in a fresh interpreter: a crash fails the test that
    asked rather than killing pytest."""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, (
        f"the interpreter died ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout.strip()


def test_stale_and_foreign_handles_are_errors_not_crashes():
    out = run_python("""
        import ctypes, gc
        import attnc
        from attnc import _capi
        pool = attnc.KVPool(16, page_size=4, memory="accounting")
        cache = attnc.RadixCache(pool)
        s = attnc.Scheduler(pool, cache)
        s.add(1, [1, 2, 3, 4, 5], max_tokens=2)
        lib = _capi.lib
        # Handles destroyed behind the objects' backs, and handles of
        # another type: every call is an error value.
        assert lib.attnc_kv_pool_destroy(pool._handle) == _capi.OK
        for call in (lambda: pool.num_free_pages, lambda: pool.key_cache):
            assert call() == 0
        assert "not a live attnc_kv_pool" in _capi.last_error()
        try:
            attnc.RadixCache(pool)
        except attnc.InvalidArgumentError as e:
            print("cache:", e.message)
        assert lib.attnc_scheduler_idle(cache._handle) == -1
        s2 = attnc.Scheduler.__new__(attnc.Scheduler)
        s2._handle = ctypes.c_void_p(cache._handle.value)
        try:
            s2.step()
        except attnc.InvalidArgumentError as e:
            print("step:", e.message)
        s2._handle = None
        try:
            s.idle
            print("idle:", s.idle)
        except Exception as e:
            print(type(e).__name__, e)
        pool._handle = None
        # A cycle: the collector finalizes in any order.
        cache.cycle = s
        s.cycle = cache
        del s, cache, pool
        gc.collect()
        print("done")
        """)
    assert "cache: pool is not a live attnc_kv_pool" in out
    assert "step: scheduler is not a live attnc_scheduler" in out
    assert "idle: False" in out
    assert out.endswith("done")


def test_step_tensors_are_what_paged_attention_plan_takes(monkeypatch):
    """With a stand-in torch: the arrays become int32 tensors (int64 for
    ids and slots) over the step's own buffers, never copies."""
    made = []

    def frombuffer(buffer, dtype):
        made.append(buffer)
        return types.SimpleNamespace(values=memoryview(buffer).tolist(),
                                     dtype=dtype, buffer=buffer)

    fake = types.SimpleNamespace(frombuffer=frombuffer, int32="torch.int32",
                                 int64="torch.int64")
    monkeypatch.setitem(sys.modules, "torch", fake)
    pool, cache, scheduler = make(16)
    scheduler.add(1, list(range(1, 10)), max_tokens=3)
    step = scheduler.step()
    indptr, indices, last = step.page_table
    assert (indptr.values, indices.values, last.values) == (
        step.kv_indptr, step.kv_indices, step.kv_last_page_len)
    assert {t.dtype for t in (indptr, indices, last)} == {"torch.int32"}
    for tensor, name in zip((indptr, indices, last), ("kv_indptr",
                            "kv_indices", "kv_last_page_len")):
        assert tensor.buffer is step.view(name), "the step's own buffer"
    assert step.tensor("slot_mapping").dtype == "torch.int64"
    assert step.tensor("requests").dtype == "torch.int64"
    assert step.tensor("qo_indptr").values == step.qo_indptr == [0, 9]
    with pytest.raises(ValueError, match="a step has no array 'pages'"):
        step.tensor("pages")
    monkeypatch.setitem(sys.modules, "torch", None)  # not installed
    with pytest.raises(ImportError, match=r"install PyTorch, or read "
                       r"step.kv_indptr, a list, or step.view\('kv_indptr'\),"
                       r" a memoryview"):
        step.page_table


def test_step_tensors_with_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    pool, cache, scheduler = make(16)
    scheduler.add(1, list(range(1, 10)), max_tokens=3)
    step = scheduler.step()
    indptr, indices, last = step.page_table
    assert indptr.dtype == indices.dtype == last.dtype == torch.int32
    assert indices.tolist() == step.kv_indices
    assert step.tensor("slot_mapping").dtype == torch.int64
    # What PagedAttention.plan checks of its index arrays.
    from attnc._tensors import check_tensor
    for name, array in zip(("kv_indptr", "kv_indices", "kv_last_page_len"),
                           step.page_table):
        check_tensor(name, array, 1, ("int32",), cuda=False)
    # Page copies as [copies, 2], none or some; transfers as [n, 3].
    assert step.tensor("page_copies").shape == (0, 2)
    assert step.tensor("page_transfers").shape == (0, 3)
    scheduler.commit([attnc.Sample(1, 50)])
    scheduler.add(2, list(range(20, 26)), max_tokens=2, n=2)
    step = scheduler.step()
    scheduler.commit([attnc.Sample(r, 60, False, b) for r, b in
                      zip(step.samplers, step.sampler_branches)])
    step = scheduler.step()
    assert step.tensor("page_copies").tolist() == [list(c) for c in
                                                    step.page_copies]
    assert step.tensor("page_copies").shape == (1, 2)
    # Over the step's own buffers: no copy, and the tensor keeps them.
    indices = step.tensor("kv_indices")
    assert indices.data_ptr() == step._address("kv_indices")
    expected = step.kv_indices
    samples = [attnc.Sample(r, 70, True, b) for r, b in
               zip(step.samplers, step.sampler_branches)]
    del step
    scheduler.commit(samples)  # the scheduler lets go of the step too
    assert indices.tolist() == expected


@pytest.mark.gpu
def test_a_device_pool_appends_on_the_gpu():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine")
    pool = attnc.KVPool(8, page_size=16, num_kv_heads=2, head_dim=64,
                        dtype="float16", memory="device", cache_dir="-")
    cache = attnc.RadixCache(pool)
    scheduler = attnc.Scheduler(pool, cache)
    scheduler.add(0, list(range(1, 21)), max_tokens=2)
    step = scheduler.step()
    keys = torch.randn(step.num_tokens, 2, 64, device="cuda",
                       dtype=torch.float16)
    values = torch.randn_like(keys)
    pool.append_slots(keys, values, step.tensor("slot_mapping").cuda())
    torch.cuda.synchronize()

    class View:  # the pool's key cache as torch sees device memory
        def __init__(self, address):
            self.__cuda_array_interface__ = dict(
                shape=(8, 16, 2, 64), typestr="<f2", data=(address, False),
                version=3, strides=None)

    k_cache = torch.as_tensor(View(pool.key_cache), device="cuda")
    v_cache = torch.as_tensor(View(pool.value_cache), device="cuda")
    for row, slot in enumerate(step.slot_mapping):
        page, at = divmod(slot, 16)
        assert torch.equal(k_cache[page, at], keys[row])
        assert torch.equal(v_cache[page, at], values[row])


EXAMPLE = PACKAGE_DIR.parent / "examples" / "serve_trace.py"
TRACE = PACKAGE_DIR.parent / "examples" / "serve_trace.jsonl"


def run_example(*args):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
    return subprocess.run([sys.executable, str(EXAMPLE), *map(str, args)],
                          capture_output=True, text=True, env=env,
                          timeout=300)


def trace_totals(path):
    import json
    lines = [json.loads(line) for line in Path(path).read_text().splitlines()
             if line.strip()]
    return (len(lines), sum(len(r["prompt"]) for r in lines),
            sum(r["output_len"] for r in lines))


@pytest.mark.parametrize("args, preempts", [
    ([], False),
    (["--policy", "fcfs", "--token-budget", "64"], False),
    # A pool of 14 pages (the longest request's prompt and max_tokens) that
    # admission fills with prompts alone.
    (["--pages", "14", "--new-token-ratio", "0"], True),
])
def test_the_example_serves_its_trace(args, preempts):
    proc = run_example(TRACE, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    import json
    lines = proc.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    requests, prompt_tokens, output_tokens = trace_totals(TRACE)
    assert summary["requests"] == requests
    assert summary["finished"] == requests
    assert summary["finished_ids"] == list(range(requests))
    assert summary["prompt_tokens"] == prompt_tokens
    assert summary["generated_tokens"] == summary["output_tokens"] == \
        output_tokens
    assert 0 < summary["cached_tokens"] < prompt_tokens, \
        "the trace shares prefixes"
    assert summary["computed_prefill_tokens"] == \
        prompt_tokens - summary["cached_tokens"]
    # One line per step, then the summary.
    assert len(lines) == summary["steps"] + 1
    assert all(line.startswith("step ") for line in lines[:-1])
    assert (summary["preemptions"] > 0) == preempts
    assert (summary["recomputed_tokens"] > 0) == preempts


def test_the_example_reports_a_bad_trace(tmp_path):
    trace = tmp_path / "bad.jsonl"
    trace.write_text('{"prompt": [1, 2], "output_len": 3}\n'
                     '{"prompt": [1, 2], "output_len": 0}\n')
    proc = run_example(trace)
    assert proc.returncode == 1
    assert 'line 2: "output_len" must be an integer in [1, 1048576], got 0' \
        in proc.stderr
    trace.write_text('{"prompt": [1, 2], "output_len": 3, "max_tokens": 2}\n')
    proc = run_example(trace)
    assert proc.returncode == 1
    assert '"max_tokens" 2 is less than "output_len" 3' in proc.stderr
    # Without max_tokens a request reserves the default (4096), not its
    # 3-token answer: a pool of 8 pages of 16 cannot hold it.
    trace.write_text('{"prompt": [1, 2], "output_len": 3}\n')
    proc = run_example(trace, "--pages", "8")
    assert proc.returncode == 1
    assert "needs 257 pages" in proc.stderr, proc.stderr
    trace.write_text('{"prompt": [1, 2], "output_len": 3, "max_tokens": 8}\n')
    assert run_example(trace, "--pages", "8").returncode == 0
    # A request larger than the pool is the library's error, by name.
    trace.write_text('{"prompt": [1, 2, 3, 4, 5], "output_len": 20}\n')
    proc = run_example(trace, "--pages", "1", "--page-size", "4")
    assert proc.returncode == 1
    assert "out of memory: request 0 needs" in proc.stderr
    assert "of KV cache" in proc.stderr


@pytest.mark.gpu
def test_an_engine_loop_attends_through_the_steps_page_tables():
    """Steps fed to PagedAttention as they come: each token's K/V appended
    at its slot, attention planned on step.page_table, every output row
    compared with attention over the request's own keys. K/V of a token
    depend on its id and position only, so a prefix read from the cache
    holds what the request would have computed."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine")
    heads, kv_heads, dim, page, vocab = 8, 2, 64, 16, 512
    gen = torch.Generator().manual_seed(5)
    table = {name: torch.randn(vocab, kv_heads, dim, generator=gen) / 2
             for name in ("k", "v", "q")}
    where = {name: torch.randn(256, kv_heads, dim, generator=gen) / 2
             for name in ("k", "v", "q")}

    def rows(name, tokens, positions):
        t, p = torch.tensor(tokens), torch.tensor(positions)
        out = table[name][t] + where[name][p]
        return out.repeat_interleave(heads // kv_heads, 1) \
            if name == "q" else out

    pool = attnc.KVPool(40, page_size=page, num_kv_heads=kv_heads,
                        head_dim=dim, dtype="float16", memory="device")
    cache = attnc.RadixCache(pool)
    scheduler = attnc.Scheduler(pool, cache, token_budget=48)
    shared = list(range(1, 37))
    prompts = {r: shared[:20 + 4 * r] + [100 + 7 * r + i for i in range(5)]
               for r in range(5)}
    for r, prompt in prompts.items():
        scheduler.add(r, prompt, max_tokens=6)
    wrapper = attnc.PagedAttention(heads, kv_heads, dim, page,
                                   dtype="float16", causal=True)

    class View:
        def __init__(self, address):
            self.__cuda_array_interface__ = dict(
                shape=(40, page, kv_heads, dim), typestr="<f2",
                data=(address, False), version=3, strides=None)

    k_cache = torch.as_tensor(View(pool.key_cache), device="cuda")
    v_cache = torch.as_tensor(View(pool.value_cache), device="cuda")
    sampled = {r: [] for r in prompts}
    checked = 0
    while not scheduler.idle:
        step = scheduler.step()
        if step.num_requests:
            half = torch.float16
            k = rows("k", step.tokens, step.positions).to("cuda", half)
            v = rows("v", step.tokens, step.positions).to("cuda", half)
            q = rows("q", step.tokens, step.positions).to("cuda", half)
            pool.append_slots(k, v, step.tensor("slot_mapping").cuda())
            wrapper.plan(*step.page_table,
                         qo_indptr=step.tensor("qo_indptr"))
            out = wrapper.run(q.contiguous(), k_cache, v_cache).double().cpu()
            for i, r in enumerate(step.requests):
                sequence = prompts[r] + sampled[r]
                for row in range(step.qo_indptr[i], step.qo_indptr[i + 1]):
                    p = step.positions[row]
                    keys = rows("k", sequence[:p + 1], range(p + 1)).half()
                    values = rows("v", sequence[:p + 1],
                                  range(p + 1)).half()
                    keys = keys.double().repeat_interleave(4, 1)
                    values = values.double().repeat_interleave(4, 1)
                    query = q[row].double().cpu()
                    scores = torch.einsum("hd,khd->hk", query, keys) / dim**.5
                    ref = torch.einsum("hk,khd->hd", scores.softmax(-1),
                                       values)
                    error = (out[row] - ref).norm() / ref.norm()
                    assert error < 1e-2, (r, p, error.item())
                    checked += 1
        samples = []
        for r in step.samplers:
            sampled[r].append(200 + len(sampled[r]))
            samples.append(attnc.Sample(r, sampled[r][-1]))
        scheduler.commit(samples)
    assert checked == sum(len(p) + 5 for p in prompts.values()) - \
        scheduler.stats().cached_tokens
    assert scheduler.stats().cached_tokens > 0


def test_parallel_samples_fork_into_branches():
    """n = 3: the prompt is computed once; its pass samples three branches
    from one row; then each branch is fed its own tokens, on the prompt's
    whole pages shared and a page of its own after them."""
    pool, cache, scheduler = make(64)
    prompt = list(range(1, 11))  # 2 whole pages of 4 and a partial one
    scheduler.add(7, prompt, max_tokens=3, n=3)
    first = scheduler.step()
    assert first.prefill_tokens == len(prompt)
    assert first.samplers == [7, 7, 7]
    assert first.sampler_branches == [0, 1, 2]
    assert len(set(first.sample_rows)) == 1
    sampled = {branch: [] for branch in range(3)}

    def sample(step):
        samples = []
        for r, branch in zip(step.samplers, step.sampler_branches):
            token = 5000 + 100 * branch + len(sampled[branch])
            sampled[branch].append(token)
            samples.append(attnc.Sample(r, token, len(sampled[branch]) >= 3,
                                        branch))
        return samples

    finished = scheduler.commit(sample(first))
    while not scheduler.idle:
        step = scheduler.step()
        assert step.prefill_tokens == 0, "a branch computed the prompt again"
        assert sorted(step.branches) == [0, 1, 2]
        tables = {}
        for i, branch in enumerate(step.branches):
            row = step.qo_indptr[i]
            sequence = prompt + sampled[branch]
            assert step.tokens[row] == sequence[step.positions[row]]
            tables[branch] = step.kv_indices[
                step.kv_indptr[i]:step.kv_indptr[i + 1]]
        assert tables[0][:2] == tables[1][:2] == tables[2][:2]
        assert len({tuple(t[2:]) for t in tables.values()}) == 3
        finished += scheduler.commit(sample(step))
    assert finished == [7]
    assert all(len(tokens) == 3 for tokens in sampled.values())
    with pytest.raises(InvalidArgumentError, match="n must be in"):
        scheduler.add(8, prompt, n=0)


def test_a_fork_reports_its_page_copies_in_the_next_step():
    """The commit that forks n = 3 branches copies the prompt's partial last
    page for branches 1 and 2; the next step lists those copies, as
    (source, destination) pairs into each branch's own page, and only that
    step does."""
    pool, cache, scheduler = make(32)
    scheduler.add(4, list(range(1, 7)), max_tokens=3, n=3)  # a page and 2
    first = scheduler.step()
    assert first.page_copies == []
    scheduler.commit([attnc.Sample(4, 10 + b, False, b) for b in range(3)])
    second = scheduler.step()
    page = {branch: second.kv_indices[second.kv_indptr[i] + 1]
            for i, branch in enumerate(second.branches)}
    assert second.page_copies == [(page[0], page[1]), (page[0], page[2])]
    scheduler.commit([attnc.Sample(4, 20 + b, False, b) for b in range(3)])
    assert scheduler.step().page_copies == []


def test_a_host_tier_loads_back_what_eviction_offloaded():
    """A cache with a host tier: eviction moves a finished prompt's 4
    pages there; the next request sharing them loads them back, and its
    step lists the offloads, then the loads of the same host pages into
    its first pages, as (host page, device page, direction) triples."""
    pool = attnc.KVPool(8, page_size=4, memory="accounting")
    cache = attnc.RadixCache(pool, host_pages=16)
    scheduler = attnc.Scheduler(pool, cache)
    scheduler.add(1, list(range(1, 18)), max_tokens=1)
    step = scheduler.step()
    assert step.page_transfers == []
    scheduler.commit([attnc.Sample(1, 7, False)])
    assert cache.evict(1 << 40) == 16
    assert cache.host_tokens == 16 and cache.cached_tokens == 0
    scheduler.add(2, list(range(1, 17)) + [100, 101, 102, 103], max_tokens=1)
    step = scheduler.step()
    assert step.prefill_tokens == 4
    offloads, loads = step.page_transfers[:4], step.page_transfers[4:]
    assert [t[2] for t in offloads] == [attnc._step.TRANSFER_OFFLOAD] * 4
    assert [t[2] for t in loads] == [attnc._step.TRANSFER_LOAD] * 4
    assert [t[0] for t in loads] == [t[0] for t in offloads]
    assert [t[1] for t in loads] == step.kv_indices[:4]
    assert step.view("page_transfers").tolist() == [
        value for t in step.page_transfers for value in t]
    scheduler.commit([attnc.Sample(2, 7, False)])
    assert scheduler.stats().host_loaded_tokens == 16
    assert cache.host_tokens == 0
    assert attnc.RadixCache(pool).host_tokens == 0
    with pytest.raises(InvalidArgumentError,
                       match=r"host_pages must be in \[1, 2\^31-1\], got -1"):
        attnc.RadixCache(pool, host_pages=-1)


def test_the_transfers_go_to_whoever_drives_the_cache():
    """A cache no scheduler serves hands its tier's transfers to its user
    (take_transfers); one a scheduler serves keeps them for its steps, and
    what no one took goes to the next scheduler's first step."""
    pool = attnc.KVPool(8, page_size=4, memory="accounting")
    cache = attnc.RadixCache(pool, host_pages=16)
    assert cache.take_transfers() == []
    scheduler = attnc.Scheduler(pool, cache)
    scheduler.add(1, list(range(1, 18)), max_tokens=1)
    pages = scheduler.step().kv_indices[:4]
    scheduler.commit([attnc.Sample(1, 7, False)])
    scheduler.close()
    assert cache.evict(1 << 40) == 16
    offloads = cache.take_transfers()
    assert [t[2] for t in offloads] == [attnc._step.TRANSFER_OFFLOAD] * 4
    assert sorted(t[1] for t in offloads) == sorted(pages)
    assert len({t[0] for t in offloads}) == 4
    assert cache.take_transfers() == []  # taken, forgotten

    # Served: a direct eviction is the steps' to take.
    scheduler = attnc.Scheduler(pool, cache)
    scheduler.add(2, list(range(1, 17)) + [100, 101, 102, 103],
                  max_tokens=1)
    step = scheduler.step()
    assert [(t[0], t[2]) for t in step.page_transfers] == [
        (t[0], attnc._step.TRANSFER_LOAD) for t in offloads]
    scheduler.commit([attnc.Sample(2, 7, False)])
    assert cache.evict(8) == 8
    with pytest.raises(InvalidArgumentError,
                       match="cache serves a live attnc_scheduler, whose "
                             "steps take its transfers"):
        cache.take_transfers()
    scheduler.add(3, [500, 501, 502, 503, 504], max_tokens=1)
    step = scheduler.step()
    assert [t[2] for t in step.page_transfers] == [
        attnc._step.TRANSFER_OFFLOAD] * 2
    scheduler.commit([attnc.Sample(3, 7, False)])
    scheduler.close()

    # Left untaken: the next scheduler's first step has them.
    evicted = cache.evict(1 << 40)
    scheduler = attnc.Scheduler(pool, cache)
    scheduler.add(4, [900, 901, 902, 903, 904], max_tokens=1)
    step = scheduler.step()
    assert len(step.page_transfers) * 4 == evicted > 0
    scheduler.close()
    assert attnc.RadixCache(pool).take_transfers() == []
    cache.close()
    with pytest.raises(ValueError, match="this cache has been released"):
        cache.take_transfers()


def test_a_pool_of_layers_appends_and_copies_every_layer():
    pool = attnc.KVPool(4, page_size=2, num_kv_heads=1, head_dim=4,
                        dtype="float32", num_layers=3)
    assert pool.num_layers == 3
    assert attnc.KVPool(4).num_layers == 1
    assert pool.layer_caches(0) == (pool.key_cache, pool.value_cache)
    elements = 4 * 2 * 4
    views = [tuple((ctypes.c_float * elements).from_address(address)
                   for address in pool.layer_caches(layer))
             for layer in range(3)]
    for layer in range(3):
        row = HostTensor((1, 1, 4), values=[10.0 * layer + e
                                             for e in range(4)])
        pool.append_slots(row, row, [1], layer=layer)  # page 0, slot 1
    pool.set_stream(None)
    pool.copy_pages([(0, 3), (3, 2)])
    for layer, (k, v) in enumerate(views):
        for page in (0, 3, 2):
            assert list(k[(page * 2 + 1) * 4:(page * 2 + 2) * 4]) == [
                10.0 * layer + e for e in range(4)]
            assert list(v[(page * 2 + 1) * 4:(page * 2 + 2) * 4]) == [
                10.0 * layer + e for e in range(4)]
    with pytest.raises(InvalidArgumentError, match="layer 3 is not in the "
                       "pool's 3 layers"):
        pool.layer_caches(3)
    with pytest.raises(InvalidArgumentError, match="layer 3 is not in the "
                       "pool's 3 layers"):
        pool.append_slots(row, row, [1], layer=3)
    with pytest.raises(InvalidArgumentError, match="copy 0 names page 4, "
                       "which is not in the pool of 4 pages"):
        pool.copy_pages([(0, 4)])
    with pytest.raises(TypeError, match=r"copies\[0\] must be a \(source, "
                       r"destination\) pair"):
        pool.copy_pages([(0, 1, 2)])
    with pytest.raises(InvalidArgumentError, match="a pool holds between 1 "
                       "and 65535 layers, got 0"):
        attnc.KVPool(4, num_layers=0)
    pool.close()


@pytest.mark.parametrize("apply_copies", [True, False])
def test_an_engine_with_caches_of_its_own_needs_the_step_copies(
        apply_copies):
    """An engine of two layers keeps its own caches ({page: rows} per
    layer) beside an accounting pool and writes each step's rows at its
    slots, layer 1's row a function of what layer 0's attention read
    through the page table. With the step's page copies applied, every
    forked branch reads exactly its own sequence in both layers; without
    them, a branch reads a partial prompt page that was never copied."""
    page_size, layers = 4, 2
    pool, cache, scheduler = make(64, page_size=page_size, token_budget=8)
    prompts = {r: list(range(1, 8)) + [100 + r] * (r % 3) for r in range(6)}
    for r, prompt in prompts.items():
        scheduler.add(r, prompt, max_tokens=4, n=1 + r % 3)
    caches = [{}, {}]  # layer -> {slot: row}
    sampled = {}
    wrong = 0
    while not scheduler.idle:
        step = scheduler.step()
        if apply_copies:
            for src, dst in step.page_copies:
                for layer in caches:
                    for i in range(page_size):
                        if src * page_size + i in layer:
                            layer[dst * page_size + i] = \
                                layer[src * page_size + i]

        def slot(i, position):
            first = step.kv_indptr[i]
            page = step.kv_indices[first + position // page_size]
            return page * page_size + position % page_size

        owner = {}
        for i in range(step.num_requests):
            for t in range(step.qo_indptr[i], step.qo_indptr[i + 1]):
                owner[t] = i
        rows = [(token, position) for token, position in
                zip(step.tokens, step.positions)]
        for layer in range(layers):
            for t, row in enumerate(rows):
                caches[layer][step.slot_mapping[t]] = row
            if layer + 1 < layers:  # attention reads keys 0..position
                rows = [hash(tuple(caches[layer].get(slot(owner[t], j))
                                   for j in range(position + 1)))
                        for t, (_, position) in enumerate(rows)]
        for i, (r, branch) in enumerate(zip(step.requests, step.branches)):
            sequence = prompts[r] + sampled.get((r, branch), [])
            length = step.positions[step.qo_indptr[i + 1] - 1] + 1
            expected0 = [(sequence[j], j) for j in range(length)]
            expected1 = [hash(tuple(expected0[:j + 1]))
                         for j in range(length)]
            for j in range(length):
                wrong += caches[0].get(slot(i, j)) != expected0[j]
                wrong += caches[1].get(slot(i, j)) != expected1[j]
        samples = []
        for r, branch in zip(step.samplers, step.sampler_branches):
            tokens = sampled.setdefault((r, branch), [])
            tokens.append(5000 + 100 * branch + len(tokens))
            samples.append(attnc.Sample(r, tokens[-1], len(tokens) >= 4,
                                        branch))
        scheduler.commit(samples)
    assert (wrong == 0) == apply_copies, f"{wrong} wrong rows"
