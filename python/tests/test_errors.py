"""Bad arguments to every public function raise an exception that names the
argument, never a crash, a truncation or a silently dropped value. No GPU,
no torch: calls that once crashed the interpreter run in a subprocess, so
that a regression fails its test instead of killing pytest."""

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import attnc
from attnc import _capi
from attnc.errors import InvalidArgumentError
from attnc.kernel import PYTHON_NAMES, SPEC_FIELDS, Kernel, Plan, Variant
from fakes import FakeTensor

PACKAGE_DIR = Path(__file__).resolve().parents[1]
GQA = dict(query_heads=8, kv_heads=2, head_dim=64)


def outcome(body):
    """What `body` does in a fresh interpreter: "ok", or the exception's
    type and message. A crash fails the test that asked."""
    code = textwrap.dedent("""
        import ctypes
        import attnc
        from attnc import _capi
        from attnc.kernel import Kernel, Plan, Variant
        GQA = dict(query_heads=8, kv_heads=2, head_dim=64)
        try:
        {body}
            print("ok")
        except Exception as e:
            print(type(e).__name__ + ": " + str(e))
        """).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, (
        f"the interpreter died ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout.strip()


# Each of these crashed the interpreter or the library before.
@pytest.mark.parametrize("body, expected", [
    ("Variant.from_spec(**GQA, score_mod=5)",
     "TypeError: score_mod must be a str, got int"),
    ("Variant.from_spec(**GQA, name=7)",
     "TypeError: name must be a str, got int"),
    ("Variant.from_spec(**GQA, mask_mod=2**70)",
     "TypeError: mask_mod must be a str, got int"),
    ("Variant.from_spec(**GQA, capture_types=[5], score_mod='x')",
     "TypeError: capture_types[0] must be a str, got int"),
    # The C API's handles are checked: stale or made-up ones are errors.
    ("""
     v = Variant.from_spec(**GQA)
     assert _capi.lib.attnc_variant_destroy(v._handle) == _capi.OK
     status = _capi.lib.attnc_variant_destroy(v._handle)
     v._handle = None
     _capi.check(status)
     """, "InvalidArgumentError: invalid argument: variant is not a live "
          "attnc_variant"),
    ("""
     v = Variant.from_spec(**GQA)
     _capi.lib.attnc_variant_destroy(v._handle)
     v.mlir
     """, "not a live attnc_variant"),
    ("Variant(ctypes.c_void_p(0xdead0)).mlir",
     "InvalidArgumentError: invalid argument: variant is not a live"),
    ("""
     k = Kernel(Variant.from_spec(**GQA), arch="sm_90a", cache_dir="-")
     Plan(k, ctypes.c_void_p(0xdead0)).splits()
     """, "plan is not a live attnc_plan"),
    ("""
     k = Kernel(Variant.from_spec(**GQA), arch="sm_90a", cache_dir="-")
     k.run(Plan(k, ctypes.c_void_p(0xdead0)), [1, 2, 3], [4])
     """, "plan is not a live attnc_plan"),
    ("""
     k = Kernel(Variant.from_spec(**GQA), arch="sm_90a", cache_dir="-")
     Kernel.__del__(k)
     k.cuda_source
     """, "ValueError: this kernel has been released"),
])
def test_former_crashes_are_exceptions(body, expected):
    assert expected in outcome(body)


@pytest.mark.parametrize("fields, error, words", [
    # Misspelt fields were dropped silently.
    (dict(casual=1), TypeError, "unknown variant spec field\\(s\\): casual"),
    (dict(causall=1, windw=3), TypeError, "causall, windw"),
    (dict(num_captures=1), TypeError, "num_captures"),
    # ctypes truncated these: 2**32 -> 0 (not causal), 2**64 + 32 -> 32.
    (dict(causal=2**32), ValueError,
     "causal must be a bool \\(or 0 or 1\\), got 4294967296"),
    (dict(causal=2), ValueError, "causal must be a bool"),
    (dict(causal=0.5), TypeError, "causal must be a bool, got float"),
    (dict(query_heads=2**64 + 32), ValueError, "query_heads must be in"),
    (dict(sinks=-2**63 - 1), ValueError, "sinks must be in"),
    (dict(dtype=2**40), ValueError, "dtype must be in"),
    (dict(query_heads=8.0), TypeError, "query_heads must be an int, got "
     "float"),
    (dict(query_heads=None), TypeError, "query_heads must be an int, got "
     "NoneType"),
    (dict(query_heads="8"), TypeError, "query_heads must be an int, got str"),
    (dict(query_heads=True), TypeError, "query_heads must be an int, got "
     "bool"),
    (dict(dtype="bfloat17"), ValueError,
     "dtype must be one of bfloat16, float16, float32, int32, int64, "
     "float8_e4m3fn, float8_e5m2, got 'bfloat17'"),
    # One vocabulary: the C API's spellings are refused, naming Python's.
    (dict(dtype="bf16"), ValueError,
     "dtype='bf16' is the C API's spelling: Python's is 'bfloat16'"),
    (dict(kv_dtype="f8E4M3FN"), ValueError,
     "kv_dtype='f8E4M3FN' is the C API's spelling: Python's is "
     "'float8_e4m3fn'"),
    (dict(page_order="nhd"), ValueError,
     "page_order='nhd' is the C API's spelling: Python's is 'NHD'"),
    (dict(window_left=128, window_right=0), TypeError,
     "window_left and window_right are the C API's fields: Python's is "
     "window="),
    (dict(kv_scales="row"), ValueError, "kv_scales must be one of none, "
     "tensor, head"),
    (dict(page_order="ndh"), ValueError, "page_order must be one of NHD, HND"),
    (dict(window=(-1, 5)), ValueError, "window extents must be non-negative"),
    (dict(window=2.5), TypeError, "window must be None, an int or a"),
    (dict(scale=1e300), ValueError, "scale 1e\\+300 does not fit a float32"),
    (dict(scale="1"), TypeError, "scale must be a number, got str"),
    (dict(softcap=True), TypeError, "softcap must be a number, got bool"),
    (dict(name=None), TypeError, "name must be a str, got NoneType"),
    (dict(name="a\0b"), ValueError, "name must not contain a NUL"),
    (dict(score_mod="^bb0\0"), ValueError, "score_mod must not contain a NUL"),
    (dict(capture_types="memref<4xf32>"), TypeError,
     "capture_types must be a list or tuple, got str"),
    # What the spec encodes is the library's to judge, in its words.
    (dict(kv_heads=0), InvalidArgumentError,
     "key/value head count must be in \\[1, 1024\\], got 0"),
    (dict(capture_types=["memref<4xf32>) -> () {"], score_mod="x"),
     InvalidArgumentError, "capture type 0 is not a type"),
])
def test_from_spec_checks_each_field(fields, error, words):
    with pytest.raises(error, match=words):
        Variant.from_spec(**dict(GQA, **fields))


# How each keyword converts comes from the library's table of the spec's
# fields (their encodings), so every field of a kind behaves alike.
SPEC = {field.name: field for field in _capi.VariantSpec.fields}


@pytest.mark.parametrize("name", [name for name, field in SPEC.items()
                                  if field.encoding == _capi.ENCODING_FLAG])
def test_every_flag_takes_a_bool_and_refuses_two(name):
    Variant.from_spec(**GQA, **{name: True})
    with pytest.raises(ValueError, match=f"{name} must be a bool"):
        Variant.from_spec(**GQA, **{name: 2})


@pytest.mark.parametrize("name", [name for name, field in SPEC.items()
                                  if field.encoding == _capi.ENCODING_ENUM])
def test_every_enum_takes_its_enums_names(name):
    # Python's names where it has its own (torch's dtypes, NHD and HND),
    # else the library's.
    enum_type = SPEC[name].enum_type
    names = PYTHON_NAMES.get(enum_type, _capi.enum_names(enum_type))
    with pytest.raises(ValueError, match=f"{name} must be one of "
                       f"{', '.join(names)}, got 'bogus'"):
        Variant.from_spec(**GQA, **{name: "bogus"})


@pytest.mark.parametrize("name", [name for name, field in SPEC.items()
                                  if field.none is not _capi.NO_NONE and
                                  name not in ("window_left",
                                               "window_right")] +
                         ["window"])
def test_none_is_no_value_where_a_field_has_one(name):
    assert Variant.from_spec(**GQA, **{name: None}).mlir == \
        Variant.from_spec(**GQA).mlir


def test_every_field_but_a_count_is_a_keyword():
    # The window's two fields are one keyword, as in every front end.
    assert set(SPEC_FIELDS) == (set(SPEC) - {"num_captures", "window_left",
                                             "window_right"}) | {"window"}
    # The cases above are drawn from these encodings.
    assert SPEC["causal"].encoding == _capi.ENCODING_FLAG
    assert SPEC["page_order"].encoding == _capi.ENCODING_ENUM


def test_library_refusals_are_value_errors_and_attnc_errors():
    with pytest.raises(ValueError) as caught:
        Variant.from_spec(**dict(GQA, kv_heads=0))
    assert isinstance(caught.value, attnc.AttncError)
    assert caught.value.kind == "invalid argument"


def test_enum_fields_take_pythons_names():
    text = Variant.from_spec(**GQA, dtype="float16", query_layout="ragged",
                             kv_layout="paged", page_size=32,
                             page_order="HND").mlir
    assert "!attn.q<?x8x64xf16, ragged>" in text
    assert "!attn.kv<?x2x64xf16, paged<32, hnd>>" in text
    for name, value in _capi.DTYPES.items():
        assert _capi.lib.attnc_dtype_name(value).decode() == name
    assert _capi.LIMITS["max_captures"] == \
        _capi.lib.attnc_get_limits().contents.max_captures


@pytest.mark.parametrize("text, error, words", [
    (None, TypeError, "text must be a str, got NoneType"),
    (b"func.func @f()", TypeError, "text must be a str, got bytes"),
    ("func.func @f() {\0}", ValueError, "text must not contain a NUL"),
    ("func.func @f() {\n  return\n}\n", attnc.AttncError,
     "<variant>:1:1: error: nothing to compile"),
    ("func.func @f() attributes {x = array<index: 1>} { return }",
     attnc.AttncError, "dense arrays of 'index' are not supported"),
])
def test_from_mlir_checks_its_text(text, error, words):
    with pytest.raises(error, match=words):
        Variant.from_mlir(text)


def dense(**change):
    args = dict(q=FakeTensor((2, 16, 8, 64)), k=FakeTensor((2, 16, 2, 64)),
                v=FakeTensor((2, 16, 2, 64)), layout="bshd")
    args.update(change)
    return args


def ragged(q_values, kv_values, **change):
    args = dict(q=FakeTensor((16, 8, 64)), k=FakeTensor((20, 2, 64)),
                v=FakeTensor((20, 2, 64)),
                q_indptr=FakeTensor((3,), "torch.int32", values=q_values),
                kv_indptr=FakeTensor((3,), "torch.int32", values=kv_values))
    args.update(change)
    return args


@pytest.mark.parametrize("args, error, words", [
    # kv_heads 0 divided by zero in Python before the verifier saw it.
    (dense(k=FakeTensor((2, 16, 0, 64)), v=FakeTensor((2, 16, 0, 64))),
     InvalidArgumentError, "key/value head count must be in \\[1, 1024\\], got 0"),
    (dense(q=FakeTensor((2, 16, 0, 64))), InvalidArgumentError,
     "query head count must be in \\[1, 1024\\], got 0"),
    (dense(window=(-1, 0)), ValueError,
     "window extents must be non-negative \\(None: no window\\)"),
    (dense(window=(1, 2, 3)), ValueError, "got 3 values"),
    (dense(window="left"), TypeError, "window must be None, an int or a"),
    (dense(window=1.5), TypeError, "window must be None"),
    (dense(window=(1.0, 0)), TypeError, "window\\[0\\] must be an int"),
    (dense(window=2**63), ValueError, "window must be in"),
    (dense(causal=2), ValueError, "causal must be a bool"),
    (dense(causal="yes"), TypeError, "causal must be a bool, got str"),
    (dense(return_lse=None), TypeError, "return_lse must be a bool"),
    (dense(alibi=3), ValueError, "alibi must be a bool"),
    (dense(sinks=1.0), TypeError, "sinks must be an int, got float"),
    (dense(sinks=None), TypeError, "sinks must be an int"),
    (dense(scale=0), ValueError, "scale must be positive, got 0"),
    (dense(scale=-0.0), ValueError, "scale must be positive, got 0"),
    (dense(scale="x"), TypeError, "scale must be a number"),
    (dense(softcap=1e39), ValueError, "softcap 1e\\+39 does not fit"),
    (dense(scale=-1.0), InvalidArgumentError,
     "scale must be positive and finite, got -1"),
    (dense(score_mod=5), TypeError, "score_mod must be a str, got int"),
    (dense(mask_mod=b"x"), TypeError, "mask_mod must be a str, got bytes"),
    (dense(captures=FakeTensor((4,), "torch.float32")), TypeError,
     "captures must be a list or tuple"),
    (dense(captures=[FakeTensor((), "torch.float32")], score_mod="x"),
     ValueError, "captures\\[0\\] must have rank 1 or more"),
    (dense(captures=["t"], score_mod="x"), TypeError,
     "captures\\[0\\] must be a tensor"),
    (dense(max_q_len=16), ValueError, "max_q_len and max_kv_len are for "
     "ragged attention"),
    (dense(k=FakeTensor((3, 16, 2, 64)), v=FakeTensor((3, 16, 2, 64))),
     ValueError, "q has batch 2, k has 3"),
    (dense(k=FakeTensor((2, 16, 2, 32)), v=FakeTensor((2, 16, 2, 32))),
     ValueError, "k's head dim 32 differs from q's 64"),
    (dense(k=FakeTensor((2, 16, 2, 64), dtype="torch.float16"),
           v=FakeTensor((2, 16, 2, 64), dtype="torch.float16")),
     TypeError, "k and v must have q's dtype \\(bfloat16\\) or be one fp8 "
     "cache, got float16 and float16"),
    (dense(k=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn")),
     TypeError, "got float8_e4m3fn and bfloat16"),
    # An fp8 cache's scales.
    (dense(k_scale=FakeTensor((1,), "torch.float32"),
           v_scale=FakeTensor((1,), "torch.float32")), ValueError,
     "k_scale and v_scale dequantize fp8 caches; the cache is bfloat16"),
    (dense(k=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e5m2"),
           v=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e5m2"),
           k_scale=FakeTensor((1,), "torch.float32")), ValueError,
     "give k_scale and v_scale together"),
    (dense(k=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           v=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           k_scale=FakeTensor((3,), "torch.float32"),
           v_scale=FakeTensor((1,), "torch.float32")), ValueError,
     "k_scale must hold 1 \\(per tensor\\) or 2 \\(per KV head\\) values, "
     "got 3"),
    (dense(k=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           v=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           k_scale=FakeTensor((1,), "torch.float32"),
           v_scale=FakeTensor((2,), "torch.float64")), TypeError,
     "v_scale must be float32, got float64"),
    (dense(k=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           v=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           k_scale=FakeTensor((1,), "torch.float32", device="cpu"),
           v_scale=FakeTensor((1,), "torch.float32")), ValueError,
     "k_scale must be on a CUDA device"),
    (dense(k=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           v=FakeTensor((2, 16, 2, 64), dtype="torch.float8_e4m3fn"),
           k_scale="1", v_scale=1.0), TypeError,
     "k_scale must be a number, got str"),
    (dense(v=FakeTensor((2, 16, 2, 64), device="cpu")), ValueError,
     "v must be on a CUDA device"),
    (ragged([0, 5, 16], [0, 10, 20], k=FakeTensor((20, 2, 64),
                                                  contiguous=False)),
     ValueError, "k must be contiguous"),
    # Shapes cannot tell [B, S, H, D] from [B, H, S, D]: the call says.
    (dense(layout=None), ValueError, "dense attention needs layout= "
     "\\(shapes cannot tell which dimension holds the heads\\): 'bshd' "
     "\\[batch, seq_len, heads, dim\\], FlashAttention's; 'bhsd' "
     "\\[batch, heads, seq_len, dim\\], SDPA's and FlexAttention's; got "
     "None"),
    (dense(layout="BSHD"), ValueError, "needs layout=.*got 'BSHD'"),
    (ragged([0, 5, 16], [0, 10, 20], layout="bshd"), ValueError,
     "ragged tensors are \\[tokens, heads, dim\\] \\(layout None or "
     "'thd'\\), got layout='bshd'"),
    # In SDPA's layout the heads are the second dimension: 8 heads of 16
    # queries over 2 KV heads, whose batch and head dim are checked there.
    (dense(q=FakeTensor((2, 8, 16, 64)), k=FakeTensor((2, 2, 16, 64)),
           v=FakeTensor((2, 2, 12, 64)), layout="bhsd"), ValueError,
     "must have one shape but for the head dim"),
    (dense(q=FakeTensor((2, 8, 16, 64)), k=FakeTensor((2, 2, 16, 64)),
           v=FakeTensor((2, 2, 16, 64)), layout="bhsd",
           out=FakeTensor((2, 16, 8, 64))), ValueError,
     "out must have q's shape with v's head dim, \\[2, 8, 16, 64\\], got "
     "\\[2, 16, 8, 64\\]"),
    (dense(out=FakeTensor((2, 16, 8, 32))), ValueError,
     "out must have q's shape"),
    # Ragged index pointers are read on the host (no max lengths given)
    # and must keep the kernel inside q and k.
    (ragged([0, 5, 20], [0, 10, 20]), ValueError,
     "q_indptr ends at 20, past q's 16 rows"),
    (ragged([0, 9, 4], [0, 10, 20]), ValueError, "q_indptr must not "
     "decrease"),
    (ragged([-1, 5, 16], [0, 10, 20]), ValueError,
     "q_indptr must start at 0 or more"),
    (ragged([0, 5, 16], [0, 10, 21]), ValueError,
     "kv_indptr ends at 21, past k's 20 rows"),
    (ragged([0, 5, 16], [0, 10, 20], max_q_len=1.5, max_kv_len=10),
     TypeError, "max_q_len must be an int"),
    (ragged([0, 5, 16], [0, 10, 20], max_q_len=-1, max_kv_len=10),
     ValueError, "max_q_len must be in 0.."),
    (ragged([0, 5, 16], [0, 10, 20],
            q_indptr=FakeTensor((3,), "torch.int64")),
     TypeError, "q_indptr must be int32"),
    (ragged([0, 5, 16], [0, 10, 20],
            q_indptr=FakeTensor((3, 1), "torch.int32")),
     ValueError, "q_indptr must have rank 1"),
    (ragged([0, 5, 16], [0, 10, 20], kv_indptr=FakeTensor((2,), "torch.int32",
                                                          values=[0, 20])),
     ValueError, "both have batch \\+ 1 entries"),
])
def test_attention_checks_each_argument(args, error, words):
    with pytest.raises(error, match=words):
        attnc.attention(**args)


def test_attention_takes_no_unknown_keywords():
    with pytest.raises(TypeError, match="casual"):
        attnc.attention(**dense(casual=True))


@pytest.mark.parametrize("outs, lses, error, words", [
    # Rank-1 tensors were an IndexError.
    ([FakeTensor((64,))] * 2, [FakeTensor((), "torch.float32")] * 2,
     ValueError, "outs\\[0\\] must be \\[.., heads, dim\\]"),
    (FakeTensor((2, 4, 8, 64)), [FakeTensor((4, 8), "torch.float32")] * 2,
     TypeError, "outs must be a list or tuple"),
    ([FakeTensor((4, 8, 64))] * 2, "lses", TypeError,
     "lses must be a list or tuple"),
    ([], [], ValueError, "two or more"),
    ([FakeTensor((4, 8, 64))] * 33, [FakeTensor((4, 8), "torch.float32")] * 33,
     ValueError, "at most 32 states, got 33"),
    ([FakeTensor((4, 8, 64)), FakeTensor((4, 8, 64), "torch.float16")],
     [FakeTensor((4, 8), "torch.float32")] * 2, TypeError,
     "outs\\[1\\] must be bfloat16"),
    ([FakeTensor((4, 8, 64))] * 2,
     [FakeTensor((4, 8), "torch.float32"), FakeTensor((4, 8))], TypeError,
     "lses\\[1\\] must be float32"),
    ([FakeTensor((4, 0, 64))] * 2, [FakeTensor((4, 0), "torch.float32")] * 2,
     attnc.AttncError, "head count must be in \\[1, 1024\\], got 0"),
])
def test_merge_states_checks_its_arguments(outs, lses, error, words):
    with pytest.raises(error, match=words):
        attnc.merge_states(outs, lses)


def paged(**change):
    args = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)
    args.update(change)
    return args


@pytest.mark.parametrize("args, error, words", [
    # num_kv_heads 0 was a ZeroDivisionError.
    (paged(num_kv_heads=0), InvalidArgumentError,
     "key/value head count must be in \\[1, 1024\\], got 0"),
    (paged(num_qo_heads=30), InvalidArgumentError,
     "query heads \\(30\\) must be a multiple of key/value heads \\(8\\)"),
    (paged(page_size=512), InvalidArgumentError,
     "page size must be between 1 and 256, got 512"),
    (paged(page_size=16.0), TypeError, "page_size must be an int"),
    (paged(head_dim=2**70), ValueError, "head_dim must be in"),
    (paged(num_qo_heads="32"), TypeError, "num_qo_heads must be an int"),
    (paged(kv_layout=None), ValueError, "kv_layout must be NHD or HND"),
    (paged(kv_layout="nhd"), ValueError, "kv_layout must be NHD or HND"),
    (paged(dtype=None), TypeError, "dtype must be bfloat16 or float16"),
    (paged(window=(-1, 0)), ValueError, "window extents must be "
     "non-negative"),
    (paged(causal=5), ValueError, "causal must be a bool"),
    (paged(sinks=-1), InvalidArgumentError, "sinks must be in \\[0, "),
    (paged(kv_dtype="float32"), TypeError, "kv_dtype must be bfloat16 or an "
     "fp8 type \\(float8_e4m3fn or float8_e5m2\\), got float32"),
    (paged(kv_dtype="float8_e5m2", kv_scales="row"), ValueError,
     "kv_scales must be None, 'tensor' or 'head' for an fp8 cache"),
    (paged(kv_scales="tensor"), ValueError, "and None otherwise, got "
     "'tensor'"),
])
def test_paged_wrapper_checks_its_configuration(args, error, words):
    with pytest.raises(error, match=words):
        attnc.PagedAttention(**args)


def test_paged_wrapper_takes_no_unknown_keywords():
    with pytest.raises(TypeError, match="page_sise"):
        attnc.PagedAttention(32, 8, 128, page_sise=16)


def index(n, values=None, dtype="torch.int32", device="cpu"):
    return FakeTensor((n,), dtype, device=device, values=values)


@pytest.mark.parametrize("args, error, words", [
    ((index(3, dtype="torch.float32"), index(4), index(2)), TypeError,
     "kv_indptr must be int32"),
    ((index(3), "pages", index(2)), TypeError, "kv_indices must be a tensor"),
    ((index(3), index(4), FakeTensor((2, 1), "torch.int32")), ValueError,
     "kv_last_page_len must have rank 1"),
    ((index(3), index(4), index(2), index(3, dtype="torch.int64")),
     TypeError, "qo_indptr must be int32"),
])
def test_paged_plan_checks_its_index_arrays(args, error, words):
    wrapper = attnc.PagedAttention(32, 8, 128, page_size=16)
    with pytest.raises(error, match=words):
        wrapper.plan(*args)


def planned(return_lse=False, tokens=4, pages_needed=10):
    """A wrapper as plan() leaves it, without a GPU: run's checks happen
    before the kernel is touched."""
    wrapper = attnc.PagedAttention(32, 8, 128, page_size=16,
                                   return_lse=return_lse)
    wrapper._plan, wrapper._tokens = object(), tokens
    wrapper._pages_needed = pages_needed
    return wrapper


@pytest.mark.parametrize("wrapper, args, error, words", [
    # A page index past the cache read outside it on the device.
    (planned(), dict(k_cache=FakeTensor((9, 16, 8, 128))), ValueError,
     "k_cache has 9 pages, the plan reads page 9"),
    (planned(), dict(v_cache=FakeTensor((10, 8, 16, 128))), ValueError,
     "v_cache must be \\[pages, 16, 8, 128\\] \\(NHD\\)"),
    (planned(), dict(q=FakeTensor((5, 32, 128))), ValueError,
     "q must be \\[4, 32, 128\\] for this plan"),
    # An lse of the wrong shape was written past its end.
    (planned(return_lse=True), dict(lse=FakeTensor((4, 8), "torch.float32")),
     ValueError, "lse must be \\(4, 32\\), got \\(4, 8\\)"),
    (planned(), dict(lse=FakeTensor((4, 32), "torch.float32")), ValueError,
     "lse given, but the wrapper was made without return_lse"),
    (planned(), dict(out=FakeTensor((4, 32, 64))), ValueError,
     "out must have q's shape"),
    # FlashInfer's cache forms, and pages that are not packed.
    (planned(), dict(k_cache=(FakeTensor((10, 16, 8, 128)),) * 3,
                     v_cache=None), ValueError,
     "a paged cache given alone is a \\(k_cache, v_cache\\) pair, got 3"),
    (planned(), dict(k_cache=FakeTensor((10, 3, 16, 8, 128)), v_cache=None),
     ValueError, "an interleaved kv_cache is \\[pages, 2, ...\\]"),
    (planned(), dict(k_cache=FakeTensor((10, 2, 16, 8, 128),
                                        "torch.float16"), v_cache=None),
     TypeError, "kv_cache must be bfloat16"),
    (planned(), dict(v_cache=FakeTensor((10, 16, 8, 128), contiguous=False)),
     ValueError, "v_cache's pages must each be packed and apart from one "
     "another \\(strides \\[>= 16384, 1024, 128, 1\\]\\), got strides "
     "\\[32768, 2048, 256, 1\\]"),
])
def test_paged_run_checks_its_tensors(wrapper, args, error, words):
    call = dict(q=FakeTensor((4, 32, 128)),
                k_cache=FakeTensor((10, 16, 8, 128)),
                v_cache=FakeTensor((10, 16, 8, 128)),
                out=FakeTensor((4, 32, 128)))
    call.update(args)
    with pytest.raises(error, match=words):
        wrapper.run(**call)


@pytest.fixture(scope="module")
def kernel():
    return Kernel(Variant.from_spec(**GQA), arch="sm_90a", cache_dir="-")


def test_kernel_checks_its_arguments():
    with pytest.raises(TypeError, match="variant must be an attnc.Variant"):
        Kernel("func.func @f()")
    variant = Variant.from_spec(**GQA)
    with pytest.raises(TypeError, match="arch must be a str, got int"):
        Kernel(variant, arch=90)
    with pytest.raises(TypeError, match="cache_dir must be a str"):
        Kernel(variant, arch="sm_90a", cache_dir=1)
    with pytest.raises(attnc.AttncError,
                       match="unsupported GPU architecture .sm_1."):
        Kernel(variant, arch="sm_1", cache_dir="-")


@pytest.mark.parametrize("change, error, words", [
    (dict(batch=1.5), TypeError, "batch must be an int, got float"),
    (dict(batch=2**31), ValueError, "batch must be in -2147483648.."),
    (dict(query_tokens=None), TypeError, "query_tokens must be an int"),
    (dict(q_indptr=-1), ValueError, "q_indptr must be in 0.."),
    (dict(kv_indptr=2**64), ValueError, "kv_indptr must be in 0.."),
    (dict(batch=-1), InvalidArgumentError, "must be non-negative"),
    (dict(k_page_stride=-1), InvalidArgumentError, "page strides"),
    (dict(kv_tokens=1.0), TypeError, "kv_tokens must be an int"),
    (dict(kv_tokens=-1), InvalidArgumentError, "kv_tokens must be 0"),
])
def test_kernel_plan_checks_each_field(kernel, change, error, words):
    args = dict(batch=2, max_query_len=4, max_kv_len=4, query_tokens=8)
    args.update(change)
    with pytest.raises(error, match=words):
        kernel.plan(**args)


@pytest.mark.parametrize("change, error, words", [
    (dict(plan="plan"), TypeError, "plan must be an attnc.Plan, got str"),
    (dict(inputs=[1, 2, -3]), ValueError, "inputs\\[2\\] must be in 0.."),
    (dict(inputs=(1, 2, 3.0)), TypeError, "inputs\\[2\\] must be an int"),
    (dict(outputs=4), TypeError, "outputs must be a list or tuple"),
    (dict(stream="default"), TypeError, "stream must be an int"),
    # The library reads one entry per buffer input, however many are given.
    (dict(buffer_sizes=[[4]]), ValueError,
     "buffer_sizes needs one entry per buffer input \\(0\\), got 1"),
])
def test_kernel_run_checks_its_arguments(kernel, change, error, words):
    args = dict(plan=Plan(kernel, ctypes.c_void_p()), inputs=[1, 2, 3],
                outputs=[4])
    args.update(change)
    with pytest.raises(error, match=words):
        kernel.run(**args)


def test_a_plan_runs_only_with_its_kernel(kernel):
    other = Kernel(Variant.from_spec(**GQA), arch="sm_90a", cache_dir="-")
    with pytest.raises(ValueError, match="plan was made by another kernel"):
        kernel.run(Plan(other, ctypes.c_void_p()), [1, 2, 3], [4])
    with pytest.raises(ValueError, match="this plan has been released"):
        kernel.run(Plan(kernel, ctypes.c_void_p()), [1, 2, 3], [4])
    with pytest.raises(TypeError, match="launch must be an int"):
        Plan(kernel, ctypes.c_void_p(1)).splits("0")


@pytest.mark.parametrize("arrays, words", [
    (([0, 2, 1], [0, 1], [3, 3]), "every request needs a page"),
    (([-1, 1, 2], [0, 1, 2], [3, 3]), "kv_indptr must start at 0 or more"),
    (([0, 1, 3], [0, 1], [3, 3]), "kv_indices is shorter than kv_indptr"),
    # A negative page index read before the cache on the device.
    (([0, 1, 2], [0, -1], [3, 3]), "kv_indices must not be negative"),
    (([0, 1, 2], [0, 1], [3, 17]), "kv_last_page_len must be in 1..16"),
    (([0, 1, 2], [0, 1], [3]), "one entry per request"),
    (([0, 1, 2], [0, 1], [3, 3], [-1, 1, 2]),
     "qo_indptr must start at 0 or more"),
    (([0, 1, 2], [0, 1], [3, 3], [0, 2, 1]), "qo_indptr must not decrease"),
    (([0, 1, 2], [0, 1], [3, 3], [0, 4, 5]), "more queries than keys"),
    (([0, 1, 2], [0, 1], [3, 3], [0, 1]), "qo_indptr needs batch \\+ 1"),
])
def test_paged_plan_checks_its_index_values(arrays, words):
    # Checked on host values before anything touches a GPU.
    wrapper = attnc.PagedAttention(32, 8, 128, page_size=16)
    tensors = [index(len(a), a) for a in arrays]
    with pytest.raises(ValueError, match=words):
        wrapper.plan(*tensors)


MLA_SCALE = 192 ** -0.5


def test_mla_configurations_are_checked_when_made():
    with pytest.raises(TypeError, match="dtype must be bfloat16 or float16"):
        attnc.MLAAttention(16, dtype="float32", sm_scale=MLA_SCALE)
    with pytest.raises(attnc.AttncError):
        attnc.MLAAttention(0, sm_scale=MLA_SCALE)
    with pytest.raises(ValueError, match="head_dim_kpe must be positive"):
        attnc.MLAAttention(16, 512, 0, sm_scale=MLA_SCALE)


@pytest.mark.parametrize("make", [attnc.MLAAttention,
                                  attnc.CascadeMLAAttention])
def test_mla_needs_the_models_scale(make):
    # 1/sqrt(576) would be DeepSeek's scale off by sqrt(3): no default.
    with pytest.raises(ValueError, match="MLAAttention needs sm_scale"):
        make(128, 512, 64, page_size=64)


def test_mla_cache_types_are_checked_when_made():
    with pytest.raises(TypeError, match="kv_dtype must be bfloat16 or an fp8"):
        attnc.MLAAttention(16, kv_dtype="int8", sm_scale=MLA_SCALE)
    # An fp8 latent cache is a variant the dialect accepts.
    mla = attnc.MLAAttention(16, kv_dtype="float8_e4m3fn", sm_scale=MLA_SCALE)
    assert mla.kv_dtype == "float8_e4m3fn"


def test_a_float_scale_allocates_once_per_value():
    # fp8 runs given Python floats: the same value is the same tensor (no
    # allocation per call), another value another tensor.
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    from attnc.functional import scale_tensor
    first = scale_tensor("k_scale", 0.5, 8, "cpu")
    assert scale_tensor("k_scale", 0.5, 8, "cpu") is first
    other = scale_tensor("k_scale", 0.25, 8, "cpu")
    assert other is not first and float(other[0]) == 0.25
    assert first.dtype == torch.float32 and float(first[0]) == 0.5
    with pytest.raises(TypeError):
        scale_tensor("k_scale", "half", 8, "cpu")
