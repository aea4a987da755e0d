"""The reference engine (examples/engine) against the model's own greedy
generate(), for every request and every parallel sample: random-weight
Llama-style and Gemma-2-style models, with prefix sharing, chunked
prefill, preemption and n > 1 all happening (asserted, not assumed). On
the CPU the engine attends with its torch paged-attention reference; under
the `gpu` marker, with attnc's paged kernels. Then the same check with a
bug planted in the engine, to show it can fail."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pytest.importorskip("transformers", reason="transformers is not installed")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from engine import check  # noqa: E402
from engine.attention import LayerAttention, TorchBackend  # noqa: E402
from engine.caches import OwnCaches  # noqa: E402

WORKLOAD = check.DEFAULT_WORKLOAD


@pytest.fixture(autouse=True)
def one_cpu_thread():
    """Small ops on a loaded machine: one thread is several times faster
    than torch's default pool, which contends for the cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


_REFERENCES = {}


def reference(name, device):
    """(model, prompts, generate()'s outputs), made once per model."""
    key = (name, device)
    if key not in _REFERENCES:
        model = check.make_model(name, device=device)
        prompts = check.make_prompts(model, WORKLOAD)
        _REFERENCES[key] = (model, prompts, check.reference_outputs(
            model, prompts, WORKLOAD.max_tokens))
    return _REFERENCES[key]


def run(name, backend, device="cpu", storage="own"):
    model, prompts, outputs = reference(name, device)
    engine = check.run_engine(model, prompts, WORKLOAD, backend, storage)
    mismatches, min_margin, max_error = check.compare(engine, outputs,
                                                      prompts)
    history, stats = engine.history, engine.stats()
    engine.close()
    return mismatches, min_margin, max_error, history, stats


def assert_matches_generate(name, backend, device, storage):
    mismatches, min_margin, max_error, history, stats = run(
        name, backend, device, storage)
    print(f"{name} {storage} on {device}: smallest top-1 margin "
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
    mismatches, _, _, history, _ = run("gemma2", "attnc")
    assert mismatches == []
    specs = sorted((w.spec for w in CpuPagedAttention.made),
                   key=lambda spec: spec.window is None)
    assert specs == [LayerAttention(80 ** -0.5, 47, 8.0),
                     LayerAttention(80 ** -0.5, None, 8.0)]
    steps = sum(1 for r in history if r.requests)
    assert [w.plans for w in CpuPagedAttention.made] == [steps, steps]


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
def test_attnc_engine_matches_generate_on_the_gpu(name, storage):
    assert_matches_generate(name, "attnc", "cuda", storage)
