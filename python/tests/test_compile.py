"""Compile-only tests of the Python package: no GPU, no torch."""

import pytest

import attnc
from attnc.kernel import SPEC_FIELDS, Kernel, Variant
from fakes import FakeTensor


def test_spec_becomes_the_expected_mlir():
    variant = Variant.from_spec(query_heads=32, kv_heads=8, head_dim=128,
                                causal=1, window=256,
                                sinks=4, softcap=30.0, return_lse=1)
    text = variant.mlir
    assert "!attn.q<?x32x128xbf16>" in text
    assert "!attn.kv<?x8x128xbf16>" in text
    assert "window = #attn.window<256, 0>" in text
    assert "sinks = 4" in text
    assert "softcap = 3.000000000e+01 : f32" in text
    assert "!attn.lse<?x32>" in text


SCORE_MOD = ("^bb0(%s: f32, %b: index, %h: index, %qi: index, %ki: index, "
             "%ql: index, %kl: index{}):\n  attn.yield %s : f32")
# (context, change) of each keyword: the change must reach the variant.
FIELD_CHANGES = {
    "name": ({}, dict(name="other")),
    "query_heads": ({}, dict(query_heads=32)),
    "kv_heads": ({}, dict(kv_heads=8)),
    "head_dim": ({}, dict(head_dim=128)),
    "dtype": ({}, dict(dtype="float16")),
    "query_layout": ({}, dict(query_layout="ragged")),
    "queries_per_request": ({}, dict(queries_per_request=1)),
    "kv_layout": ({}, dict(kv_layout="ragged")),
    "page_size": (dict(kv_layout="paged"), dict(page_size=32)),
    "page_order": (dict(kv_layout="paged"), dict(page_order="HND")),
    "causal": ({}, dict(causal=True)),
    "window": ({}, dict(window=(0, 128))),
    "sinks": ({}, dict(sinks=4)),
    "scale": ({}, dict(scale=0.125)),
    "softcap": ({}, dict(softcap=30.0)),
    "alibi": ({}, dict(alibi=True)),
    "return_lse": ({}, dict(return_lse=True)),
    "score_mod": ({}, dict(score_mod=SCORE_MOD.format(""))),
    "mask_mod": ({}, dict(mask_mod="^bb0(%b: index, %h: index, %qi: index, "
                          "%ki: index, %ql: index, %kl: index):\n  %t = "
                          "arith.constant true\n  attn.yield %t : i1")),
    "capture_types": ({}, dict(
        score_mod=SCORE_MOD.format(", %t: memref<4xf32>"),
        capture_types=["memref<4xf32>"])),
    "kv_dtype": ({}, dict(kv_dtype="float8_e4m3fn")),
    "kv_scales": (dict(kv_dtype="float8_e4m3fn"), dict(kv_scales="tensor")),
    "rope_dim": (dict(kv_heads=1, head_dim=576), dict(rope_dim=64)),
    "value_head_dim": ({}, dict(value_head_dim=32)),
    "segments": ({}, dict(segments=True)),
    "shared_keys": ({}, dict(shared_keys=True)),
}


def test_every_spec_keyword_has_a_case():
    assert set(FIELD_CHANGES) == set(SPEC_FIELDS)


@pytest.mark.parametrize("name", sorted(FIELD_CHANGES))
def test_every_spec_keyword_reaches_the_variant(name):
    context, change = FIELD_CHANGES[name]
    base = dict(dict(query_heads=16, kv_heads=4, head_dim=64), **context)
    assert Variant.from_spec(**base).mlir != \
        Variant.from_spec(**dict(base, **change)).mlir


def test_paged_spec_names_page_size_and_order():
    text = Variant.from_spec(query_heads=28, kv_heads=4, head_dim=128,
                             kv_layout="paged", page_size=64,
                             page_order="HND",
                             queries_per_request=1).mlir
    assert "!attn.kv<?x4x128xbf16, paged<64, hnd>>" in text
    assert "!attn.q<1x28x128xbf16>" in text


def test_bad_spec_is_an_error_value():
    with pytest.raises(attnc.AttncError) as error:
        Variant.from_spec(query_heads=30, kv_heads=8, head_dim=128)
    assert error.value.kind == "invalid argument"
    # The attn dialect's verifier says what is wrong, in its words.
    assert ("query heads (30) must be a multiple of key/value heads (8)"
            in error.value.message)


def test_bad_mlir_reports_its_location():
    with pytest.raises(attnc.AttncError) as error:
        Variant.from_mlir("func.func @f(%q: !attn.q<?x4xbf16>) {\n}")
    assert error.value.kind == "parse error"
    assert "<variant>:1:" in error.value.message


def test_compiles_for_an_explicit_arch_without_a_gpu():
    variant = Variant.from_spec(query_heads=16, kv_heads=4, head_dim=64,
                                causal=1)
    kernel = Kernel(variant, arch="sm_90a", cache_dir="-")
    assert 'extern "C" __global__' in kernel.cuda_source
    assert kernel.cubin_size > 0
    assert [i.role for i in kernel.inputs] == ["query", "kv", "kv"]
    assert [o.role for o in kernel.outputs] == ["output"]
    assert kernel.inputs[1].heads == 4 and kernel.inputs[1].dim == 64


def test_a_cold_compile_logs_its_progress(caplog):
    # A kernel no other test compiles: the process's cache has not seen it.
    variant = Variant.from_spec(query_heads=12, kv_heads=3, head_dim=64,
                                window=45)
    with caplog.at_level("INFO", logger="attnc"):
        Kernel(variant, arch="sm_90a", cache_dir="-")
        cold = [r.getMessage() for r in caplog.records]
        caplog.clear()
        Kernel(variant, arch="sm_90a", cache_dir="-")  # the process's cache
    assert len(cold) == 2, cold
    assert cold[0].startswith("compiling ")
    assert cold[0].endswith(" for sm_90a with NVRTC (no disk cache)")
    assert cold[1].startswith("compiled ") and cold[1].endswith(" ms")
    assert caplog.records == []


def test_values_may_have_their_own_head_dim():
    # DeepSeek's MLA prefill, not absorbed: qk 192 (128 + 64 rope), v 128.
    variant = Variant.from_spec(query_heads=16, kv_heads=16, head_dim=192,
                                value_head_dim=128, causal=1)
    assert "!attn.kv<?x16x128xbf16>" in variant.mlir
    kernel = Kernel(variant, arch="sm_90a", cache_dir="-")
    assert [i.dim for i in kernel.inputs] == [192, 192, 128]
    assert kernel.outputs[0].dim == 128
    with pytest.raises(attnc.AttncError, match="value head dim must be 0"):
        Variant.from_spec(query_heads=16, kv_heads=1, head_dim=576,
                          rope_dim=64, value_head_dim=512)


def test_unsupported_head_dim_is_named():
    # Not a multiple of the kernels' 16-column steps.
    variant = Variant.from_spec(query_heads=8, kv_heads=8, head_dim=40)
    with pytest.raises(attnc.AttncError) as error:
        Kernel(variant, arch="sm_90a", cache_dir="-")
    assert "head dim 40/40" in error.value.message


@pytest.mark.parametrize("change, error, words", [
    (dict(q=FakeTensor((2, 16, 8, 64), dtype="torch.float32")), TypeError,
     "q must be bfloat16 or float16"),
    (dict(q=FakeTensor((2, 16, 8, 64), device="cpu")), ValueError,
     "must be on a CUDA device"),
    (dict(q=FakeTensor((2, 16, 8, 64), index=1)), ValueError,
     "cuda:0"),
    (dict(q=FakeTensor((16, 8, 64))), ValueError, "rank 4"),
    (dict(k=FakeTensor((2, 16, 3, 64)), v=FakeTensor((2, 16, 3, 64))),
     ValueError, "must be a multiple of key/value heads \\(3\\)"),
    (dict(v=FakeTensor((2, 8, 2, 64))), ValueError, "must have one shape"),
    (dict(v=FakeTensor((2, 16, 2, 32)), out=FakeTensor((2, 16, 8, 64))),
     ValueError, "out must have q's shape with v's head dim"),
    (dict(q=object()), TypeError, "q must be a tensor"),
])
def test_attention_rejects_bad_tensors(change, error, words):
    args = dict(q=FakeTensor((2, 16, 8, 64)), k=FakeTensor((2, 16, 2, 64)),
                v=FakeTensor((2, 16, 2, 64)), layout="bshd")
    args.update(change)
    with pytest.raises(error, match=words):
        attnc.attention(**args)


def test_ragged_attention_needs_both_index_pointers():
    q = FakeTensor((16, 8, 64))
    k = FakeTensor((16, 2, 64))
    with pytest.raises(ValueError, match="both q_indptr and kv_indptr"):
        attnc.attention(q, k, k, q_indptr=FakeTensor((3,), "torch.int32"))


def test_merge_states_checks_its_pairs():
    out = FakeTensor((4, 8, 64))
    lse = FakeTensor((4, 8), "torch.float32")
    with pytest.raises(ValueError, match="two or more"):
        attnc.merge_states([out], [lse])
    with pytest.raises(ValueError, match="lses\\[1\\] must have shape"):
        attnc.merge_states([out, out], [lse, FakeTensor((4, 7),
                                                        "torch.float32")])


@pytest.mark.parametrize("kwargs, words", [
    (dict(kv_layout="NDH"), "NHD or HND"),
    (dict(page_size=0), "page size must be between 1 and 256, got 0"),
    (dict(dtype="float32"), "bfloat16 or float16"),
])
def test_paged_wrapper_rejects_bad_configurations(kwargs, words):
    args = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=words):
        attnc.PagedAttention(**args)


def test_run_before_plan_is_an_error():
    wrapper = attnc.PagedAttention(32, 8, 128, page_size=16)
    with pytest.raises(RuntimeError, match="plan"):
        wrapper.run(FakeTensor((4, 32, 128)), FakeTensor((9, 16, 8, 128)),
                    FakeTensor((9, 16, 8, 128)))
