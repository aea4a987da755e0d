"""Step.cascade_levels: a step's shared-prefix levels for cascade attention
(Scheduler(cascade=True)), as attnc.CascadeAttention.plan and FlashInfer's
MultiLevelCascadeAttentionWrapper.plan take them. No torch, no GPU (the
tensors' case runs where torch is installed)."""

import pytest

import attnc
from attnc.errors import InvalidArgumentError
from test_serving import make, serve

PAGE = 4


def shared_workload():
    """Six requests under a 16-token prefix, four of them under 16 more;
    {id: prompt}, {id: answer length}."""
    a = list(range(1, 17))
    b = list(range(100, 116))
    prompts = {r: a + (b if r < 4 else []) + [1000 + r] for r in range(6)}
    return prompts, {r: 6 for r in prompts}


def check_levels(step):
    """The contract (EngineBatch::cascade): every level partitions the rows;
    a request's pages, level by level, are its page table's."""
    levels = step.cascade_level_views()
    if not levels:
        return 0
    rows, n = step.num_tokens, step.num_requests
    bounds = set(step.qo_indptr)
    rebuilt = [[] for _ in range(n)]
    for index, (qo, kv, pages, last) in enumerate(levels):
        assert len(qo) == len(kv) == len(last) + 1
        assert qo[0] == 0 and qo[-1] == rows and kv[0] == 0
        assert kv[-1] == len(pages)
        for e in range(len(last)):
            assert qo[e] < qo[e + 1] and {qo[e], qo[e + 1]} <= bounds
            mine = list(pages[kv[e]:kv[e + 1]])
            if index + 1 < len(levels):
                assert last[e] == (PAGE if mine else 0)
            for r in range(n):
                if qo[e] <= step.qo_indptr[r] < qo[e + 1]:
                    rebuilt[r] += mine
    assert list(levels[-1][0]) == step.qo_indptr
    assert list(levels[-1][3]) == step.kv_last_page_len
    for r in range(n):
        table = step.kv_indices[step.kv_indptr[r]:step.kv_indptr[r + 1]]
        assert rebuilt[r] == table, r
    return len(levels)


def serve_shared(**config):
    pool, cache, scheduler = make(128, page_size=PAGE, **config)
    prompts, answers = shared_workload()
    # Warm the cache with the prefixes, then serve the six together.
    scheduler.add(100, prompts[0][:-1], max_tokens=1)
    scheduler.add(104, prompts[4][:-1], max_tokens=1)
    serve(scheduler, {100: 1, 104: 1})
    for r, prompt in prompts.items():
        scheduler.add(r, prompt, max_tokens=answers[r])
    seen = []
    steps, _, _ = serve(scheduler, answers,
                        check=lambda step, _: seen.append(check_levels(step)))
    return steps, seen


def test_cascade_levels_give_back_every_requests_pages():
    steps, seen = serve_shared(cascade=True, cascade_min_sharers=4,
                               cascade_min_shared_tokens=16)
    assert max(seen) == 3, "a level for all six, one for four, the last"
    decoding = [s for s in steps if s.num_decodes == 6][0]
    qo, kv, pages, last = decoding.cascade_level_views()[0]
    assert list(qo) == [0, 6] and len(pages) == 4 and list(last) == [PAGE]
    # Requests under one node are contiguous rows.
    under = sorted(decoding.requests.index(r) for r in range(4))
    assert under == list(range(under[0], under[0] + 4))


def test_no_levels_unless_asked_or_worth_it():
    for config in ({}, dict(cascade=True, cascade_min_sharers=7),
                   dict(cascade=True, cascade_min_shared_tokens=33)):
        steps, seen = serve_shared(**config)
        assert set(seen) == {0}, config
        assert all(step.cascade_levels == [] for step in steps)
        assert steps[0].view("cascade_kv_indices").tolist() == []


def test_the_cascade_settings_are_checked():
    pool = attnc.KVPool(16, page_size=4, memory="accounting")
    cache = attnc.RadixCache(pool)
    with pytest.raises(InvalidArgumentError, match="scheduler cascade sharers "
                       r"must be in \[1, 2147483647\], got 0"):
        attnc.Scheduler(pool, cache, cascade_min_sharers=0)
    with pytest.raises(InvalidArgumentError, match="scheduler cascade shared "
                       "tokens must be in"):
        attnc.Scheduler(pool, cache, cascade_min_shared_tokens=-1)
    with pytest.raises(ValueError, match="cascade must be"):
        attnc.Scheduler(pool, cache, cascade=2)


def test_cascade_levels_are_tensors_over_the_steps_buffers():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    steps, _ = serve_shared(cascade=True, cascade_min_sharers=2,
                            cascade_min_shared_tokens=4)
    step = next(s for s in steps if s.cascade_level_views())
    for views, tensors in zip(step.cascade_level_views(), step.cascade_levels):
        for view, tensor in zip(views, tensors):
            assert tensor.dtype == torch.int32
            assert tensor.tolist() == view.tolist()
