"""Python functions as score_mod and mask_mod, FlexAttention's way:

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

    out = attnc.attention(q, k, v, layout="bshd", score_mod=alibi)

The function is called once on symbolic values (trace/values.py) and what
it computes becomes the region of docs/regions.md; the tensors it reads
(slopes, from its closure, globals or defaults) become captures. Math on
symbolic values works with torch's functions (torch.where, torch.exp...)
and, without torch, with these (attnc.where, attnc.exp...)."""

from .errors import TraceError
from .regions import clear_cache, lower
from .values import abs_ as abs
from .values import ceil, clamp, exp, exp2, floor, log, log2, maximum, \
    minimum, rsqrt, sigmoid, sqrt, tanh, where

MATH = ["abs", "ceil", "clamp", "exp", "exp2", "floor", "log", "log2",
        "maximum", "minimum", "rsqrt", "sigmoid", "sqrt", "tanh", "where"]
__all__ = ["TraceError", "clear_cache", "lower"] + MATH
