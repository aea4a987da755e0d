"""Python functions as score_mod and mask_mod: what each construct traces
to, that a traced region compiles to the kernel of the region written by
hand, each refusal's message and line, the trace cache, and the captures
found without being listed. CPU only, no torch (the tests that need torch
are marked gpu; test_trace_gpu.py runs traced mods on the GPU)."""

import re
from pathlib import Path

import pytest

import attnc
from attnc.kernel import Kernel, Variant
from attnc.trace import TraceError, lower, regions
from fakes import FakeTensor

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

slopes = FakeTensor((16,), "torch.float32")
doc = FakeTensor((4096,), "torch.int32")
prefix = FakeTensor((8,), "torch.int32")
bias = FakeTensor((16, 64), "torch.float32")
doc_2d = FakeTensor((8, 4096), "torch.int32")


def body(fn, kind="mask_mod"):
    """The ops of fn's region, one per line, without the block header."""
    score_mod, mask_mod, _ = lower(fn if kind == "score_mod" else None,
                                   fn if kind == "mask_mod" else None)
    return (score_mod or mask_mod).split("\n", 1)[1]


def ops(text):
    return text.strip("\n")


POSITION = """
  %v0 = arith.addi %qi, %kv_len : index
  %v1 = arith.subi %v0, %q_len : index"""


# Each construct and the ops it must trace to. q_idx is the query's
# position, qi + kv_len - q_len, defined where first used.
CONSTRUCTS = {
    "causal": (lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, "mask_mod",
               POSITION + """
  %v2 = arith.cmpi sge, %v1, %kvi : index
  attn.yield %v2 : i1"""),
    "q_idx is not computed when unused": (
        lambda b, h, q_idx, kv_idx: kv_idx < 4, "mask_mod", """
  %v0 = arith.constant 4 : index
  %v1 = arith.cmpi slt, %kvi, %v0 : index
  attn.yield %v1 : i1"""),
    "and, or, not": (
        lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & ~(kv_idx == 3) |
        (h != b), "mask_mod", POSITION + """
  %v2 = arith.cmpi sge, %v1, %kvi : index
  %v3 = arith.constant 3 : index
  %v4 = arith.cmpi eq, %kvi, %v3 : index
  %v5 = arith.constant true
  %v6 = arith.xori %v4, %v5 : i1
  %v7 = arith.andi %v2, %v6 : i1
  %v8 = arith.cmpi ne, %h, %b : index
  %v9 = arith.ori %v7, %v8 : i1
  attn.yield %v9 : i1"""),
    "integer arithmetic becomes float beside the score": (
        lambda score, b, h, q_idx, kv_idx: score * 2 - (kv_idx + 1) * h,
        "score_mod", """
  %v0 = arith.constant 2.000000000e+00 : f32
  %v1 = arith.mulf %score, %v0 : f32
  %v2 = arith.constant 1 : index
  %v3 = arith.addi %kvi, %v2 : index
  %v4 = arith.muli %v3, %h : index
  %v5 = arith.index_cast %v4 : index to i64
  %v6 = arith.sitofp %v5 : i64 to f32
  %v7 = arith.subf %v1, %v6 : f32
  attn.yield %v7 : f32"""),
    "true division of integers is float": (
        lambda score, b, h, q_idx, kv_idx: score + kv_idx / 8, "score_mod",
        """
  %v0 = arith.index_cast %kvi : index to i64
  %v1 = arith.sitofp %v0 : i64 to f32
  %v2 = arith.constant 8.000000000e+00 : f32
  %v3 = arith.divf %v1, %v2 : f32
  %v4 = arith.addf %score, %v3 : f32
  attn.yield %v4 : f32"""),
    "float comparisons: != is true for NaN": (
        lambda score, b, h, q_idx, kv_idx: attnc.where(
            (score < 0.5) | (score != score), 0.0, score), "score_mod", """
  %v0 = arith.constant 5.000000000e-01 : f32
  %v1 = arith.cmpf olt, %score, %v0 : f32
  %v2 = arith.cmpf une, %score, %score : f32
  %v3 = arith.ori %v1, %v2 : i1
  %v4 = arith.constant 0.000000000e+00 : f32
  %v5 = arith.select %v3, %v4, %score : f32
  attn.yield %v5 : f32"""),
    "-inf is spelled by its bits": (
        lambda score, b, h, q_idx, kv_idx: attnc.where(
            kv_idx > 9, float("-inf"), score), "score_mod", """
  %v0 = arith.constant 9 : index
  %v1 = arith.cmpi sgt, %kvi, %v0 : index
  %v2 = arith.constant 0xFF800000 : f32
  %v3 = arith.select %v1, %v2, %score : f32
  attn.yield %v3 : f32"""),
    "floor division and Python's remainder": (
        lambda b, h, q_idx, kv_idx: kv_idx // 64 == kv_idx % 3, "mask_mod",
        """
  %v0 = arith.constant 64 : index
  %v1 = arith.floordivsi %kvi, %v0 : index
  %v2 = arith.constant 3 : index
  %v3 = arith.remsi %kvi, %v2 : index
  %v4 = arith.constant 0 : index
  %v5 = arith.cmpi slt, %v3, %v4 : index
  %v6 = arith.addi %v3, %v2 : index
  %v7 = arith.select %v5, %v6, %v3 : index
  %v8 = arith.cmpi eq, %v1, %v7 : index
  attn.yield %v8 : i1"""),
    "a remainder by a symbolic divisor takes its sign": (
        lambda b, h, q_idx, kv_idx: kv_idx % h == 0, "mask_mod", """
  %v0 = arith.remsi %kvi, %h : index
  %v1 = arith.constant 0 : index
  %v2 = arith.cmpi slt, %v0, %v1 : index
  %v3 = arith.cmpi ne, %v0, %v1 : index
  %v4 = arith.cmpi slt, %h, %v1 : index
  %v5 = arith.xori %v2, %v4 : i1
  %v6 = arith.andi %v3, %v5 : i1
  %v7 = arith.addi %v0, %h : index
  %v8 = arith.select %v6, %v7, %v0 : index
  %v9 = arith.cmpi eq, %v8, %v1 : index
  attn.yield %v9 : i1"""),
    "min, max and clamp, Python's and attnc's": (
        lambda score, b, h, q_idx, kv_idx: attnc.clamp(score, -5.0, 5.0) +
        min(kv_idx, 7) - attnc.maximum(h, 2), "score_mod", """
  %v0 = arith.constant -5.000000000e+00 : f32
  %v1 = arith.maximumf %score, %v0 : f32
  %v2 = arith.constant 5.000000000e+00 : f32
  %v3 = arith.minimumf %v1, %v2 : f32
  %v4 = arith.constant 7 : index
  %v5 = arith.minsi %kvi, %v4 : index
  %v6 = arith.index_cast %v5 : index to i64
  %v7 = arith.sitofp %v6 : i64 to f32
  %v8 = arith.addf %v3, %v7 : f32
  %v9 = arith.constant 2 : index
  %v10 = arith.maxsi %h, %v9 : index
  %v11 = arith.index_cast %v10 : index to i64
  %v12 = arith.sitofp %v11 : i64 to f32
  %v13 = arith.subf %v8, %v12 : f32
  attn.yield %v13 : f32"""),
    "abs of an integer and of a float": (
        lambda score, b, h, q_idx, kv_idx: abs(score) * abs(h - kv_idx),
        "score_mod", """
  %v0 = math.absf %score : f32
  %v1 = arith.subi %h, %kvi : index
  %v2 = math.absi %v1 : index
  %v3 = arith.index_cast %v2 : index to i64
  %v4 = arith.sitofp %v3 : i64 to f32
  %v5 = arith.mulf %v0, %v4 : f32
  attn.yield %v5 : f32"""),
    "math functions": (
        lambda score, b, h, q_idx, kv_idx: attnc.exp(score) +
        attnc.exp2(score) + attnc.log(score) + attnc.log2(score) +
        attnc.sqrt(score) + attnc.rsqrt(score) + attnc.tanh(score) +
        attnc.floor(score) + attnc.ceil(score), "score_mod", """
  %v0 = math.exp %score : f32
  %v1 = math.exp2 %score : f32
  %v2 = arith.addf %v0, %v1 : f32
  %v3 = math.log %score : f32
  %v4 = arith.addf %v2, %v3 : f32
  %v5 = math.log2 %score : f32
  %v6 = arith.addf %v4, %v5 : f32
  %v7 = math.sqrt %score : f32
  %v8 = arith.addf %v6, %v7 : f32
  %v9 = math.rsqrt %score : f32
  %v10 = arith.addf %v8, %v9 : f32
  %v11 = math.tanh %score : f32
  %v12 = arith.addf %v10, %v11 : f32
  %v13 = math.floor %score : f32
  %v14 = arith.addf %v12, %v13 : f32
  %v15 = math.ceil %score : f32
  %v16 = arith.addf %v14, %v15 : f32
  attn.yield %v16 : f32"""),
    "sigmoid, and tensor methods": (
        lambda score, b, h, q_idx, kv_idx: score.sigmoid() * h.exp(),
        "score_mod", """
  %v0 = arith.negf %score : f32
  %v1 = math.exp %v0 : f32
  %v2 = arith.constant 1.000000000e+00 : f32
  %v3 = arith.addf %v2, %v1 : f32
  %v4 = arith.divf %v2, %v3 : f32
  %v5 = arith.index_cast %h : index to i64
  %v6 = arith.sitofp %v5 : i64 to f32
  %v7 = math.exp %v6 : f32
  %v8 = arith.mulf %v4, %v7 : f32
  attn.yield %v8 : f32"""),
    "an integer power is a product; a float power is powf": (
        lambda score, b, h, q_idx, kv_idx: score ** 0.5 - h ** 2,
        "score_mod", """
  %v0 = arith.constant 5.000000000e-01 : f32
  %v1 = math.powf %score, %v0 : f32
  %v2 = arith.constant 1 : index
  %v3 = arith.muli %v2, %h : index
  %v4 = arith.muli %v3, %h : index
  %v5 = arith.index_cast %v4 : index to i64
  %v6 = arith.sitofp %v5 : i64 to f32
  %v7 = arith.subf %v1, %v6 : f32
  attn.yield %v7 : f32"""),
    "booleans convert unsigned": (
        lambda score, b, h, q_idx, kv_idx: score + (kv_idx < 2), "score_mod",
        """
  %v0 = arith.constant 2 : index
  %v1 = arith.cmpi slt, %kvi, %v0 : index
  %v2 = arith.uitofp %v1 : i1 to f32
  %v3 = arith.addf %score, %v2 : f32
  attn.yield %v3 : f32"""),
    "a 1-D float capture": (
        lambda score, b, h, q_idx, kv_idx: score + slopes[h], "score_mod",
        """
  %v0 = memref.load %capture0[%h] : memref<?xf32>
  %v1 = arith.addf %score, %v0 : f32
  attn.yield %v1 : f32"""),
    "a 1-D int capture read twice": (
        lambda b, h, q_idx, kv_idx: doc[q_idx] == doc[kv_idx], "mask_mod",
        POSITION + """
  %v2 = memref.load %capture0[%v1] : memref<?xi32>
  %v3 = memref.load %capture0[%kvi] : memref<?xi32>
  %v4 = arith.cmpi eq, %v2, %v3 : i32
  attn.yield %v4 : i1"""),
    "an i32 meets an index": (
        lambda b, h, q_idx, kv_idx: kv_idx < prefix[b], "mask_mod", """
  %v0 = memref.load %capture0[%b] : memref<?xi32>
  %v1 = arith.index_cast %v0 : i32 to index
  %v2 = arith.cmpi slt, %kvi, %v1 : index
  attn.yield %v2 : i1"""),
    "a 2-D capture, by a tuple and row by row": (
        lambda score, b, h, q_idx, kv_idx:
        score + bias[h, 3] * bias[h][kv_idx],
        "score_mod", """
  %v0 = arith.constant 3 : index
  %v1 = memref.load %capture0[%h, %v0] : memref<?x?xf32>
  %v2 = memref.load %capture0[%h, %kvi] : memref<?x?xf32>
  %v3 = arith.mulf %v1, %v2 : f32
  %v4 = arith.addf %score, %v3 : f32
  attn.yield %v4 : f32"""),
    "an integer read from a capture indexes another": (
        lambda b, h, q_idx, kv_idx: doc_2d[b, doc[kv_idx]] > 0, "mask_mod",
        """
  %v0 = memref.load %capture0[%kvi] : memref<?xi32>
  %v1 = arith.index_cast %v0 : i32 to index
  %v2 = memref.load %capture1[%b, %v1] : memref<?x?xi32>
  %v3 = arith.constant 0 : i32
  %v4 = arith.cmpi sgt, %v2, %v3 : i32
  attn.yield %v4 : i1"""),
    "what the function does not return is left out": (
        lambda score, b, h, q_idx, kv_idx: (slopes[h] * 2, score)[1],
        "score_mod", """
  attn.yield %score : f32"""),
    "a constant mask": (lambda b, h, q_idx, kv_idx: True, "mask_mod", """
  %v0 = arith.constant true
  attn.yield %v0 : i1"""),
    "FlexAttention's and_masks starts from new_ones": (
        lambda b, h, q_idx, kv_idx: b.new_ones((), dtype="torch.bool") &
        (kv_idx <= 5), "mask_mod", """
  %v0 = arith.constant true
  %v1 = arith.constant 5 : index
  %v2 = arith.cmpi sle, %kvi, %v1 : index
  %v3 = arith.andi %v0, %v2 : i1
  attn.yield %v3 : i1"""),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_each_construct_traces_to_its_region(name):
    fn, kind, expected = CONSTRUCTS[name]
    assert body(fn, kind) == ops(expected)


def test_the_block_has_the_region_arguments_and_the_captures():
    score_mod, mask_mod, added = lower(
        lambda score, b, h, q_idx, kv_idx: score + slopes[h],
        lambda b, h, q_idx, kv_idx: doc[q_idx] == doc[kv_idx])
    assert score_mod.split("\n")[0] == (
        "^bb0(%score: f32, %b: index, %h: index, %qi: index, %kvi: index, "
        "%q_len: index, %kv_len: index, %capture0: memref<?xf32>, "
        "%capture1: memref<?xi32>):")
    assert mask_mod.split("\n")[0] == (
        "^bb0(%b: index, %h: index, %qi: index, %kvi: index, "
        "%q_len: index, %kv_len: index, %capture0: memref<?xf32>, "
        "%capture1: memref<?xi32>):")
    # The mask reads its capture at its slot among the attention's.
    assert "memref.load %capture1[%kvi]" in mask_mod
    assert [(n, t, ty) for n, t, ty in added] == [
        ("slopes", slopes, "memref<?xf32>"), ("doc", doc, "memref<?xi32>")]


def test_q_len_and_kv_len_are_given_by_name():
    def from_the_end(b, h, q_idx, kv_idx, *, kv_len, q_len):
        return kv_len - kv_idx <= q_len

    assert body(from_the_end) == ops("""
  %v0 = arith.subi %kv_len, %kvi : index
  %v1 = arith.cmpi sle, %v0, %q_len : index
  attn.yield %v1 : i1""")


# Tracing never changes a kernel: a traced region compiles to the CUDA of
# the region written by hand.
def example_region(name, region):
    text = (EXAMPLES / name).read_text()
    block = re.search(region + r" \{\n(.*?)\n\s*\}\n", text, re.S)
    return block.group(1)


HAND_WRITTEN = {
    "document mask (examples/document_mask.mlir)": (
        dict(causal=True, capture_types=["memref<?x?xi32>"],
             mask_mod=example_region("document_mask.mlir", "mask_mod")),
        dict(causal=True, mask_mod=lambda b, h, q_idx, kv_idx:
             doc_2d[b, q_idx] == doc_2d[b, kv_idx])),
    "ALiBi from slopes and prefix-LM": (
        dict(capture_types=["memref<?xf32>", "memref<?xi32>"], score_mod="""
        ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index,
             %q_len: index, %kv_len: index, %slopes: memref<?xf32>,
             %prefix: memref<?xi32>):
          %slope = memref.load %slopes[%h] : memref<?xf32>
          %end = arith.addi %qi, %kv_len : index
          %pos = arith.subi %end, %q_len : index
          %rel = arith.subi %kvi, %pos : index
          %wide = arith.index_cast %rel : index to i64
          %f = arith.sitofp %wide : i64 to f32
          %bias = arith.mulf %slope, %f : f32
          %y = arith.addf %s, %bias : f32
          attn.yield %y : f32""", mask_mod="""
        ^bb0(%b: index, %h: index, %qi: index, %kvi: index, %q_len: index,
             %kv_len: index, %slopes: memref<?xf32>,
             %prefix: memref<?xi32>):
          %n32 = memref.load %prefix[%b] : memref<?xi32>
          %n = arith.index_cast %n32 : i32 to index
          %in_prefix = arith.cmpi slt, %kvi, %n : index
          %end = arith.addi %qi, %kv_len : index
          %pos = arith.subi %end, %q_len : index
          %causal = arith.cmpi sge, %pos, %kvi : index
          %visible = arith.ori %in_prefix, %causal : i1
          attn.yield %visible : i1"""),
        dict(score_mod=lambda score, b, h, q_idx, kv_idx:
             score + slopes[h] * (kv_idx - q_idx),
             mask_mod=lambda b, h, q_idx, kv_idx:
             (kv_idx < prefix[b]) | (q_idx >= kv_idx))),
    "soft-cap and sliding window": (
        dict(score_mod="""
        ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index,
             %q_len: index, %kv_len: index):
          %cap = arith.constant 30.0 : f32
          %x = arith.divf %s, %cap : f32
          %t = math.tanh %x : f32
          %y = arith.mulf %cap, %t : f32
          attn.yield %y : f32""", mask_mod="""
        ^bb0(%b: index, %h: index, %qi: index, %kvi: index, %q_len: index,
             %kv_len: index):
          %end = arith.addi %qi, %kv_len : index
          %pos = arith.subi %end, %q_len : index
          %causal = arith.cmpi sge, %pos, %kvi : index
          %d = arith.subi %pos, %kvi : index
          %w = arith.constant 256 : index
          %near = arith.cmpi sle, %d, %w : index
          %visible = arith.andi %causal, %near : i1
          attn.yield %visible : i1"""),
        dict(score_mod=lambda score, b, h, q_idx, kv_idx:
             30.0 * attnc.tanh(score / 30.0),
             mask_mod=lambda b, h, q_idx, kv_idx:
             (q_idx >= kv_idx) & (q_idx - kv_idx <= 256))),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_a_traced_region_compiles_to_the_hand_written_kernel(name):
    hand, traced = HAND_WRITTEN[name]
    shape = dict(query_heads=16, kv_heads=4, head_dim=64)
    kernels = [Kernel(Variant.from_spec(**shape, **fields), arch="sm_90a",
                      cache_dir="-") for fields in (hand, traced)]
    assert kernels[0].cuda_source == kernels[1].cuda_source
    # The comparison can fail: the traced variant has its regions.
    assert "_mod(" in kernels[1].cuda_source


def test_an_infinite_constant_compiles():
    # The C++ emitter spells -inf as -INFINITY, which the device prelude
    # defines for NVRTC (it has no math.h).
    fn = CONSTRUCTS["-inf is spelled by its bits"][0]
    kernel = Kernel(Variant.from_spec(query_heads=16, kv_heads=4,
                                      head_dim=64, score_mod=fn),
                    arch="sm_90a", cache_dir="-")
    assert "INFINITY" in kernel.cuda_source


# Refusals: each names what it cannot trace and quotes the user's line.
def python_if(b, h, q_idx, kv_idx):
    if q_idx >= kv_idx:
        return True
    return False


def python_and(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx and kv_idx < 5


def list_lookup(score, b, h, q_idx, kv_idx):
    table = [1.0, 2.0]
    return score * table[h]


def python_math(score, b, h, q_idx, kv_idx):
    import math
    return math.exp(score)


def python_int(score, b, h, q_idx, kv_idx):
    return score + int(kv_idx)


int64_table = FakeTensor((4,), "torch.int64")
scalar = FakeTensor((), "torch.float32")


REFUSALS = [
    (python_if, "mask_mod", "bool() of a symbolic value",
     "if q_idx >= kv_idx:"),
    (python_and, "mask_mod", "bool() of a symbolic value",
     "return q_idx >= kv_idx and kv_idx < 5"),
    (list_lookup, "score_mod", "index() of a symbolic value",
     "return score * table[h]"),
    (python_math, "score_mod", "float() of a symbolic value",
     "return math.exp(score)"),
    (python_int, "score_mod", "int() of a symbolic value",
     "return score + int(kv_idx)"),
    (lambda score, b, h, q_idx, kv_idx: score + "x", "score_mod",
     "str value 'x': regions compute on symbolic values and Python numbers",
     None),
    (lambda score, b, h, q_idx, kv_idx: score + slopes, "score_mod",
     "captured tensor slopes used as a value", None),
    (lambda score, b, h, q_idx, kv_idx: slopes.sum(), "score_mod",
     "slopes.sum: a captured tensor is read by indexing it", None),
    (lambda score, b, h, q_idx, kv_idx: score + bias[h], "score_mod",
     "bias indexed by 1 of its 2 subscripts used as a value", None),
    (lambda score, b, h, q_idx, kv_idx: bias[h, kv_idx, 0], "score_mod",
     "3 subscripts of captured tensor bias, which has rank 2", None),
    (lambda score, b, h, q_idx, kv_idx: slopes[-1], "score_mod",
     "negative subscript -1 of slopes", None),
    (lambda score, b, h, q_idx, kv_idx: slopes[1:], "score_mod",
     "slopes indexed by slice", None),
    (lambda score, b, h, q_idx, kv_idx: slopes[score], "score_mod",
     "slopes indexed by a float", None),
    (lambda score, b, h, q_idx, kv_idx: slopes[kv_idx > 1], "score_mod",
     "slopes indexed by a boolean", None),
    (lambda score, b, h, q_idx, kv_idx: score + int64_table[h], "score_mod",
     "captured tensor int64_table is int64: regions read int32 or float32",
     None),
    (lambda score, b, h, q_idx, kv_idx: score + scalar[0], "score_mod",
     "captured tensor scalar has rank 0", None),
    (lambda b, h, q_idx, kv_idx: kv_idx // 0 == 1, "mask_mod",
     "integer division by the constant 0", None),
    (lambda b, h, q_idx, kv_idx: kv_idx % 0 == 1, "mask_mod",
     "integer division by the constant 0", None),
    (lambda b, h, q_idx, kv_idx: -(q_idx > kv_idx), "mask_mod",
     "`-` on a boolean", None),
    (lambda score, b, h, q_idx, kv_idx: ~score, "score_mod",
     "`~` on a float", None),
    (lambda score, b, h, q_idx, kv_idx: score & 1, "score_mod",
     "`&` on a float", None),
    (lambda score, b, h, q_idx, kv_idx: score << 1, "score_mod",
     "a shift of a float", None),
    (lambda score, b, h, q_idx, kv_idx: score * 2 ** kv_idx, "score_mod",
     "an integer to a symbolic or negative power", None),
    (lambda score, b, h, q_idx, kv_idx: attnc.where(h, score, 0.0),
     "score_mod", "where's condition is index: it must be a boolean", None),
    (lambda b, h, q_idx, kv_idx: b.new_ones((2,)) > 0, "mask_mod",
     "new tensor of shape (2,)", None),
    (lambda b, h, q_idx, kv_idx: kv_idx > 2 ** 70, "mask_mod",
     "constant 1180591620717411303424 does not fit index", None),
    (lambda score, b, h, q_idx, kv_idx: attnc.clamp(score), "score_mod",
     "clamp needs min or max", None),
    (lambda score, b, h, q_idx, kv_idx: score.to("torch.float16"),
     "score_mod", "dtype float16: regions compute on float32, int32, int64 "
     "and bool", None),
]


@pytest.mark.parametrize("fn, kind, reason, line", REFUSALS,
                         ids=[r[2][:40] for r in REFUSALS])
def test_what_cannot_be_traced_is_refused_at_its_line(fn, kind, reason,
                                                      line):
    with pytest.raises(TraceError) as error:
        body(fn, kind)
    assert reason in error.value.reason
    assert error.value.filename == __file__
    # A lambda's line is the one that defines it, in the table above.
    if line is not None:
        assert error.value.line == line
    assert error.value.lineno and error.value.line in str(error.value)


RESULT_REFUSALS = [
    (lambda b, h, q_idx, kv_idx: q_idx - kv_idx, "mask_mod",
     "mask_mod returned an integer: it must return a boolean"),
    (lambda b, h, q_idx, kv_idx: 1.0, "mask_mod",
     "mask_mod returned a float: it must return a boolean"),
    (lambda score, b, h, q_idx, kv_idx: score > 0, "score_mod",
     "score_mod returned a boolean"),
    (lambda score, b, h, q_idx, kv_idx: None, "score_mod",
     "score_mod returned NoneType: it must return one value"),
    (lambda score, b, h, q_idx: score, "score_mod",
     "score_mod must take FlexAttention's arguments (score, b, h, q_idx, "
     "kv_idx)"),
    (lambda b, h, q_idx, kv_idx, extra: True, "mask_mod",
     "mask_mod must take FlexAttention's arguments (b, h, q_idx, kv_idx) "
     "and optionally q_len and kv_len by name"),
]


@pytest.mark.parametrize("fn, kind, reason", RESULT_REFUSALS,
                         ids=[r[2][:40] for r in RESULT_REFUSALS])
def test_a_wrong_result_or_signature_points_at_the_function(fn, kind,
                                                            reason):
    with pytest.raises(TraceError) as error:
        body(fn, kind)
    assert reason in error.value.reason
    # The function's definition: the table's line of this lambda.
    assert error.value.filename == __file__
    assert error.value.line.startswith("(lambda")


def test_other_objects_are_refused_by_type():
    import functools
    with pytest.raises(TypeError, match="score_mod must be a str \\(a "
                       "region's MLIR\\) or a Python function, got partial"):
        lower(functools.partial(lambda s, b, h, q, k, x: s, x=1), None)
    # Neither a function nor text: the message strings always had.
    with pytest.raises(TypeError, match="^mask_mod must be a str, got int$"):
        lower(None, 5)


def test_text_beside_a_function_that_reads_unlisted_tensors_is_refused():
    text = CONSTRUCTS["causal"]  # any region text will do
    with pytest.raises(ValueError, match="mask_mod is MLIR text, so its "
                       "block arguments name every capture: list the "
                       "tensors the traced function reads \\(slopes\\)"):
        lower(lambda score, b, h, q_idx, kv_idx: score + slopes[h],
              "^bb0(%b: index):\n  attn.yield %t : i1")
    del text


# The trace cache.
@pytest.fixture
def traces(monkeypatch):
    """The number of traces run since the fixture was made."""
    count = [0]
    trace = regions._trace

    def counted(kind, fn):
        count[0] += 1
        return trace(kind, fn)

    monkeypatch.setattr(regions, "_trace", counted)
    regions.clear_cache()
    return count


def test_a_second_call_does_no_tracing(traces):
    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    first = lower(alibi, None)
    assert traces[0] == 1
    assert lower(alibi, None) == first
    assert traces[0] == 1


def test_the_same_lambda_made_again_is_not_traced_again(traces):
    texts = {lower(None, lambda b, h, q_idx, kv_idx: q_idx >= kv_idx)[1]
             for _ in range(3)}
    assert len(texts) == 1 and traces[0] == 1


def window_mask(width):
    return lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & \
        (q_idx - kv_idx <= width)


def test_a_different_closure_value_is_traced_again(traces):
    narrow, wide = lower(None, window_mask(64))[1], \
        lower(None, window_mask(256))[1]
    assert traces[0] == 2
    assert "constant 64 : index" in narrow and "constant 256" in wide
    lower(None, window_mask(64))
    assert traces[0] == 2


def tensor_mask(ids):
    return lambda b, h, q_idx, kv_idx: ids[q_idx] == ids[kv_idx]


def test_a_new_tensor_of_the_same_kind_reuses_the_trace(traces):
    # A new batch's document ids: same trace, the new tensor captured.
    one = FakeTensor((100,), "torch.int32")
    other = FakeTensor((300,), "torch.int32")
    text_one, added_one = lower(None, tensor_mask(one))[1:]
    text_other, added_other = lower(None, tensor_mask(other))[1:]
    assert traces[0] == 1 and text_one == text_other
    assert added_one[0][1] is one and added_other[0][1] is other
    # Another dtype is another region.
    floats = lower(None, tensor_mask(FakeTensor((100,), "torch.float32")))
    assert traces[0] == 2 and "cmpf oeq" in floats[1]
    # Another rank too: the 1-D trace would read a 2-D tensor wrong.
    with pytest.raises(TraceError, match="ids indexed by 1 of its 2"):
        lower(None, tensor_mask(FakeTensor((4, 100), "torch.int32")))


def test_a_trace_that_read_a_shape_is_redone_for_another(traces):
    def clamped(table):
        def score_mod(score, b, h, q_idx, kv_idx):
            last = table.shape[0] - 1
            return score + table[min(abs(q_idx - kv_idx), last)]
        return score_mod

    short = lower(clamped(FakeTensor((8,), "torch.float32")), None)[0]
    long = lower(clamped(FakeTensor((64,), "torch.float32")), None)[0]
    assert traces[0] == 2
    assert "constant 7 : index" in short and "constant 63 : index" in long
    lower(clamped(FakeTensor((64,), "torch.float32")), None)
    assert traces[0] == 2


def test_the_cache_keeps_no_tensor_and_no_object_alive(traces):
    import gc
    import weakref
    ids = FakeTensor((100,), "torch.int32")
    owner = Module()
    lower(owner.score_mod, tensor_mask(ids))
    assert traces[0] == 2
    gone = [weakref.ref(ids), weakref.ref(owner)]
    del ids, owner
    gc.collect()
    assert [ref() for ref in gone] == [None, None]


# Captures found without being listed.
def reads_a_global(score, b, h, q_idx, kv_idx):
    return score + slopes[h]


def helper_reading_a_global(h):
    return slopes[h]


def test_captures_come_from_globals_closures_defaults_and_helpers():
    table = FakeTensor((16,), "torch.float32")

    def closure(score, b, h, q_idx, kv_idx):
        return score + table[h]

    def default(score, b, h, q_idx, kv_idx, t=table):
        return score + t[h]

    def helper(score, b, h, q_idx, kv_idx):
        return score + helper_reading_a_global(h)

    for fn, tensor in ((reads_a_global, slopes), (closure, table),
                       (default, table), (helper, slopes)):
        added = lower(fn, None)[2]
        assert [t for _, t, _ in added] == [tensor], fn.__name__


def test_masks_combined_in_a_closure_bring_their_captures():
    # FlexAttention's and_masks: the masks are in its closure.
    def and_masks(*masks):
        def combined(b, h, q_idx, kv_idx):
            result = b.new_ones((), dtype="torch.bool")
            for mask in masks:
                result = result & mask(b, h, q_idx, kv_idx)
            return result
        return combined

    causal = CONSTRUCTS["causal"][0]
    documents = tensor_mask(doc)
    text, added = lower(None, and_masks(causal, documents))[1:]
    assert [t for _, t, _ in added] == [doc]
    assert "memref.load %capture0[%kvi] : memref<?xi32>" in text


class Module:
    def __init__(self):
        self.scale = 2.0

    def score_mod(self, score, b, h, q_idx, kv_idx):
        return score * self.scale + slopes[h]


def test_a_bound_method_traces_with_its_object():
    text, _, added = lower(Module().score_mod, None)
    assert "arith.constant 2.000000000e+00 : f32" in text
    assert [t for _, t, _ in added] == [slopes]


def test_listed_captures_keep_their_slots():
    other = FakeTensor((5,), "torch.float32")
    score_mod, mask_mod, added = lower(
        lambda score, b, h, q_idx, kv_idx: score + slopes[h],
        lambda b, h, q_idx, kv_idx: doc[kv_idx] > 0,
        [other, slopes], ["memref<?xf32>", "memref<?xf32>"])
    assert "memref.load %capture1[%h]" in score_mod
    assert "memref.load %capture2[%kvi]" in mask_mod
    assert "%capture2: memref<?xi32>" in score_mod
    assert [t for _, t, _ in added] == [doc]


def test_a_spec_with_functions_lists_the_tensors_they_read():
    variant = Variant.from_spec(
        query_heads=16, kv_heads=4, head_dim=64,
        capture_types=["memref<?xf32>"], score_mod="""
        ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index,
             %q_len: index, %kv_len: index, %t: memref<?xf32>):
          attn.yield %s : f32""")
    assert variant.captures == ()
    variant = Variant.from_spec(
        query_heads=16, kv_heads=4, head_dim=64,
        mask_mod=lambda b, h, q_idx, kv_idx: doc[q_idx] == doc[kv_idx])
    assert variant.captures == (doc,)
    assert "captures(%attnc_capture0 : memref<?xi32>)" in variant.mlir


def test_attention_checks_the_tensors_a_function_reads():
    on_cpu = FakeTensor((64,), "torch.int32", device="cpu")
    q = FakeTensor((2, 16, 8, 64))
    k = FakeTensor((2, 16, 2, 64))
    with pytest.raises(ValueError, match="on_cpu \\(read by a traced mod\\) "
                       "must be on a CUDA device"):
        attnc.attention(q, k, k, layout="bshd",
                        mask_mod=lambda b, h, q_idx, kv_idx:
                        on_cpu[q_idx] == on_cpu[kv_idx])
    with pytest.raises(TraceError, match="bool\\(\\) of a symbolic value"):
        attnc.attention(q, k, k, layout="bshd", mask_mod=python_if)


# With torch (CPU is enough; marked gpu so that the GPU machine, which has
# torch, runs them: CI has none).
@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch is not installed")


@pytest.mark.gpu
def test_torch_functions_trace_without_torch_compile(torch):
    table = torch.zeros(16, 64)

    def score_mod(score, b, h, q_idx, kv_idx):
        bucket = torch.clamp(torch.abs(q_idx - kv_idx), max=63)
        capped = 30 * torch.tanh(score / 30)
        return torch.where(q_idx >= kv_idx, capped + table[h, bucket],
                           -float("inf")) + torch.sigmoid(score) + \
            torch.maximum(score, torch.exp2(score))

    text = body(score_mod, "score_mod")
    for op in ("math.absi", "arith.minsi", "math.tanh", "memref.load",
               "arith.select", "math.exp", "math.exp2", "arith.maximumf"):
        assert op in text, op


@pytest.mark.gpu
def test_flex_attentions_and_masks_is_traced(torch):
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    ids = torch.zeros(64, dtype=torch.int32)

    def documents(b, h, q_idx, kv_idx):
        return ids[q_idx] == ids[kv_idx]

    mask = flex.and_masks(lambda b, h, q, k: q >= k, documents)
    text, added = lower(None, mask)[1:]
    assert [t for _, t, _ in added] == [ids]
    assert "arith.cmpi eq" in text and "arith.cmpi sge" in text


class Holder:
    pass


@pytest.mark.gpu
def test_torch_refusals_name_the_function(torch):
    holder = Holder()
    holder.bias = torch.zeros(16)
    with pytest.raises(TraceError, match="a torch tensor used with a "
                       "symbolic value") as error:
        body(lambda score, b, h, q_idx, kv_idx: score + holder.bias[h],
             "score_mod")
    assert error.value.filename == __file__
    with pytest.raises(TraceError, match="torch.cumsum is not traced"):
        body(lambda score, b, h, q_idx, kv_idx: torch.cumsum(score, 0),
             "score_mod")
