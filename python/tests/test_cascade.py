"""CascadeAttention's checks and launch grouping, without torch or a GPU
(test_cascade_gpu.py runs it)."""

import pytest

import attnc
from attnc._capi import LIMITS
from attnc.cascade import shared_runs
from fakes import FakeTensor


def index(values):
    return FakeTensor((len(values),), "torch.int32", device="cpu",
                      values=values)


def level(qo, kv, indices, last):
    return tuple(index(a) for a in (qo, kv, indices, last))


# Two decodes under one prefix of two pages; each with one page of its own.
SHARED = ([0, 2], [0, 2], [4, 5], [16])
OWN = ([0, 1, 2], [0, 1, 2], [6, 7], [3, 9])


def test_entries_with_rows_and_pages_launch_in_runs():
    # Entry 1 has no pages, entry 3 no rows: runs [0, 1) and [2, 3).
    assert shared_runs([0, 2, 3, 5, 5], [0, 2, 2, 3, 4]) == [(0, 1), (2, 3)]
    assert shared_runs([0, 4], [0, 0]) == []
    assert shared_runs([0, 1, 2], [0, 1, 2]) == [(0, 2)]


@pytest.mark.parametrize("levels, words", [
    ([], "levels needs at least the last level"),
    ([level(*OWN)[:3]], "levels\\[0\\] must be \\(qo_indptr"),
    ([level([0, 3], *SHARED[1:]), level(*OWN)],
     "levels\\[0\\].qo_indptr must run from 0 to 2"),
    ([level([0, 2, 1, 2], [0, 1, 1, 2], [4, 5], [16, 0, 16]), level(*OWN)],
     "levels\\[0\\].qo_indptr must not decrease"),
    ([level([0, 2], [0, 2], [4, 5], [16, 16]), level(*OWN)],
     "levels\\[0\\] needs kv_indptr of 2 and kv_last_page_len of 1"),
    ([level([0, 2], [0, 3], [4, 5], [16]), level(*OWN)],
     "levels\\[0\\].kv_indptr must not decrease nor pass kv_indices' end"),
    # A shared entry's last page holds at least one key.
    ([level([0, 2], [0, 2], [4, 5], [0]), level(*OWN)],
     "levels\\[0\\].kv_last_page_len must be in 1..16"),
    ([level(*SHARED)] * LIMITS["max_merge_states"] + [level(*OWN)],
     "levels holds at most"),
])
def test_plan_checks_its_levels(levels, words):
    wrapper = attnc.CascadeAttention(32, 8, 128, 16, causal=True)
    with pytest.raises(ValueError, match=words):
        wrapper.plan(levels)


def test_run_before_plan_is_an_error():
    wrapper = attnc.CascadeAttention(32, 8, 128, 16)
    with pytest.raises(RuntimeError, match="call plan\\(\\) before run\\(\\)"):
        wrapper.run(FakeTensor((2, 32, 128)), FakeTensor((8, 16, 8, 128)),
                    FakeTensor((8, 16, 8, 128)))


def test_shared_levels_refuse_positions():
    # What the shared levels' kernel refuses, the variant says at once.
    attnc.Variant.from_spec(query_heads=32, kv_heads=8, head_dim=128,
                            query_layout="ragged", kv_layout="paged",
                            shared_keys=True, return_lse=True)
    with pytest.raises(attnc.AttncError,
                       match="with shared_keys cannot take causal"):
        attnc.Variant.from_spec(query_heads=32, kv_heads=8, head_dim=128,
                                query_layout="ragged", kv_layout="paged",
                                shared_keys=True, causal=True)


def test_mla_cascade_checks_as_the_gqa_one():
    wrapper = attnc.CascadeMLAAttention(16, page_size=64, sm_scale=0.07)
    with pytest.raises(RuntimeError, match="call plan\\(\\) before run\\(\\)"):
        wrapper.run(FakeTensor((2, 16, 512)), FakeTensor((2, 16, 64)),
                    FakeTensor((8, 64, 512)), FakeTensor((8, 64, 64)))
    with pytest.raises(ValueError,
                       match="levels\\[0\\].kv_last_page_len must be in "
                             "1..64"):
        wrapper.plan([level([0, 2], [0, 2], [4, 5], [0]), level(*OWN)])
