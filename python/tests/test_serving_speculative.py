"""Speculative decoding from Python: Scheduler(speculative_tokens=),
Scheduler.propose, step.num_drafts and the verdicts a commit takes
(Sample.rejected, commit_tokens' rejected)."""

import pytest

import attnc
from attnc.errors import AttncError, InvalidArgumentError


def make(pages=64, page_size=4, **config):
    pool = attnc.KVPool(pages, page_size=page_size, memory="accounting")
    cache = attnc.RadixCache(pool)
    return pool, cache, attnc.Scheduler(pool, cache, **config)


def true_token(r, n):
    """The stand-in greedy target: request r's n-th output token."""
    return 10**6 + 1000 * r + n


PROMPTS = {r: list(range(1, 7)) + [100 + 10 * r + i for i in range(3)]
           for r in range(6)}
ANSWERS = {r: 3 + (r * 5) % 10 for r in range(6)}  # each under max_tokens
MAX_TOKENS = 10


def serve(drafts=0, corrupt=False):
    """Serves PROMPTS synchronously. With drafts > 0, every request that
    sampled and runs on is proposed its true next tokens (with `corrupt`,
    those where (r + n) % 3 == 0 off by 7), and the loop verifies greedily:
    a request's samples after the first that differs from the draft the
    next row fed are rejected. Odd steps commit Samples, even ones arrays.
    Returns the outputs, the steps, the drafts fed and the rejected
    samples."""
    pool, cache, scheduler = make(speculative_tokens=drafts)
    for r, prompt in PROMPTS.items():
        scheduler.add(r, prompt, max_tokens=MAX_TOKENS)
    outputs = {r: [] for r in PROMPTS}
    steps = fed = rejections = 0
    while not scheduler.idle:
        assert steps < 500, "the scheduler never went idle"
        steps += 1
        step = scheduler.step()
        num_drafts = dict(zip(step.requests, step.num_drafts))
        fed += sum(step.num_drafts)
        tokens, stops, rejected, rows = [], [], [], {}
        rejecting = set()
        for k, r in enumerate(step.samplers):
            j = rows[r] = rows.get(r, -1) + 1
            n = len(outputs[r]) + j
            tokens.append(true_token(r, n))
            stops.append(n + 1 >= ANSWERS[r])
            rejected.append(r in rejecting)
            if j < num_drafts.get(r, 0):
                draft = step.tokens[step.sample_rows[k] + 1]
                if draft != tokens[-1]:
                    rejecting.add(r)
        rejections += sum(rejected)
        if steps % 2:
            finished = scheduler.commit([
                attnc.Sample(r, t, s, 0, x) for r, t, s, x in
                zip(step.samplers, tokens, stops, rejected)])
        else:
            finished = scheduler.commit_tokens(step, tokens, stops, rejected)
        stopped = set()
        for r, t, s, x in zip(step.samplers, tokens, stops, rejected):
            if not x and r not in stopped:
                outputs[r].append(t)
                if s:
                    stopped.add(r)
        if drafts:
            for r in rows:
                if r in finished:
                    continue
                n = len(outputs[r])
                scheduler.propose(r, [true_token(r, n + j) +
                                      (7 if corrupt and (r + n + j) % 3 == 0
                                       else 0) for j in range(drafts)])
    assert pool.num_free_pages + cache.evictable_tokens // 4 == 64
    return outputs, steps, fed, rejections


def test_a_speculative_loop_outputs_what_the_plain_loop_does():
    plain, plain_steps, fed, rejections = serve()
    assert {r: len(o) for r, o in plain.items()} == ANSWERS
    assert fed == rejections == 0
    for corrupt in (False, True):
        outputs, steps, fed, rejections = serve(drafts=4, corrupt=corrupt)
        assert outputs == plain
        assert fed > 0
        assert steps < plain_steps
        assert (rejections > 0) == corrupt


def test_a_verification_step_lists_its_drafts():
    pool, cache, scheduler = make(speculative_tokens=2)
    scheduler.add(0, [1, 2, 3, 4], max_tokens=20)
    step = scheduler.step()
    assert step.num_drafts == [0]
    scheduler.commit_tokens(step, [500])
    scheduler.propose(0, (501, 502))
    step = scheduler.step()
    assert step.num_drafts == [2]
    assert step.view("num_drafts").tolist() == [2]
    assert step.tokens == [500, 501, 502]
    assert step.samplers == [0, 0, 0]
    # The target agrees with 501, says 9 after it: 502's row is rejected.
    assert scheduler.commit_tokens(step, [501, 9, 7],
                                   rejected=[False, False, True]) == []
    step = scheduler.step()
    assert step.tokens == [9] and step.num_drafts == [0]


def test_speculative_errors_are_reported():
    pool = attnc.KVPool(64, page_size=4, memory="accounting")
    cache = attnc.RadixCache(pool)
    with pytest.raises(InvalidArgumentError, match=r"scheduler speculative "
                       r"tokens must be in \[0 \(off\), 2147483647\], got -1"):
        attnc.Scheduler(pool, cache, speculative_tokens=-1)
    with pytest.raises(TypeError, match="speculative_tokens must be an int"):
        attnc.Scheduler(pool, cache, speculative_tokens="2")
    scheduler = attnc.Scheduler(pool, cache, speculative_tokens=2)
    scheduler.add(0, [1, 2, 3, 4], max_tokens=20)
    with pytest.raises(AttncError, match="request 0 is not running") as error:
        scheduler.propose(0, [5])
    assert error.value.kind == "not found"
    step = scheduler.step()
    with pytest.raises(InvalidArgumentError, match="request 0 computes its "
                       "prompt still"):
        scheduler.propose(0, [5])
    scheduler.commit_tokens(step, [500])
    with pytest.raises(InvalidArgumentError, match=r"request 0 is given 3 "
                       r"drafts, a step verifies at most 2 "
                       r"\(speculativeTokens\)"):
        scheduler.propose(0, [501, 502, 503])
    with pytest.raises(InvalidArgumentError, match="request 0's draft 1 is "
                       "token -1: tokens are not negative"):
        scheduler.propose(0, [501, -1])
    with pytest.raises(AttncError, match="request 0 branch 1 is not "
                       "running"):
        scheduler.propose(0, [501], branch=1)
    with pytest.raises(ValueError, match=r"drafts\[0\] must be in"):
        scheduler.propose(0, [2**31])
    with pytest.raises(TypeError, match="drafts must be a list or tuple"):
        scheduler.propose(0, "ab")
    with pytest.raises(ValueError, match="branch must be in"):
        scheduler.propose(0, [501], branch=2**31)
    scheduler.propose(0, [])  # no drafts are always fine
    scheduler.propose(0, [501, 502])
    step = scheduler.step()
    with pytest.raises(ValueError, match="rejected has 2 entries, the step "
                       "has 3 samplers"):
        scheduler.commit_tokens(step, [501, 9, 7], rejected=[0, 0])
    with pytest.raises(InvalidArgumentError, match=r"rejected\[2\] must be 0 "
                       r"or 1, got 2"):
        scheduler.commit_tokens(step, [501, 9, 7], rejected=[0, 0, 2])
    with pytest.raises(ValueError, match=r"samples\[2\].rejected must be a "
                       r"bool"):
        scheduler.commit([(0, 501), (0, 9), (0, 7, False, 0, 2)])
    with pytest.raises(InvalidArgumentError, match="sample 0 rejects the "
                       "first token of request 0's verification"):
        scheduler.commit([attnc.Sample(0, t, rejected=True)
                          for t in (501, 9, 7)])
    with pytest.raises(InvalidArgumentError, match="where the step fed "
                       "draft 502"):
        scheduler.commit_tokens(step, [501, 9, 7])
    assert scheduler.commit([attnc.Sample(0, 501), attnc.Sample(0, 9),
                             attnc.Sample(0, 7, rejected=True)]) == []
