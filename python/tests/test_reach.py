"""The same reach from every front end (issue 45): document ids as
attention()'s `segments` and the spec's field, and score_mod, mask_mod,
captures and ALiBi on PagedAttention. Compile-only and errors: no GPU, no
torch (test_reach_gpu.py runs them against a float64 reference)."""

from pathlib import Path

import pytest

import attnc
from attnc.kernel import Kernel, Variant
from attnc._regions import reads_argument
from fakes import FakeTensor

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

slopes = FakeTensor((32,), "torch.float32")
doc = FakeTensor((4, 4096), "torch.int32")


def compiled(variant):
    return Kernel(variant, arch="sm_90a", cache_dir="-")


# --- segments: the spec field -------------------------------------------

def test_a_segments_spec_is_the_example_with_its_operands():
    # examples/document_segments.mlir, from the spec: the same operands and
    # the same kernel (the CUDA differs only in the function's name).
    example = (EXAMPLES / "document_segments.mlir").read_text()
    variant = Variant.from_spec(name="document_segments", query_heads=16,
                                kv_heads=16, head_dim=128,
                                query_layout="ragged", kv_layout="ragged",
                                causal=True, segments=True)
    assert ("segments(%attnc_q_segments, %attnc_kv_segments : "
            "memref<?xi32>, memref<?xi32>) {causal}") in variant.mlir
    from_spec = compiled(variant)
    from_text = compiled(Variant.from_mlir(example))
    assert from_spec.cuda_source == from_text.cuda_source
    assert [i.role for i in from_spec.inputs] == [
        "query", "kv", "kv", "buffer", "buffer"]


def test_dense_segments_are_per_batch_and_position():
    variant = Variant.from_spec(query_heads=8, kv_heads=2, head_dim=64,
                                queries_per_request=1, segments=True)
    assert ("segments(%attnc_q_segments, %attnc_kv_segments : "
            "memref<?x?xi32>, memref<?x?xi32>)") in variant.mlir
    assert "kSegments = true" in compiled(variant).cuda_source


def test_segments_come_before_scales_and_captures():
    variant = Variant.from_spec(
        query_heads=8, kv_heads=2, head_dim=64, segments=True,
        kv_dtype="float8_e4m3fn", kv_scales="tensor",
        mask_mod=lambda b, h, q_idx, kv_idx: doc[b, kv_idx] >= 0)
    text = variant.mlir
    order = ["%attnc_q_segments:", "%attnc_kv_segments:", "%attnc_k_scale:",
             "%attnc_v_scale:", "%attnc_capture0:"]
    places = [text.index(name) for name in order]
    assert places == sorted(places), text
    assert variant.captures == (doc,)


def test_a_paged_cache_with_segments_is_refused_by_name():
    variant = Variant.from_spec(query_heads=8, kv_heads=2, head_dim=64,
                                kv_layout="paged", queries_per_request=1,
                                segments=True)
    with pytest.raises(attnc.AttncError,
                       match="document segments with a paged cache"):
        compiled(variant)


# --- segments: attention()'s keyword ------------------------------------

DENSE = dict(q=FakeTensor((2, 16, 8, 64)), k=FakeTensor((2, 16, 2, 64)),
             v=FakeTensor((2, 16, 2, 64)), layout="bshd")
CHUNK = dict(q=FakeTensor((2, 4, 8, 64)), k=FakeTensor((2, 16, 2, 64)),
             v=FakeTensor((2, 16, 2, 64)), layout="bshd")
INDPTR = FakeTensor((3,), "torch.int32", values=[0, 5, 16])
OTHER_INDPTR = FakeTensor((3,), "torch.int32", values=[0, 9, 16])
RAGGED = dict(q=FakeTensor((16, 8, 64)), k=FakeTensor((16, 2, 64)),
              v=FakeTensor((16, 2, 64)), q_indptr=INDPTR, kv_indptr=INDPTR)


def ids(*shape, **kwargs):
    return FakeTensor(shape, **dict(dict(dtype="torch.int32"), **kwargs))


@pytest.mark.parametrize("args, segments, error, words", [
    (DENSE, ids(2, 16, dtype="torch.int64"), TypeError,
     "segments must be int32, got int64"),
    (DENSE, ids(2, 16, device="cpu"), ValueError,
     "segments must be on a CUDA device"),
    (DENSE, ids(2, 16, contiguous=False), ValueError,
     "segments must be contiguous"),
    (DENSE, ids(32), ValueError, "segments must have rank 2, got shape"),
    (DENSE, ids(2, 15), ValueError,
     "segments must be \\[2, 16\\] \\(one id per token of q\\), got "
     "\\[2, 15\\]"),
    (DENSE, object(), TypeError, "segments must be a tensor"),
    (DENSE, (ids(2, 16),), ValueError, "a \\(q_segments, kv_segments\\) "
     "pair, got 1 values"),
    (CHUNK, ids(2, 16), ValueError, "q and k are not the same tokens "
     "\\(q_len 4, kv_len 16\\): give segments=\\(q_segments, kv_segments\\)"),
    (CHUNK, (ids(2, 16), ids(2, 16)), ValueError,
     "segments\\[0\\] \\(the queries' ids\\) must be \\[2, 4\\]"),
    (CHUNK, (ids(2, 4), ids(2, 4)), ValueError,
     "segments\\[1\\] \\(the keys' ids\\) must be \\[2, 16\\] \\(one id per "
     "token of k\\)"),
    (CHUNK, (ids(2, 4), FakeTensor((2, 16), "torch.float32")), TypeError,
     "segments\\[1\\] \\(the keys' ids\\) must be int32"),
    (RAGGED, ids(2, 8), ValueError, "segments must have rank 1"),
    (RAGGED, ids(15), ValueError,
     "segments must be \\[16\\] \\(one id per token of q\\)"),
    (dict(RAGGED, kv_indptr=OTHER_INDPTR), ids(16), ValueError,
     "q_indptr and kv_indptr differ\\): give segments=\\(q_segments, "
     "kv_segments\\)"),
])
def test_bad_segments_are_named(args, segments, error, words):
    with pytest.raises(error, match=words):
        attnc.attention(**args, segments=segments)


# --- PagedAttention: regions, captures, ALiBi ---------------------------

def paged(**kwargs):
    args = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)
    return attnc.PagedAttention(**dict(args, **kwargs))


def kernels(wrapper):
    """The wrapper's decode and prefill kernels, for sm_90a."""
    spec = wrapper._spec
    return (compiled(Variant.from_spec(**wrapper._decode_spec())),
            compiled(Variant.from_spec(**dict(spec, query_layout="ragged"))))


def alibi_mod(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)


def documents(b, h, q_idx, kv_idx):
    return doc[b, q_idx] == doc[b, kv_idx]


def test_paged_traced_mods_find_their_captures_and_compile():
    wrapper = paged(causal=True, score_mod=alibi_mod, mask_mod=documents)
    assert wrapper.captures == (slopes, doc)
    for kernel in kernels(wrapper):
        source = kernel.cuda_source
        assert "scoreMod(" in source and "maskMod(" in source
        assert [i.role for i in kernel.inputs] == [
            "query", "kv", "kv", "buffer", "buffer"]


def test_paged_alibi_reaches_both_kernels():
    for kernel in kernels(paged(alibi=True, causal=True)):
        assert "kAlibi = true" in kernel.cuda_source
    for kernel in kernels(paged(causal=True)):
        assert "kAlibi = false" in kernel.cuda_source


def test_paged_region_text_reads_the_listed_captures():
    bias = FakeTensor((32, 4096), "torch.float32")
    wrapper = paged(captures=[bias], score_mod="""
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index,
           %q_len: index, %kv_len: index, %bias: memref<?x?xf32>):
        %x = memref.load %bias[%h, %kvi] : memref<?x?xf32>
        %y = arith.addf %s, %x : f32
        attn.yield %y : f32""")
    assert wrapper.captures == (bias,)
    assert "memref<?x?xf32>" in Variant.from_spec(
        **wrapper._decode_spec()).mlir


def test_paged_listed_captures_come_before_found_ones():
    other = FakeTensor((7,), "torch.float32")
    wrapper = paged(captures=[other, doc], mask_mod=documents)
    assert wrapper.captures == (other, doc)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(score_mod=3), TypeError, "score_mod must be a str, got int"),
    (dict(captures=[FakeTensor((4,), "torch.int64")],
          score_mod=alibi_mod), TypeError,
     "captures\\[0\\] must be int32 or float32"),
    (dict(captures=slopes, score_mod=alibi_mod), TypeError,
     "captures must be a list or tuple"),
    (dict(mask_mod=lambda b, h, q_idx, kv_idx: slopes[h] > 0,
          score_mod="^bb0(%s: f32, %b: index, %h: index, %qi: index, "
          "%kvi: index, %ql: index, %kl: index):\n  attn.yield %s : f32"),
     ValueError, "score_mod is MLIR text, so its block arguments name "
     "every capture"),
    (dict(alibi=2), ValueError, "alibi must be a bool"),
])
def test_paged_bad_mods_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        paged(**kwargs)


def test_paged_run_checks_the_captures_it_is_given():
    wrapper = paged(score_mod=alibi_mod, mask_mod=documents)
    assert wrapper._captures(None) == (slopes, doc)
    fresh = (FakeTensor((32,), "torch.float32"),
             FakeTensor((4, 100), "torch.int32"))
    assert wrapper._captures(fresh) == fresh
    with pytest.raises(ValueError, match="captures must replace the "
                       "wrapper's 2 captured tensor\\(s\\), got 1"):
        wrapper._captures(fresh[:1])
    with pytest.raises(TypeError, match="captures\\[1\\] must be int32, got "
                       "float32"):
        wrapper._captures((slopes, FakeTensor((4, 100), "torch.float32")))
    with pytest.raises(ValueError, match="captures\\[1\\] must have rank 2"):
        wrapper._captures((slopes, FakeTensor((400,), "torch.int32")))


# Which mods number requests: those make a mixed step one launch.
@pytest.mark.parametrize("kind, mod, reads", [
    ("score_mod", alibi_mod, False),
    ("mask_mod", documents, True),
    ("mask_mod", lambda b, h, q_idx, kv_idx: h > 0, False),
    ("score_mod", lambda score, b, h, q_idx, kv_idx: score + b, True),
    ("mask_mod", """^bb0(%b: index, %h: index, %qi: index, %kvi: index,
        %q_len: index, %kv_len: index):
      %c = arith.cmpi ult, %b, %kvi : index
      attn.yield %c : i1""", True),
    # %b0 and %b.x are other values than %b.
    ("mask_mod", """^bb0(%b: index, %h: index, %qi: index, %kvi: index,
        %q_len: index, %kv_len: index):
      %b0 = arith.constant 3 : index
      %b.x = arith.cmpi ult, %b0, %kvi : index
      attn.yield %b.x : i1""", False),
    ("score_mod", """^bb0(%s: f32, %batch: index, %h: index, %qi: index,
        %kvi: index, %q_len: index, %kv_len: index, %t: memref<?xf32>):
      %x = memref.load %t[%batch] : memref<?xf32>
      attn.yield %x : f32""", True),
    ("score_mod", None, False),
])
def test_mods_that_read_the_batch_index_are_found(kind, mod, reads):
    assert reads_argument(kind, region_text(kind, mod), "batch") is reads


def region_text(kind, mod):
    """A mod's region text: itself, or a function's trace."""
    if callable(mod):
        score_mod, mask_mod, _ = attnc.trace.lower(
            mod if kind == "score_mod" else None,
            mod if kind == "mask_mod" else None)
        mod = score_mod or mask_mod
    return mod


# Which mods number heads: those keep a call's heads from folding into its
# requests.
@pytest.mark.parametrize("kind, mod, reads", [
    ("score_mod", alibi_mod, True),
    ("mask_mod", documents, False),
    ("mask_mod", lambda b, h, q_idx, kv_idx: h > 0, True),
    ("mask_mod", lambda b, h, q_idx, kv_idx: q_idx - kv_idx < 64, False),
    ("score_mod", lambda score, b, h, q_idx, kv_idx: score + b, False),
    ("score_mod", """^bb0(%s: f32, %b: index, %head: index, %qi: index,
        %kvi: index, %q_len: index, %kv_len: index):
      %c = arith.cmpi ult, %head, %kvi : index
      %z = arith.constant 0.0 : f32
      %r = arith.select %c, %s, %z : f32
      attn.yield %r : f32""", True),
    ("mask_mod", None, False),
])
def test_mods_that_read_the_head_index_are_found(kind, mod, reads):
    assert reads_argument(kind, region_text(kind, mod), "head") is reads
