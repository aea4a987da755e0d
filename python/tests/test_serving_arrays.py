"""The serving loop without copies: a step's arrays as views of the C
step's own buffers (alive while any view is), commit_tokens with the
tokens as one array, overlapped steps, and the scheduler settings
clip_max_new_tokens and dfs_weight_window. No torch, no GPU."""

import array
import ctypes
import gc

import pytest

import attnc
from attnc import _capi
from attnc.errors import InvalidArgumentError
from test_serving import HostTensor, make, serve

INT64_ARRAYS = {"requests", "slot_mapping", "samplers", "admitted",
                "preempted"}


def first_step(**config):
    pool, cache, scheduler = make(64, **config)
    scheduler.add(1, list(range(1, 10)), max_tokens=3)
    scheduler.add(2, list(range(40, 46)), max_tokens=3)
    return scheduler, scheduler.step()


def step_is_live(handle):
    info = _capi.StepInfo()
    return _capi.lib.attnc_step_get_info(handle, ctypes.byref(info)) == \
        _capi.OK


def test_every_array_is_a_view_of_the_steps_own_buffer():
    scheduler, step = first_step()
    seen = set()
    for name in attnc.serving.Step.__dict__:
        if not isinstance(getattr(type(step), name), property) or \
                name.startswith("num_") or name in (
                    "page_table", "cascade_levels", "prefill_tokens",
                    "decode_tokens"):
            continue
        seen.add(name)
        view = step.view(name)
        assert view.format == ("q" if name in INT64_ARRAYS else "i"), name
        assert view.ndim == 1 and view.c_contiguous
        values = view.tolist()
        if name == "page_copies":
            assert getattr(step, name) == list(zip(values[0::2],
                                                   values[1::2]))
        elif name == "page_transfers":
            assert getattr(step, name) == list(zip(
                values[0::3], values[1::3], values[2::3]))
        else:
            assert getattr(step, name) == values, name
        if len(view):  # in place: the view starts at the library's array
            start = ctypes.addressof(ctypes.c_char.from_buffer(view))
            assert start == step._address(name), name
        else:
            assert step._address(name) == 0, "the library's NULL"
    assert len(seen) == 22 and "page_transfers" in seen
    assert "cascade_kv_indices" in seen
    assert step.view("qo_indptr").tolist() == [0, 9, 15]
    assert step.view("samplers").tolist() == [1, 2]
    assert step.view("token_from_sample").tolist() == [-1] * 15
    assert step.view("preempted").tolist() == []
    assert step.num_samplers == 2
    # The lists are made once; views too.
    assert step.tokens is step.tokens and step.view("tokens") is \
        step.view("tokens")
    with pytest.raises(ValueError, match="a step has no array 'pages' "
                       r"\(it has requests, branches"):
        step.view("pages")


def test_a_view_keeps_the_c_step_alive_after_the_step_is_gone():
    scheduler, step = first_step()
    handle = ctypes.c_void_p(step._held.handle.value)
    tokens = step.view("tokens")
    expected = step.tokens
    scheduler.commit_tokens(step, [7, 8])
    del step
    gc.collect()
    assert step_is_live(handle)
    assert tokens.tolist() == expected
    del tokens
    assert not step_is_live(handle), "the last view took the step with it"
    assert "not a live attnc_step" in _capi.last_error()


def test_a_step_without_views_goes_once_committed():
    scheduler, step = first_step()
    handle = ctypes.c_void_p(step._held.handle.value)
    scheduler.commit_tokens(step, [7, 8])
    assert step_is_live(handle)
    del step  # the scheduler let go of it at the commit
    assert not step_is_live(handle)


@pytest.mark.parametrize("form", [
    "list", "tuple", "view", "array_i", "array_q", "bytes_view",
    "int32_tensor", "int64_tensor"])
def test_commit_tokens_takes_tokens_in_every_form(form):
    """Each form commits the same tokens as Samples would: the next step
    feeds them."""
    scheduler, step = first_step()
    tokens = [300, 301]
    given = {
        "list": tokens,
        "tuple": tuple(tokens),
        "view": memoryview(array.array("i", tokens)),
        "array_i": array.array("i", tokens),
        "array_q": array.array("q", tokens),  # converted
        "bytes_view": memoryview(bytes(array.array("i", tokens))).cast("i"),
        "int32_tensor": HostTensor((2,), "int32", values=tokens),
        "int64_tensor": HostTensor((2,), "int64", values=tokens),
    }[form]
    assert scheduler.commit_tokens(step, given) == []
    following = scheduler.step()
    assert following.num_decodes == 2
    assert following.tokens == tokens


def test_commit_tokens_stops_and_serves_a_workload_like_commit():
    """The same workload served by Samples and by commit_tokens with the
    steps' own views: the same steps, tokens and finishes."""
    def by_tokens(scheduler, answers):
        sampled = {r: [] for r in answers}
        finished, fed = [], []
        while not scheduler.idle:
            step = scheduler.step()
            fed.append(step.tokens)
            tokens = array.array("i")
            stops = array.array("i")
            for r in step.samplers:
                sampled[r].append(10**6 + 1000 * r + len(sampled[r]))
                tokens.append(sampled[r][-1])
                stops.append(len(sampled[r]) >= answers[r])
            finished += scheduler.commit_tokens(step, tokens, stops)
        return fed, sampled, finished

    answers = {r: 2 + r % 5 for r in range(8)}

    def scheduler_with_requests():
        pool, cache, scheduler = make(64, token_budget=16, max_running=4)
        for r in answers:
            scheduler.add(r, list(range(1, 9)) + [100 + r] * (1 + r % 3),
                          max_tokens=10)
        return scheduler

    steps, sampled, finished = serve(scheduler_with_requests(), answers)
    fed, sampled_arrays, finished_arrays = by_tokens(
        scheduler_with_requests(), answers)
    assert [s.tokens for s in steps] == fed
    assert sampled_arrays == sampled
    assert finished_arrays == finished


def test_commit_tokens_checks_its_arguments():
    scheduler, step = first_step()
    with pytest.raises(ValueError, match="tokens has 1 entries, the step has "
                       "2 samplers"):
        scheduler.commit_tokens(step, [1])
    with pytest.raises(ValueError, match="stops has 3 entries, the step has "
                       "2 samplers"):
        scheduler.commit_tokens(step, [1, 2], [0, 0, 1])
    with pytest.raises(ValueError, match=r"tokens\[1\] must be in "
                       r"-2147483648..2147483647, got 2147483648"):
        scheduler.commit_tokens(step, [1, 2**31])
    with pytest.raises(ValueError, match=r"tokens\[0\] must be in "
                       r"-2147483648..2147483647, got -2147483649"):
        scheduler.commit_tokens(step, array.array("q", [-2**31 - 1, 0]))
    with pytest.raises(TypeError, match=r"tokens\[0\] must be an int, got "
                       r"float"):
        scheduler.commit_tokens(step, [1.5, 2])
    with pytest.raises(TypeError, match="tokens must be a list or tuple of "
                       "ints, an int32 buffer or a tensor, got str"):
        scheduler.commit_tokens(step, "ab")
    with pytest.raises(TypeError, match="step must be an attnc.Step, got "
                       "list"):
        scheduler.commit_tokens([1, 2], [1, 2])
    with pytest.raises(InvalidArgumentError, match=r"stops\[1\] must be 0 or "
                       r"1, got 2"):
        scheduler.commit_tokens(step, [1, 2], [0, 2])
    # A step of another scheduler, or one committed already, is not the
    # step this one awaits samples for.
    other, foreign = first_step()
    with pytest.raises(ValueError, match="step is not the step this "
                       "scheduler awaits samples for"):
        scheduler.commit_tokens(foreign, [1, 2])
    # Nothing refused changed anything.
    assert scheduler.commit_tokens(step, [5, 6], [True, False]) == [1]
    with pytest.raises(ValueError, match="step is not the step this "
                       "scheduler awaits samples for"):
        scheduler.commit_tokens(step, [5, 6])
    scheduler.close()
    with pytest.raises(ValueError, match="this scheduler has been released"):
        scheduler.commit_tokens(step, [5, 6])


def test_commit_checks_samples_on_its_fast_path_too():
    """Samples of four fields go in as columns; one that does not fit
    still names its field."""
    scheduler, step = first_step()
    with pytest.raises(ValueError, match=r"samples\[1\].token must be in"):
        scheduler.commit([attnc.Sample(1, 5), attnc.Sample(2, 2**31)])
    with pytest.raises(TypeError, match=r"samples\[0\].token must be an int, "
                       r"got float"):
        scheduler.commit([attnc.Sample(1, 5.0), attnc.Sample(2, 6)])
    with pytest.raises(ValueError, match=r"samples\[1\].stop must be a bool "
                       r"\(or 0 or 1\), got 2"):
        scheduler.commit([attnc.Sample(1, 5), attnc.Sample(2, 6, 2)])
    with pytest.raises(ValueError, match=r"samples\[0\].request must be in"):
        scheduler.commit([attnc.Sample(2**63, 5), attnc.Sample(2, 6)])
    with pytest.raises(InvalidArgumentError, match="sample 0 is for request "
                       "2, the step's sampler 0 is request 1"):
        scheduler.commit([attnc.Sample(2, 5), attnc.Sample(1, 6)])
    assert scheduler.commit([attnc.Sample(1, 5, True),
                             attnc.Sample(2, 6)]) == [1]


def test_overlapped_steps_read_pending_samples():
    """A step formed before the last one's commit: its decodes' tokens are
    placeholders, and token_from_sample names the sampler of the step
    before whose sample each row feeds. Commits take the oldest step."""
    scheduler, first = first_step()
    second = scheduler.step()
    assert second.num_decodes == 2
    assert second.view("token_from_sample").tolist() == [0, 1]
    assert second.tokens == [-1, -1]
    with pytest.raises(InvalidArgumentError, match="two steps await their "
                       "samples"):
        scheduler.step()
    with pytest.raises(ValueError, match="step is not the step this "
                       "scheduler awaits samples for"):
        scheduler.commit_tokens(second, [1, 2])
    with pytest.raises(InvalidArgumentError, match="the oldest of 2 "
                       "uncommitted steps has 2 samplers, got 1 samples"):
        scheduler.commit([attnc.Sample(1, 7)])
    scheduler.commit_tokens(first, [500, 501])
    scheduler.commit([attnc.Sample(1, 502), attnc.Sample(2, 503)])
    third = scheduler.step()
    assert third.tokens == [502, 503]
    assert third.token_from_sample == [-1, -1]


def test_clip_max_new_tokens_bounds_what_admission_reserves():
    """Eight prompts of a page asking for 200 tokens: unclipped each
    reserves ~0.7 x 200 tokens (one fits in 64 pages of 4), clipped to 8
    ~0.7 x 8 (all do)."""
    def admitted(**config):
        pool, cache, scheduler = make(64, **config)
        for r in range(8):
            scheduler.add(r, list(range(10 * r + 1, 10 * r + 5)),
                          max_tokens=200)
        return len(scheduler.step().admitted)

    assert admitted() == 1
    assert admitted(clip_max_new_tokens=8) == 8


def test_dfs_weight_window_bounds_what_the_policy_orders():
    """A cached prefix that two waiting requests extend, and before them a
    request that shares nothing: DFS-weight over the whole queue admits
    the prefix's first; over a window of one, the first to arrive."""
    def first_admitted(window):
        pool, cache, scheduler = make(64, policy="dfs-weight", max_running=1,
                                      dfs_weight_window=window)
        prefix = list(range(1, 9))
        scheduler.add(0, prefix + [900], max_tokens=1)
        step = scheduler.step()
        scheduler.commit_tokens(step, [7])
        assert cache.cached_tokens == 8
        scheduler.add(1, list(range(500, 506)), max_tokens=1)
        scheduler.add(2, prefix + [600, 601, 602], max_tokens=1)
        scheduler.add(3, prefix + [700, 701, 702], max_tokens=1)
        return scheduler.step().admitted

    assert first_admitted(0) == [2]
    assert first_admitted(1) == [1]


def test_the_new_settings_are_checked():
    pool = attnc.KVPool(16, page_size=4, memory="accounting")
    cache = attnc.RadixCache(pool)
    with pytest.raises(InvalidArgumentError, match="scheduler max_tokens "
                       "clip must be at least 1, got 0"):
        attnc.Scheduler(pool, cache, clip_max_new_tokens=0)
    with pytest.raises(InvalidArgumentError, match="scheduler DFS-weight "
                       r"window must be 0 \(the whole queue\) or more, got "
                       "-1"):
        attnc.Scheduler(pool, cache, dfs_weight_window=-1)
    with pytest.raises(TypeError, match="clip_max_new_tokens must be an int, "
                       "got str"):
        attnc.Scheduler(pool, cache, clip_max_new_tokens="8")
    with pytest.raises(ValueError, match="dfs_weight_window must be in"):
        attnc.Scheduler(pool, cache, dfs_weight_window=2**63)
    attnc.Scheduler(pool, cache, clip_max_new_tokens=1,
                    dfs_weight_window=0).close()


def test_commit_tokens_takes_torch_tensors():
    """int32 CPU tensors are read in place; others (int64, strided, on the
    GPU) converted. Runs where torch is installed."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    forms = [lambda t: torch.tensor(t, dtype=torch.int32),
             lambda t: torch.tensor(t, dtype=torch.int64),
             lambda t: torch.tensor([v for pair in zip(t, t) for v in pair],
                                    dtype=torch.int32)[::2]]
    if torch.cuda.is_available():
        forms.append(lambda t: torch.tensor(t, dtype=torch.int32,
                                            device="cuda"))
    for make_tokens in forms:
        scheduler, step = first_step()
        scheduler.commit_tokens(step, make_tokens([300, 301]),
                                torch.tensor([0, 1], dtype=torch.int32))
        following = scheduler.step()
        assert following.tokens == [300]  # request 2 stopped
    with pytest.raises(ValueError, match=r"tokens\[0\] must be in"):
        scheduler, step = first_step()
        scheduler.commit_tokens(step, torch.tensor([2**40, 1]))
