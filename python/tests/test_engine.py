"""The reference engine (examples/engine) against the model's own greedy
generate(), for every request and every parallel sample: random-weight
Llama-style and Gemma-2-style models, with prefix sharing, chunked
prefill, preemption and n > 1 all happening (asserted, not assumed). On
the CPU the engine attends with its torch paged-attention reference; under
the `gpu` marker, with attnc's paged kernels. The overlapped loop (each
step formed before the last is committed, its pending rows filled from
the last step's samples on the device) is held to the same, and to the
synchronous loop's tokens; so are prefixes loaded back from a host tier
under the radix cache. Then the same checks with bugs planted in the
engine, to show they can fail."""

import sys
from collections import namedtuple
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pytest.importorskip("transformers", reason="transformers is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from engine import check  # noqa: E402
from engine import engine as engine_loop  # noqa: E402
from engine.attention import LayerAttention, TorchBackend  # noqa: E402
from engine.caches import OwnCaches  # noqa: E402

WORKLOAD = check.DEFAULT_WORKLOAD
# Four phases of three requests over six 96-token prefixes: the second
# phase evicts the first's prefixes (to the host tier, when there is one)
# and the third reads them again.
HOST_TIER_WORKLOAD = WORKLOAD._replace(requests=12, shared_prefixes=6,
                                       prefix_len=96, own_len=(5, 40))
HOST_TIER_PHASES, HOST_PAGES = 4, 128


@pytest.fixture(autouse=True)
def one_cpu_thread():
    """Small ops on a loaded machine: one thread is several times faster
    than torch's default pool, which contends for the cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


_REFERENCES = {}


def reference(name, device, workload=WORKLOAD):
    """(model, prompts, generate()'s outputs), made once per model and
    workload."""
    key = (name, device, workload)
    if key not in _REFERENCES:
        model = check.make_model(name, device=device)
        prompts = check.make_prompts(model, workload)
        _REFERENCES[key] = (model, prompts, check.reference_outputs(
            model, prompts, workload.max_tokens))
    return _REFERENCES[key]


Run = namedtuple(
    "Run", "mismatches min_margin max_error history stats outputs")


def run(name, backend, device="cpu", storage="own", overlap=False,
        **scheduler_options):
    model, prompts, outputs = reference(name, device)
    engine = check.run_engine(model, prompts, WORKLOAD, backend, storage,
                              overlap=overlap, **scheduler_options)
    mismatches, min_margin, max_error = check.compare(engine, outputs,
                                                      prompts)
    result = Run(mismatches, min_margin, max_error, engine.history,
                 engine.stats(), dict(engine.outputs))
    engine.close()
    return result


def assert_matches_generate(name, backend, device, storage, overlap=False,
                            **scheduler_options):
    mismatches, min_margin, max_error, history, stats, _ = run(
        name, backend, device, storage, overlap, **scheduler_options)
    loop = "overlapped" if overlap else "synchronous"
    print(f"{name} {storage} {loop} on {device}: smallest top-1 margin "
          f"{min_margin:.2e}, largest logit error {max_error:.2e} "
          f"({min_margin / max(max_error, 1e-30):.0f}x)")
    # The workload exercised what it is for.
    assert stats.cached_tokens > 0, "no prompt prefix came from the cache"
    assert stats.preemptions > 0 and stats.recomputed_tokens > 0, \
        "nothing was preempted and recomputed"
    assert sum(r.page_copies for r in history) > 0, "no fork copied a page"
    assert any(r.prefill_tokens == WORKLOAD.token_budget for r in history), \
        "no prefill was cut at the token budget"
    assert stats.finished == WORKLOAD.requests
    # Every branch of every request: generate()'s tokens. A mismatch
    # reports the reference's margin and the engine's logit error at the
    # first differing token: a margin below the error is a near-tie, one
    # far above it a bug.
    assert mismatches == [], (
        f"(request, branch, index, margin, logit error) differing from "
        f"generate(): {mismatches}")
    if scheduler_options.get("cascade"):
        assert any(r.pages_read < r.pages_listed for r in history), \
            "no step read a shared prefix once"
    fed_by_pending = sum(1 for r in history if r.pending_rows)
    if overlap:
        assert fed_by_pending > 0, "no step read an uncommitted sample"
    else:
        assert fed_by_pending == 0, "the synchronous loop overlapped"


@pytest.mark.parametrize("name, storage", [
    ("llama", "own"), ("llama", "pool"), ("gemma2", "own")])
def test_cpu_reference_engine_matches_generate(name, storage):
    assert_matches_generate(name, "torch", "cpu", storage)


@pytest.mark.parametrize("storage", ["own", "pool"])
def test_a_lone_request_decodes_one_token_a_step(storage):
    """Steps of a single token: a one-token batch's K/V rows (whose token
    stride torch leaves arbitrary) still go where they belong."""
    model, prompts, outputs = reference("llama", "cpu")
    lone = WORKLOAD._replace(requests=1)
    engine = check.run_engine(model, prompts[:1], lone, "torch", storage)
    assert any(r.decodes == 1 and r.requests == 1 for r in engine.history)
    assert engine.outputs == {(0, 0): outputs[0][0]}
    engine.close()


@pytest.mark.parametrize("name, storage", [
    ("llama", "own"), ("llama", "pool"), ("gemma2", "own")])
def test_cpu_overlapped_engine_matches_generate(name, storage):
    assert_matches_generate(name, "torch", "cpu", storage, overlap=True)


def test_overlapped_and_synchronous_loops_sample_the_same_tokens():
    synchronous = run("llama", "torch")
    overlapped = run("llama", "torch", overlap=True)
    assert overlapped.outputs == synchronous.outputs
    assert len(overlapped.outputs) == sum(
        check.samples_of(r) for r in range(WORKLOAD.requests))


def test_the_overlapped_check_fails_without_token_from_sample(monkeypatch):
    """A pending row (-1, its token the last step's uncommitted sample)
    fed as token 0 instead of the sample token_from_sample names: the
    decodes formed over an uncommitted step read the wrong token."""
    monkeypatch.setattr(engine_loop, "fill_pending_tokens",
                        lambda tokens, from_sample, sampled:
                        tokens.clamp(min=0))
    result = run("llama", "torch", overlap=True)
    assert len(result.mismatches) >= WORKLOAD.requests // 2, \
        result.mismatches


def test_the_overlapped_check_fails_reading_samples_in_batch_order(
        monkeypatch):
    """Pending row i fed the previous step's i-th sample (as if decodes
    and samplers kept one order, which forks, admissions and preemptions
    break) instead of sample token_from_sample[i]."""
    def in_batch_order(tokens, from_sample, sampled):
        rows = torch.arange(len(tokens), device=tokens.device)
        rows = rows.clamp(max=len(sampled) - 1)
        return torch.where(from_sample >= 0, sampled[rows], tokens)

    monkeypatch.setattr(engine_loop, "fill_pending_tokens", in_batch_order)
    assert run("llama", "torch", overlap=True).mismatches


@pytest.mark.parametrize("overlap", [False, True],
                         ids=["synchronous", "overlapped"])
def test_a_stop_token_ends_its_branch_in_either_loop(overlap):
    """Branches end at their first stop token, generate()'s tokens up to
    it; under overlap the step formed before that stop was committed
    samples the branch once more, which is not output."""
    model, prompts, reference_outputs = reference("llama", "cpu")
    counts = {}
    for tokens, _, _ in reference_outputs.values():
        for token in tokens[2:-2]:
            counts[token] = counts.get(token, 0) + 1
    stop = max(counts, key=counts.get)
    engine = check.run_engine(model, prompts, WORKLOAD, "torch",
                              overlap=overlap, stop_tokens=[stop])
    expected, stopped_early = {}, 0
    for r, (tokens, _, _) in reference_outputs.items():
        if stop in tokens:
            tokens = tokens[:tokens.index(stop) + 1]
            stopped_early += len(tokens) < WORKLOAD.max_tokens
        for branch in range(check.samples_of(r)):
            expected[(r, branch)] = tokens
    assert stopped_early >= 2, "the stop token ended too few requests"
    assert engine.outputs == expected
    assert engine.stats().finished == WORKLOAD.requests
    if overlap:
        assert engine.dropped_samples > 0, "no row ran past its stop"
    else:
        assert engine.dropped_samples == 0
    engine.close()


def test_rows_of_a_negative_slot_are_not_written():
    """The scheduler's slots are never negative today, but a negative one
    means "not written" (the pool's append_slots skips it): the step
    context drops such rows before the caches see them."""
    class Recorder:
        def write(self, layer, keys, values, slots):
            self.written = (keys.tolist(), values.tolist(), slots.tolist())

        def layer(self, layer):
            return None, None

    class Attends:
        def run(self, q, k_cache, v_cache, spec):
            return q

    caches = Recorder()
    context = engine_loop.StepContext(
        caches, Attends(), torch.tensor([7, -1, 9]), torch.device("cpu"),
        torch.float32)
    keys = torch.tensor([1.0, 2.0, 3.0])
    context.attend(0, keys, keys, keys * 10, None)
    assert caches.written == ([1.0, 3.0], [10.0, 30.0], [7, 9])


def run_with_host_tier(storage, overlap, device="cpu", backend="torch"):
    model, prompts, outputs = reference("llama", device, HOST_TIER_WORKLOAD)
    engine = check.run_engine(model, prompts, HOST_TIER_WORKLOAD, backend,
                              storage, overlap=overlap,
                              host_pages=HOST_PAGES, phases=HOST_TIER_PHASES)
    mismatches = check.compare(engine, outputs, prompts)[0]
    stats, history = engine.stats(), engine.history
    engine.close()
    return mismatches, stats, history


def assert_host_tier_matches_generate(storage, overlap, device, backend):
    mismatches, stats, history = run_with_host_tier(storage, overlap,
                                                    device, backend)
    assert stats.host_loaded_tokens > 0, "nothing came back from the host"
    assert stats.preemptions > 0, "nothing was preempted"
    assert any(r.pending_rows for r in history) == overlap
    assert stats.finished == HOST_TIER_WORKLOAD.requests
    assert mismatches == [], mismatches


@pytest.mark.parametrize("storage", ["own", "pool"])
@pytest.mark.parametrize("overlap", [False, True],
                         ids=["synchronous", "overlapped"])
def test_prefixes_loaded_back_from_a_host_tier_match_generate(storage,
                                                              overlap):
    """Prefixes evicted to the cache's host tier and loaded back when
    later requests read them: the pool's own caches (the tier moves
    their pages) or the engine's (it applies the step's page_transfers to
    host pages of its own)."""
    assert_host_tier_matches_generate(storage, overlap, "cpu", "torch")


def test_the_host_tier_check_fails_without_the_page_transfers(
        monkeypatch):
    """Caches of the engine's own that ignore the transfers: prefixes
    loaded back read pages that held something else."""
    monkeypatch.setattr(OwnCaches, "transfer_pages",
                        lambda self, transfers: None)
    mismatches, stats, _ = run_with_host_tier("own", overlap=True)
    assert stats.host_loaded_tokens > 0
    assert mismatches, "the loaded prefixes matched without their pages"


class CpuPagedAttention:
    """attnc.PagedAttention's interface over the torch reference, to run
    the engine's attnc backend (wrappers per layer kind, plans per step)
    without a GPU. Records each wrapper's settings and plan count."""

    made = []

    def __init__(self, num_qo_heads, num_kv_heads, head_dim, page_size,
                 kv_layout, dtype, causal, window, softcap, scale):
        assert (kv_layout, causal) == ("NHD", True)
        self.spec = LayerAttention(scale, window, softcap)
        self.reference = TorchBackend(page_size)
        self.plans = 0
        CpuPagedAttention.made.append(self)

    def plan(self, kv_indptr, kv_indices, kv_last_page_len, qo_indptr):
        self.plans += 1
        self.reference.plan(kv_indptr, kv_indices, kv_last_page_len,
                            qo_indptr)

    def run(self, q, k_cache, v_cache):
        return self.reference.run(q, k_cache, v_cache, self.spec)


def test_the_attnc_backend_plans_a_wrapper_per_layer_kind(monkeypatch):
    """Gemma-2's sliding and global layers take two wrappers, each with the
    model's window, soft-cap and scale, planned once a step for all its
    layers; with the reference behind them, generate()'s tokens."""
    import attnc
    monkeypatch.setattr(attnc, "PagedAttention", CpuPagedAttention)
    CpuPagedAttention.made = []
    mismatches, _, _, history, _, _ = run("gemma2", "attnc")
    assert mismatches == []
    specs = sorted((w.spec for w in CpuPagedAttention.made),
                   key=lambda spec: spec.window is None)
    assert specs == [LayerAttention(80 ** -0.5, 47, 8.0),
                     LayerAttention(80 ** -0.5, None, 8.0)]
    steps = sum(1 for r in history if r.requests)
    assert [w.plans for w in CpuPagedAttention.made] == [steps, steps]


# Any sharing at all becomes a cascade level (the scheduler's defaults
# wait for longer prefixes and more sharers than the workload has).
CASCADE = dict(cascade=True, cascade_min_sharers=2,
               cascade_min_shared_tokens=16)


class CpuCascadeAttention:
    """attnc.CascadeAttention's interface over float32 torch attention that
    reads only the levels (never a whole page table): each entry's state
    over its pages (shared levels unmasked, the last causal), merged per
    row. The engine's tokens with it are the scheduler's levels checked
    end to end without a GPU."""

    made = []
    causal_shared_levels = False  # a planted bug when True

    def __init__(self, num_qo_heads, num_kv_heads, head_dim, page_size,
                 kv_layout, dtype, causal, softcap, scale):
        assert (kv_layout, causal) == ("NHD", True)
        self.page_size, self.softcap, self.scale = page_size, softcap, scale
        self.plans = 0
        CpuCascadeAttention.made.append(self)

    def plan(self, levels):
        self.plans += 1
        self.levels = [[a.tolist() for a in level] for level in levels]

    def run(self, q, k_cache, v_cache):
        rows = q.shape[0]
        k_rows = k_cache.reshape(-1, k_cache.shape[-2], q.shape[2])
        v_rows = v_cache.reshape(-1, v_cache.shape[-2], q.shape[2])
        in_page = torch.arange(self.page_size)
        states = []
        for index, (qo, kv, indices, last) in enumerate(self.levels):
            causal = (index == len(self.levels) - 1 or
                      self.causal_shared_levels)
            out = torch.zeros(q.shape, dtype=torch.float32)
            lse = torch.full(q.shape[:2], float("-inf"))
            for e in range(len(qo) - 1):
                pages = torch.tensor(indices[kv[e]:kv[e + 1]]).long()
                if len(pages) == 0 or qo[e] == qo[e + 1]:
                    continue
                kv_len = (len(pages) - 1) * self.page_size + last[e]
                slots = (pages[:, None] * self.page_size +
                         in_page).flatten()[:kv_len].to(q.device)
                group = q.shape[1] // k_rows.shape[1]
                k = k_rows[slots].float().repeat_interleave(group, dim=1)
                v = v_rows[slots].float().repeat_interleave(group, dim=1)
                s = torch.einsum("qhd,khd->hqk", q[qo[e]:qo[e + 1]].float(),
                                 k) * self.scale
                if self.softcap is not None:
                    s = self.softcap * torch.tanh(s / self.softcap)
                if causal:
                    q_len = qo[e + 1] - qo[e]
                    at = torch.arange(q_len)[:, None] + (kv_len - q_len)
                    s = s.masked_fill(torch.arange(kv_len)[None, :] > at,
                                      float("-inf"))
                lse[qo[e]:qo[e + 1]] = s.logsumexp(-1).transpose(0, 1)
                out[qo[e]:qo[e + 1]] = torch.einsum(
                    "hqk,khd->qhd", s.softmax(-1), v)
            states.append((out, lse))
        total = torch.logsumexp(torch.stack([l for _, l in states]), 0)
        merged = sum(o * (l - total).exp()[..., None] for o, l in states)
        return merged.to(q.dtype)


def test_cascade_levels_serve_generate_tokens_on_the_cpu(monkeypatch):
    """The scheduler's cascade levels for every step (shared prompts,
    chunked prefill, forks, preemption), read level by level: generate()'s
    tokens; Gemma-2's sliding layers stay on PagedAttention."""
    import attnc
    monkeypatch.setattr(attnc, "PagedAttention", CpuPagedAttention)
    monkeypatch.setattr(attnc, "CascadeAttention", CpuCascadeAttention)
    CpuCascadeAttention.made = []
    CpuPagedAttention.made = []
    for name in ("llama", "gemma2"):
        assert_matches_generate(name, "attnc", "cpu", "own", **CASCADE)
    assert CpuCascadeAttention.made and all(
        w.plans > 0 for w in CpuCascadeAttention.made)
    # Gemma-2's sliding layers: paged attention, never a cascade.
    assert any(w.spec.window == 47 for w in CpuPagedAttention.made)


def test_the_cascade_check_fails_with_a_causal_shared_level(monkeypatch):
    """Shared levels masked as the last one is (causally, bottom-right
    aligned on the node's keys): a shared prefix's rows lose some of its
    keys."""
    import attnc
    monkeypatch.setattr(CpuCascadeAttention, "causal_shared_levels", True)
    monkeypatch.setattr(attnc, "PagedAttention", CpuPagedAttention)
    monkeypatch.setattr(attnc, "CascadeAttention", CpuCascadeAttention)
    mismatches = run("llama", "attnc", **CASCADE)[0]
    assert mismatches, "a shared level read twice went unnoticed"


class PlantedBug(TorchBackend):
    """The torch reference with one of a layer's settings replaced."""

    def __init__(self, **change):
        super().__init__(page_size=16)
        self.change = change

    def run(self, q, k_cache, v_cache, spec):
        return super().run(q, k_cache, v_cache, spec._replace(**self.change))


@pytest.mark.parametrize("change", [
    dict(softcap=None),  # what transformers' sdpa does to Gemma-2
    dict(window=None),
    dict(scale=64 ** -0.5)],  # 1/sqrt(head_dim), not the model's
    ids=["no soft-cap", "no window", "default scale"])
def test_the_check_fails_without_gemma2_attention_features(change):
    mismatches = run("gemma2", PlantedBug(**change))[0]
    assert len(mismatches) >= 3, mismatches


def test_the_check_fails_without_the_fork_page_copies(monkeypatch):
    """Branches forked from a prompt's partial last page read a page of
    zeros where the prompt's tail should be."""
    monkeypatch.setattr(OwnCaches, "copy_pages", lambda self, copies: None)
    mismatches = run("llama", "torch")[0]
    assert mismatches, "the forked branches matched without their pages"
    assert all(branch > 0 for _, branch, _, _, _ in mismatches), mismatches


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("name, storage", [
    ("llama", "own"), ("llama", "pool"), ("gemma2", "own"),
    ("gemma2", "pool")])
@pytest.mark.parametrize("overlap", [False, True],
                         ids=["synchronous", "overlapped"])
def test_attnc_engine_matches_generate_on_the_gpu(name, storage, overlap):
    assert_matches_generate(name, "attnc", "cuda", storage, overlap)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("name, storage", [
    ("llama", "own"), ("llama", "pool"), ("gemma2", "pool")])
@pytest.mark.parametrize("overlap", [False, True],
                         ids=["synchronous", "overlapped"])
def test_attnc_engine_with_cascade_matches_generate_on_the_gpu(name, storage,
                                                               overlap):
    """attnc.CascadeAttention for every layer without a window, planned
    from the scheduler's levels."""
    assert_matches_generate(name, "attnc", "cuda", storage, overlap,
                            **CASCADE)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("storage", ["own", "pool"])
@pytest.mark.parametrize("overlap", [False, True],
                         ids=["synchronous", "overlapped"])
def test_attnc_engine_with_a_host_tier_matches_generate_on_the_gpu(
        storage, overlap):
    assert_host_tier_matches_generate(storage, overlap, "cuda", "attnc")
