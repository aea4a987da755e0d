"""attn_implementation="attnc" in transformers on the GPU, with the real
kernels: attention_forward against transformers' SDPA on random tensors,
and small random Llama and Gemma 2 models in bfloat16 against the same
models' SDPA (Gemma 2: eager, which applies its soft-cap), for a forward
pass and static-cache generation. Whole-model logits carry bf16's own
error (about 1% here with SDPA too), so a model is held to that: no
further from the float32 model than the bf16 reference is."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed")
import attnc.hf as hf  # noqa: E402
from transformers.integrations.sdpa_attention import \
    sdpa_attention_forward  # noqa: E402

from test_hf import HEADS, KV_HEADS, REFERENCES, Layer, masking_utils, \
    prompts  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA GPU on this machine"),
]

BF16 = dict(dtype=torch.bfloat16, device="cuda")
F32 = dict(dtype=torch.float32, device="cuda")


@pytest.fixture(autouse=True)
def registered():
    hf.register()


def relative_error(ours, ref):
    ours, ref = ours.double(), ref.double()
    assert not torch.isnan(ours).any(), "NaN in attnc's result"
    return ((ours - ref).norm() / ref.norm()).item()


# --- attention_forward on the kernels, against SDPA in float32 ---

DIM = 64


def qkv(batch, q_len, kv_len, seed=0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    shape = dict(device="cuda", generator=generator)
    q = torch.randn(batch, q_len, HEADS, DIM, **shape)
    k = torch.randn(batch, kv_len, KV_HEADS, DIM, **shape)
    v = torch.randn(batch, kv_len, KV_HEADS, DIM, **shape)
    return tuple(x.to(torch.bfloat16).transpose(1, 2) for x in (q, k, v))


def sdpa(layer, q, k, v, mask, **kwargs):
    """transformers' SDPA on the same bf16 inputs, computed in float32."""
    return sdpa_attention_forward(layer, q.float(), k.float(), v.float(),
                                  mask, **kwargs)[0]


def random_mask(shape, seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    mask = torch.rand(shape, device="cuda", generator=generator) < 0.6
    mask[..., 0] = True  # SDPA gives NaN to a query that sees nothing
    return mask


@pytest.mark.parametrize("q_len, kv_len, causal", [
    (200, 200, True), (1, 300, True), (130, 130, False),
    (64, 300, True)])  # a prefill into an empty static cache
def test_no_mask(q_len, kv_len, causal):
    layer = Layer(is_causal=causal)
    q, k, v = qkv(2, q_len, kv_len)
    out, _ = hf.attention_forward(layer, q, k, v, None, scaling=0.1)
    assert out.shape == (2, q_len, HEADS, DIM)
    # Told is_causal, as transformers before 5 did not read the layer's.
    ref = sdpa(layer, q, k, v, None, scaling=0.1,
               is_causal=causal and q_len > 1)
    assert relative_error(out, ref) < 1e-2


@pytest.mark.parametrize("mask_shape", [
    (2, 1, 70, 300), (1, 1, 70, 300), (2, HEADS, 70, 300),
    (2, 1, 1, 300)])
def test_bool_masks(mask_shape):
    layer = Layer()
    q, k, v = qkv(2, mask_shape[2], 300)
    mask = random_mask(mask_shape, 1)
    out, _ = hf.attention_forward(layer, q, k, v, mask)
    assert relative_error(out, sdpa(layer, q, k, v, mask)) < 1e-2


def test_static_cache_mask_rows_are_query_rows():
    """40 queries at positions 100..139 of a 512-slot cache."""
    layer = Layer()
    q, k, v = qkv(2, 40, 512)
    positions = torch.arange(100, 140, device="cuda")[:, None]
    mask = (torch.arange(512, device="cuda")[None, :] <= positions)[
        None, None].expand(2, 1, 40, 512).clone()
    mask[1, :, :, :7] = False  # left padding
    out, _ = hf.attention_forward(layer, q, k, v, mask)
    assert relative_error(out, sdpa(layer, q, k, v, mask)) < 1e-2


def test_causal_sliding_prefill_mask_skips_tiles_exactly():
    layer = Layer()
    q, k, v = qkv(2, 300, 300)
    rows = torch.arange(300, device="cuda")[:, None]
    keys = torch.arange(300, device="cuda")[None, :]
    mask = ((keys <= rows) & (keys > rows - 64))[None, None].expand(
        2, 1, 300, 300).clone()
    out, _ = hf.attention_forward(layer, q, k, v, mask, sliding_window=64)
    assert hf._MASKS[next(reversed(hf._MASKS))].window == 63
    assert relative_error(out, sdpa(layer, q, k, v, mask)) < 1e-2


def test_float_mask_with_biases():
    layer = Layer()
    q, k, v = qkv(2, 50, 200)
    generator = torch.Generator(device="cuda").manual_seed(3)
    bias = torch.randn(2, 1, 50, 200, device="cuda", generator=generator)
    bias[~random_mask((2, 1, 50, 200), 4)] = float("-inf")
    out, _ = hf.attention_forward(layer, q, k, v, bias.to(torch.bfloat16))
    assert relative_error(out, sdpa(layer, q, k, v, bias.to(
        torch.bfloat16).float())) < 1e-2


def test_softcap_and_window():
    layer = Layer()
    q, k, v = qkv(1, 256, 256)
    out, _ = hf.attention_forward(layer, q, k, v, None, softcap=5.0,
                                  sliding_window=32)
    scores = torch.einsum("bhqd,bhkd->bhqk", q.float(),
                          k.float().repeat_interleave(HEADS // KV_HEADS, 1))
    scores = 5.0 * torch.tanh(scores * DIM ** -0.5 / 5.0)
    rows = torch.arange(256, device="cuda")[:, None]
    keys = torch.arange(256, device="cuda")[None, :]
    scores = scores.masked_fill(~((keys <= rows) & (keys > rows - 32)),
                                float("-inf"))
    ref = torch.softmax(scores, -1) @ v.float().repeat_interleave(
        HEADS // KV_HEADS, 1)
    assert relative_error(out, ref.transpose(1, 2)) < 1e-2


# --- whole models ---

def no_worse_than_reference(ours, reference, exact, where):
    """ours and reference (bf16 logits) against exact (the float32 model's)
    at `where`: attnc's error is bf16's, not more."""
    ours, reference, exact = ours[where], reference[where], exact[where]
    mine = relative_error(ours, exact)
    theirs = relative_error(reference, exact)
    assert mine <= 1.5 * theirs + 2e-3, (mine, theirs)
    assert relative_error(ours, reference) < 3e-2


@pytest.mark.parametrize("name", REFERENCES)
@pytest.mark.parametrize("length, padding", [(14, 0), (14, 4), (240, 37)])
def test_logits(name, length, padding):
    make, reference = REFERENCES[name]
    extra = dict(sliding_window=64) if name == "gemma2" else {}
    ids, mask = (x.to("cuda") for x in prompts(length=length, padding=padding))
    with torch.no_grad():
        ours = make("attnc", **BF16, **extra)(ids, attention_mask=mask)
        theirs = make(reference, **BF16, **extra)(ids, attention_mask=mask)
        exact = make(reference, **F32, **extra)(ids, attention_mask=mask)
    # Padded queries see no key: attnc gives them zeros, never NaN.
    assert not torch.isnan(ours.logits).any()
    no_worse_than_reference(ours.logits, theirs.logits, exact.logits,
                            mask.bool())


def compile_option(compiled):
    """generate()'s keyword for automatic torch.compile over a static
    cache, where this transformers has one: off unless `compiled`."""
    from transformers import GenerationConfig
    if not hasattr(GenerationConfig(), "disable_compile"):
        if compiled:
            pytest.skip("this transformers does not compile generate()")
        return {}
    return dict(disable_compile=not compiled)


@pytest.mark.parametrize("name, padding, compiled", [
    ("llama", 0, False), ("llama", 5, False), ("gemma2", 0, False),
    ("gemma2", 5, False),
    # transformers compiles a static-cache decode step on the GPU by
    # default: attnc's steps then run around the graphs.
    ("llama", 5, True)])
def test_static_cache_generation(name, padding, compiled):
    """Greedy steps over a static cache. Each step's logits are compared
    with a full forward pass over the tokens attnc chose (so that a flipped
    near-tie does not derail the rest), and each token with the float32
    model's choice where that choice is clear."""
    make, reference = REFERENCES[name]
    if name == "gemma2" and masking_utils is None:
        pytest.skip("transformers before 4.53 cuts Gemma 2's sliding masks "
                    "narrower than a static cache's keys: its own SDPA "
                    "fails there too")
    extra = dict(sliding_window=16) if name == "gemma2" else {}
    ids, mask = (x.to("cuda") for x in prompts(length=40, padding=padding))
    steps = 6
    generated = make("attnc", **BF16, **extra).generate(
        ids, attention_mask=mask, max_new_tokens=steps,
        min_new_tokens=steps, do_sample=False, pad_token_id=0,
        cache_implementation="static", output_logits=True,
        return_dict_in_generate=True, **compile_option(compiled))
    tokens = generated.sequences
    ours = torch.stack(generated.logits, dim=1)  # [batch, steps, vocab]
    full_mask = torch.cat([mask, torch.ones_like(mask[:, :steps])], dim=1)
    at = slice(ids.shape[1] - 1, ids.shape[1] - 1 + steps)
    with torch.no_grad():
        theirs = make(reference, **BF16, **extra)(
            tokens, attention_mask=full_mask).logits[:, at]
        exact = make(reference, **F32, **extra)(
            tokens, attention_mask=full_mask).logits[:, at]
    everywhere = torch.ones(ours.shape[:2], dtype=torch.bool, device="cuda")
    no_worse_than_reference(ours, theirs, exact, everywhere)
    top = exact.topk(2, dim=-1).values
    clear = (top[..., 0] - top[..., 1]) > 0.2 * exact.pow(2).mean(
        -1).sqrt()
    chosen = tokens[:, ids.shape[1]:]
    assert torch.equal(chosen[clear], exact.argmax(-1)[clear])
