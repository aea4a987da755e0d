"""attn_implementation="attnc" in transformers, on the CPU: attnc.attention
replaced inside attnc.hf by a float reference that honours its contract
(bhsd, bottom-right causal, window, soft-cap, scale, GQA, mods evaluated
on index tensors), so that what attnc.hf passes is checked against
transformers' own SDPA and eager attention in float32, whole models and
generate() included. The mods it passes are also traced and verified by
libattnc. test_hf_gpu.py runs the real kernels."""

import inspect

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed")
import attnc  # noqa: E402
import attnc.hf as hf  # noqa: E402
from attnc.kernel import Variant  # noqa: E402
from attnc.trace import lower, regions  # noqa: E402
from transformers import AutoModelForCausalLM, Gemma2Config, \
    LlamaConfig  # noqa: E402
from transformers.integrations.sdpa_attention import \
    sdpa_attention_forward  # noqa: E402

HEADS, KV_HEADS, DIM = 8, 2, 16
# transformers 4.53 and later build masks per implementation
# (masking_utils); before, each model built its own, per layer for Gemma 2's
# sliding layers.
try:
    from transformers import masking_utils
except ImportError:
    masking_utils = None
_VERIFIED = set()


def _verify(q, k, causal, window, softcap, scale, mask_mod, score_mod):
    """Traces the mods as attnc.attention would and has libattnc verify
    the variant: what runs on the GPU must compile from them."""
    score_text, mask_text, added = lower(score_mod, mask_mod)
    for name, tensor, _ in added:
        assert tensor.dtype in (torch.int32, torch.float32), name
        assert tensor.is_contiguous() and tensor.dim() == 2, name
    key = (score_text, mask_text, causal, window, softcap, scale)
    if key in _VERIFIED:
        return
    Variant.from_spec(query_heads=q.shape[1], kv_heads=k.shape[1],
                      head_dim=q.shape[3], dtype="bfloat16", causal=causal,
                      window=window,
                      softcap=softcap or 0.0, scale=scale or 0.0,
                      score_mod=score_text, mask_mod=mask_text,
                      capture_types=[t for _, _, t in added])
    _VERIFIED.add(key)


def _call(mod, *args, q_len, kv_len):
    """A mod called as attnc calls it: q_len and kv_len by name when it
    takes them."""
    taken = inspect.signature(mod).parameters
    extra = {name: value for name, value in (("q_len", q_len),
                                             ("kv_len", kv_len))
             if name in taken}
    return mod(*args, **extra)


def reference_attention(q, k, v, layout="bhsd", causal=False, window=None,
                        sinks=0, softcap=None, scale=None, mask_mod=None,
                        score_mod=None, captures=()):
    """attnc.attention's contract in float on the CPU: q [B, H, Sq, D],
    k and v [B, KVH, Skv, D]; queries bottom-right aligned; window an int
    (keys to the left) or (left, right); mods evaluated once on broadcast
    index tensors, q_idx the query's position."""
    assert layout == "bhsd" and sinks == 0 and not captures
    batch, heads, q_len, dim = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    assert heads % kv_heads == 0 and v.shape[:3] == k.shape[:3]
    _verify(q, k, causal, window, softcap, scale, mask_mod, score_mod)
    group = heads // kv_heads
    k = k.repeat_interleave(group, 1)
    v = v.repeat_interleave(group, 1)
    scores = (q @ k.transpose(-1, -2)) * (dim ** -0.5 if scale is None
                                          else scale)
    if softcap:
        scores = softcap * torch.tanh(scores / softcap)
    b = torch.arange(batch)[:, None, None, None]
    h = torch.arange(heads)[None, :, None, None]
    position = (torch.arange(q_len) + kv_len - q_len)[None, None, :, None]
    kv = torch.arange(kv_len)[None, None, None, :]
    lengths = dict(q_len=q_len, kv_len=kv_len)
    if score_mod is not None:
        scores = _call(score_mod, scores, b, h, position, kv, **lengths)
    visible = torch.ones(batch, heads, q_len, kv_len, dtype=torch.bool)
    if causal:
        visible = visible & (kv <= position)
    if window is not None:
        left, right = (window, 0) if isinstance(window, int) else window
        visible = visible & (kv >= position - left) & (kv <= position +
                                                       right)
    if mask_mod is not None:
        visible = visible & _call(mask_mod, b, h, position, kv, **lengths)
    scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    out = weights @ v
    # attnc returns a bhsd view of bshd memory.
    return out.transpose(1, 2).contiguous().transpose(1, 2)


@pytest.fixture
def fake(monkeypatch):
    """attnc.hf with the reference in place of attnc.attention (float32
    allowed); yields the keyword arguments of each call."""
    calls = []

    def recorded(q, k, v, **kwargs):
        calls.append(dict(kwargs, q_shape=tuple(q.shape),
                          k_shape=tuple(k.shape)))
        return reference_attention(q, k, v, **kwargs)

    monkeypatch.setattr(hf, "attention", recorded)
    monkeypatch.setattr(hf, "_DTYPES", ("float32",))
    hf._MASKS.clear()
    hf.register()
    return calls


class Layer(torch.nn.Module):
    """What attention_forward reads of a transformers attention layer."""

    def __init__(self, is_causal=True, groups=HEADS // KV_HEADS):
        super().__init__()
        self.is_causal = is_causal
        self.num_key_value_groups = groups


def qkv(batch, q_len, kv_len, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, q_len, HEADS, DIM, generator=generator)
    k = torch.randn(batch, kv_len, KV_HEADS, DIM, generator=generator)
    v = torch.randn(batch, kv_len, KV_HEADS, DIM, generator=generator)
    # transformers' layers give bhsd views of their projections.
    return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def sdpa(layer, q, k, v, mask, **kwargs):
    return sdpa_attention_forward(layer, q, k, v, mask, **kwargs)[0]


# --- attention_forward against transformers' sdpa_attention_forward ---

@pytest.mark.parametrize("q_len, kv_len, causal", [
    (7, 7, True), (1, 9, True), (5, 5, False), (1, 9, False),
    # A causal prefill into an empty static cache: SDPA reads the first
    # q_len keys (top-left), and so must attnc's bottom-right causal.
    (4, 11, True)])
def test_no_mask_is_causal_as_sdpa(fake, q_len, kv_len, causal):
    layer = Layer(is_causal=causal)
    q, k, v = qkv(2, q_len, kv_len)
    out, weights = hf.attention_forward(layer, q, k, v, None, scaling=0.3)
    assert weights is None
    assert out.shape == (2, q_len, HEADS, DIM) and out.is_contiguous()
    # Told is_causal, as transformers before 5 did not read the layer's.
    torch.testing.assert_close(out, sdpa(layer, q, k, v, None, scaling=0.3,
                                         is_causal=causal and q_len > 1))
    assert fake[-1]["causal"] == (causal and q_len > 1)
    assert fake[-1]["k_shape"][2] == (q_len if causal and q_len > 1
                                      else kv_len)


def random_mask(shape, seed):
    """A bool mask with key 0 visible to every query (SDPA gives NaN for a
    query that sees nothing)."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=generator) < 0.6
    mask[..., 0] = True
    return mask


@pytest.mark.parametrize("mask_shape", [
    (2, 1, 6, 45), (1, 1, 6, 45), (2, HEADS, 6, 45), (1, HEADS, 6, 45)])
def test_bool_masks_of_every_broadcast(fake, mask_shape):
    layer = Layer()
    q, k, v = qkv(2, 6, 45)
    mask = random_mask(mask_shape, 1)
    out, _ = hf.attention_forward(layer, q, k, v, mask)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, mask))
    # Random masks are not causal: the mask alone decides.
    assert fake[-1]["causal"] is False and fake[-1]["window"] is None


def test_mask_rows_are_query_rows_over_a_longer_cache(fake):
    """A static cache's mask: 3 queries at positions 4..6 of a 16-slot
    cache, slots past 6 unfilled. Its rows are q's rows, not positions
    counted from the cache's end."""
    layer = Layer()
    q, k, v = qkv(2, 3, 16)
    positions = torch.arange(4, 7)[:, None]
    mask = (torch.arange(16)[None, :] <= positions)[None, None].expand(
        2, 1, 3, 16).clone()
    mask[1, :, :, :2] = False  # the second request is left-padded
    out, _ = hf.attention_forward(layer, q, k, v, mask)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, mask))


def test_an_expanded_mask_is_converted_once(fake):
    """transformers expands one mask over the batch (stride 0): one
    request's bits serve all."""
    layer = Layer()
    q, k, v = qkv(3, 6, 40)
    mask = random_mask((1, 1, 6, 40), 8).expand(3, HEADS, 6, 40)
    out, _ = hf.attention_forward(layer, q, k, v, mask)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, mask))
    bits = [t for _, t, _ in lower(None, fake[-1]["mask_mod"])[2]]
    assert bits[0].shape == (6, 2)


def test_a_longer_mask_is_cut_to_the_keys(fake):
    """Older transformers' SDPA cut a mask wider than the keys (4.5x's
    models made such masks); attnc.hf reads its first kv_len columns."""
    layer = Layer()
    q, k, v = qkv(2, 5, 20)
    mask = random_mask((2, 1, 5, 27), 2)
    out, _ = hf.attention_forward(layer, q, k, v, mask)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, mask[..., :20]))


def test_float_masks_are_added(fake):
    """An additive float mask with biases besides 0 and -inf: a score_mod
    adds it, a mask_mod hides -inf and the dtype's lowest value."""
    layer = Layer()
    q, k, v = qkv(2, 6, 30)
    generator = torch.Generator().manual_seed(3)
    bias = torch.randn(2, 1, 6, 30, generator=generator)
    bias[random_mask((2, 1, 6, 30), 4).logical_not()] = float("-inf")
    bias[0, 0, 2, 5:9] = torch.finfo(torch.float32).min
    out, _ = hf.attention_forward(layer, q, k, v, bias)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, bias))
    assert fake[-1]["score_mod"] is not None


@pytest.mark.parametrize("hidden", [float("-inf"),
                                    torch.finfo(torch.float32).min])
def test_float_masks_of_zeros_need_no_score_mod(fake, hidden):
    """transformers 4.5x's masks: 0 where visible, -inf or the lowest
    value where not; read as a bool mask."""
    layer = Layer()
    q, k, v = qkv(2, 6, 30)
    visible = random_mask((2, 1, 6, 30), 10)
    mask = torch.zeros(2, 1, 6, 30).masked_fill(~visible, hidden)
    out, _ = hf.attention_forward(layer, q, k, v, mask)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, visible))
    assert fake[-1]["score_mod"] is None


def test_causal_and_window_are_passed_where_the_mask_implies_them(fake):
    """A causal (sliding) prefill mask lets the kernel skip tiles: causal
    and the window are passed, and change nothing."""
    layer = Layer()
    q, k, v = qkv(2, 12, 12)
    rows, keys = torch.arange(12)[:, None], torch.arange(12)[None, :]
    causal = (keys <= rows)[None, None].expand(2, 1, 12, 12).clone()
    causal[0, :, :, :3] = False  # left padding
    causal[0, :, :3, :] = False
    causal[0, :, :3, 0] = True  # pad rows see something, as SDPA needs
    causal[0, :, 3:, 0] = False
    out, _ = hf.attention_forward(layer, q, k, v, causal)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, causal))
    assert fake[-1]["causal"] is True and fake[-1]["window"] is None

    sliding = causal & (keys > rows - 4)[None, None]
    sliding[0, :, :3, 0] = True
    out, _ = hf.attention_forward(layer, q, k, v, sliding, sliding_window=4)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, sliding))
    assert fake[-1]["causal"] is True and fake[-1]["window"] == 3


@pytest.mark.parametrize("q_len, kv_len", [(12, 12), (1, 12)])
def test_sliding_window_without_mask_is_transformers_window(fake, q_len,
                                                            kv_len):
    """Without a mask the window is attnc's: it must hide what
    transformers' own sliding-window mask hides."""
    if masking_utils is None:
        pytest.skip("transformers before 4.53 has no masking_utils")
    layer = Layer()
    q, k, v = qkv(2, q_len, kv_len)
    positions = torch.arange(kv_len - q_len, kv_len)[None, None, :, None]
    keys = torch.arange(kv_len)[None, None, None, :]
    mask = masking_utils.sliding_window_causal_mask_function(4)(
        torch.zeros(1, 1, 1, 1, dtype=torch.long), 0, positions, keys)
    out, _ = hf.attention_forward(layer, q, k, v, None, sliding_window=4)
    torch.testing.assert_close(out, sdpa(layer, q, k, v, mask))
    assert fake[-1]["window"] == 3


def test_softcap_scale_and_window_without_mask_reach_attnc(fake):
    layer = Layer()
    q, k, v = qkv(1, 9, 9)
    hf.attention_forward(layer, q, k, v, None, scaling=0.125,
                         sliding_window=5, softcap=20.0)
    call = fake[-1]
    assert (call["scale"], call["softcap"], call["window"]) == (0.125, 20.0,
                                                                4)
    hf.attention_forward(layer, q, k, v, None, softcap=0.0)
    assert fake[-1]["softcap"] is None


def test_one_conversion_per_mask(fake, monkeypatch):
    """Layers share the mask of a forward pass: it is converted once, and
    its mods trace once for every pass."""
    converted = []
    convert = hf._convert
    monkeypatch.setattr(hf, "_convert", lambda *args: converted.append(1)
                        or convert(*args))
    layer = Layer()
    q, k, v = qkv(2, 6, 40)
    mask = random_mask((2, 1, 6, 40), 5)
    for _ in range(4):
        hf.attention_forward(layer, q, k, v, mask)
    assert len(converted) == 1
    traces = len(regions._TRACES)
    hf.attention_forward(layer, q, k, v, random_mask((2, 1, 6, 40), 6))
    assert len(converted) == 2 and len(regions._TRACES) == traces
    assert lower(None, fake[-1]["mask_mod"])[1] == \
        lower(None, fake[0]["mask_mod"])[1]
    # An in-place change is a new mask.
    mask[:, :, :, 1:] = False
    hf.attention_forward(layer, q, k, v, mask)
    assert len(converted) == 3


def test_converted_masks_go_with_their_masks(fake):
    """The cache keeps no mask alive: a pass's masks (a prefill's are
    batch x q_len x kv_len) go when transformers drops them."""
    import gc
    q, k, v = qkv(2, 6, 40)
    mask = random_mask((2, 1, 6, 40), 9)
    hf.attention_forward(Layer(), q, k, v, mask)
    assert len(hf._MASKS) == 1
    del mask
    gc.collect()
    assert not hf._MASKS


@pytest.mark.parametrize("keys", [1, 31, 32, 33, 100])
def test_mask_bits(keys):
    generator = torch.Generator().manual_seed(keys)
    visible = torch.rand(5, keys, generator=generator) < 0.5
    bits = hf._pack_bits(visible)
    assert bits.dtype == torch.int32 and bits.shape == (5, (keys + 31) // 32)
    kv = torch.arange(keys)
    read = ((bits[:, kv >> 5] >> (kv & 31)) & 1) != 0
    assert torch.equal(read, visible)


# --- refusals ---

def test_dropout_in_training_is_refused(fake):
    layer = Layer().train()
    q, k, v = qkv(1, 4, 4)
    with pytest.raises(ValueError, match="no attention dropout"):
        hf.attention_forward(layer, q, k, v, None, dropout=0.1)
    # In eval mode transformers passes 0; a stray value does nothing.
    hf.attention_forward(Layer().eval(), q, k, v, None, dropout=0.1)


def test_a_training_forward_is_refused(fake):
    q, k, v = (x.requires_grad_() for x in qkv(1, 4, 4))
    with pytest.raises(ValueError, match="no backward pass"):
        hf.attention_forward(Layer().train(), q, k, v, None)


@pytest.mark.parametrize("kwargs, message", [
    (dict(output_attentions=True), "attention weights"),
    (dict(position_bias=torch.zeros(1)), "position bias"),
    (dict(s_aux=torch.zeros(HEADS)), "sinks"),
])
def test_what_attnc_does_not_compute_is_refused(fake, kwargs, message):
    q, k, v = qkv(1, 4, 4)
    with pytest.raises(ValueError, match=message):
        hf.attention_forward(Layer(), q, k, v, None, **kwargs)


def test_float32_models_are_told_to_use_bf16(monkeypatch):
    monkeypatch.setattr(hf, "attention", reference_attention)
    q, k, v = qkv(1, 4, 4)
    with pytest.raises(TypeError, match="dtype=torch.bfloat16"):
        hf.attention_forward(Layer(), q, k, v, None)


@pytest.mark.parametrize("mask, error, message", [
    (torch.ones(2, 1, 4, 4, dtype=torch.int64), TypeError, "bool"),
    (torch.ones(3, 1, 4, 4, dtype=torch.bool), ValueError, "does not fit"),
    (torch.ones(2, 1, 3, 4, dtype=torch.bool), ValueError, "does not fit"),
    (torch.ones(2, 4, 4, dtype=torch.bool), ValueError, "4-D"),
])
def test_bad_masks_are_refused(fake, mask, error, message):
    q, k, v = qkv(2, 4, 4)
    with pytest.raises(error, match=message):
        hf.attention_forward(Layer(), q, k, v, mask)


def test_register_is_idempotent():
    from transformers import AttentionInterface
    hf.register()
    hf.register()
    assert AttentionInterface()["attnc"] is hf.attention_forward
    if masking_utils is not None:
        masks = masking_utils.AttentionMaskInterface._global_mapping
        assert masks["attnc"] is masks["sdpa"]


# --- whole models against sdpa / eager ---

VOCAB = 256


def llama(implementation, **where):
    """A small Llama: GQA (8 heads over 2), 2 layers; `where` is
    model()'s dtype and device."""
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=128,
                         intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=HEADS,
                         num_key_value_heads=KV_HEADS,
                         max_position_embeddings=256, pad_token_id=0)
    return model(config, implementation, **where)


def gemma2(implementation, sliding_window=5, **where):
    """Gemma 2's shape: sliding and full layers alternating, a window
    shorter than the prompts, a soft-cap that bites (sharpened scores)."""
    config = Gemma2Config(vocab_size=VOCAB, hidden_size=128,
                          intermediate_size=256, num_hidden_layers=4,
                          num_attention_heads=HEADS,
                          num_key_value_heads=KV_HEADS, head_dim=DIM,
                          sliding_window=sliding_window,
                          attn_logit_softcapping=3.0,
                          query_pre_attn_scalar=DIM,
                          max_position_embeddings=256, pad_token_id=0)
    return model(config, implementation, **where)


def model(config, implementation, dtype=torch.float32, device="cpu"):
    """A random model, the same weights for every implementation, with
    queries and keys scaled up so that attention is far from uniform."""
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(config,
                                         attn_implementation=implementation)
    with torch.no_grad():
        for layer in m.model.layers:
            layer.self_attn.q_proj.weight.mul_(6.0)
            layer.self_attn.k_proj.weight.mul_(6.0)
    # Cast after init: from_config's dtype keyword changed name in 5.x.
    return m.to(device=device, dtype=dtype).eval()


# Gemma 2's soft-cap is applied by eager attention only (SDPA drops it).
REFERENCES = {"llama": (llama, "sdpa"), "gemma2": (gemma2, "eager")}


def prompts(batch=2, length=14, padding=0):
    """Random token ids and their 2-D mask, the first request
    left-padded by `padding` tokens (on the CPU)."""
    generator = torch.Generator().manual_seed(7)
    ids = torch.randint(3, VOCAB, (batch, length), generator=generator)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[0, :padding] = 0
    ids[0, :padding] = 0
    return ids, mask


@pytest.mark.parametrize("name", REFERENCES)
@pytest.mark.parametrize("padding", [0, 4])
def test_logits_match_the_reference(fake, name, padding):
    make, reference = REFERENCES[name]
    ids, mask = prompts(padding=padding)
    with torch.no_grad():
        ours = make("attnc")(ids, attention_mask=mask).logits
        theirs = make(reference)(ids, attention_mask=mask).logits
    real = mask.bool()  # padded queries' outputs are no one's
    torch.testing.assert_close(ours[real], theirs[real], atol=2e-5,
                               rtol=2e-5)
    assert fake, "attnc.attention was not called"


@pytest.mark.parametrize("name", ["llama", "gemma2"])
def test_a_forward_pass_converts_each_mask_once(fake, monkeypatch, name):
    """Layers share their kind's mask (full, sliding): one conversion per
    mask object per pass, whatever the number of layers."""
    converted, seen = [], set()
    convert, forward = hf._convert, hf.attention_forward

    def counted(mask, *args):
        converted.append(1)
        return convert(mask, *args)

    def watched(module, q, k, v, mask, **kwargs):
        seen.add(id(mask))
        return forward(module, q, k, v, mask, **kwargs)

    monkeypatch.setattr(hf, "_convert", counted)
    transformers.AttentionInterface.register("attnc", watched)
    try:
        ids, mask = prompts(padding=3)
        with torch.no_grad():
            REFERENCES[name][0]("attnc")(ids, attention_mask=mask)
    finally:
        hf.register()
    assert len(converted) == len(seen)
    if masking_utils is not None:  # one mask per kind of layer
        assert len(converted) == (1 if name == "llama" else 2)


def test_torch_compile_breaks_around_the_mask(fake, monkeypatch):
    """Under torch.compile the mask's conversion runs eagerly (its cache
    keys on objects), once per pass, and the logits stay SDPA's."""
    converted = []
    convert = hf._convert
    monkeypatch.setattr(hf, "_convert", lambda *args: converted.append(1)
                        or convert(*args))
    ids, mask = prompts(padding=3)
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(llama("attnc"), backend="eager")
        ours = [compiled(ids, attention_mask=mask).logits for _ in range(2)]
        theirs = llama("sdpa")(ids, attention_mask=mask).logits
    real = mask.bool()
    for logits in ours:
        torch.testing.assert_close(logits[real], theirs[real], atol=2e-5,
                                   rtol=2e-5)
    assert len(converted) == 2


def test_gemma2_softcap_matters():
    """The Gemma 2 comparison has teeth: without the soft-cap (SDPA) the
    logits differ."""
    ids, mask = prompts()
    with torch.no_grad():
        eager = gemma2("eager")(ids, attention_mask=mask).logits
        sdpa_ = gemma2("sdpa")(ids, attention_mask=mask).logits
    assert (eager - sdpa_).abs().max() > 1e-2


def test_gemma2_sliding_layers_get_their_window(fake):
    ids, mask = prompts(padding=0)
    with torch.no_grad():
        gemma2("attnc")(ids, attention_mask=mask)
    windows = [call["window"] for call in fake]
    # The sliding layers' masks imply the window (4 keys left of the
    # query: the query and 4 more make transformers' 5); the full layers
    # have no mask from 4.53 on, SDPA's is_causal case.
    assert windows == [4, None, 4, None]
    if masking_utils is not None:
        assert [call.get("mask_mod") is None for call in fake] == [
            False, True, False, True]
    assert all(call["softcap"] == 3.0 for call in fake)


@pytest.mark.parametrize("name", REFERENCES)
@pytest.mark.parametrize("padding", [0, 3])
def test_static_cache_generation_matches(fake, name, padding):
    make, reference = REFERENCES[name]
    if name == "gemma2" and masking_utils is None:
        pytest.skip("transformers before 4.53 cuts Gemma 2's sliding masks "
                    "narrower than a static cache's keys: its own SDPA "
                    "fails there too")
    ids, mask = prompts(length=9, padding=padding)
    options = dict(attention_mask=mask, max_new_tokens=5, min_new_tokens=5,
                   do_sample=False, cache_implementation="static",
                   pad_token_id=0)
    ours = make("attnc").generate(ids, **options)
    theirs = make(reference).generate(ids, **options)
    assert torch.equal(ours, theirs)
    assert any(call["q_shape"][2] == 1 for call in fake)  # decode steps
    assert any(call.get("mask_mod") for call in fake)
