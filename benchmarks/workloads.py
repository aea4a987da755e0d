"""The benchmark's workloads (issue 4, grown by issue 12) and what each
costs: the (query, key) pairs it attends, its FLOPs and the KV bytes it
reads. Plain Python, so the counts can be checked without a GPU."""

import random


def document_lengths(total, count, seed):
    """`count` unequal document lengths adding up to `total`, fixed by a
    seeded RNG (Python's Mersenne Twister: the same on every machine)."""
    rng = random.Random(seed)
    weights = [rng.uniform(0.3, 1.7) for _ in range(count)]
    lengths = [int(total * w / sum(weights)) for w in weights]
    lengths[-1] += total - sum(lengths)
    assert min(lengths) > 0 and sum(lengths) == total
    return lengths


def alibi_slopes(heads):
    """attnc's ALiBi slopes (lib/Check/Reference.cpp, device/
    attnc/device/math.h): the ALiBi paper's geometric sequence,
    interleaved for head counts that are not powers of two. FlashInfer's
    get_alibi_slopes is the same sequence."""
    pow2 = 1
    while pow2 * 2 <= heads:
        pow2 *= 2
    return [2.0 ** (-8.0 * (h + 1) / pow2) if h < pow2
            else 2.0 ** (-4.0 * (2 * (h - pow2) + 1) / pow2)
            for h in range(heads)]


class Workload:
    """batch requests of q_len queries over kv_len keys each ([batch,
    len, heads, dim] tensors), or with `docs` one packed sequence of
    documents (batch 1, q_len == kv_len == sum(docs)), masked within each
    document. `ragged`: attnc and FlashInfer see the requests through
    index pointers over [tokens, heads, dim] (the dense peers see the
    equal-length batch). `kv_dtype` "float8_e4m3fn" or "float8_e5m2": attnc
    reads an fp8 cache (one byte per element), its peers the same values
    dequantized to bf16. `kv_lens`: a ragged decode batch, request b over
    its first kv_lens[b] keys (the tensors are padded to the longest).
    `v_dim`: the values' head dim where it is not the queries' and keys'
    (DeepSeek's non-absorbed MLA prefill: 192 and 128)."""

    def __init__(self, name, what, batch, heads, kv_heads, dim, q_len,
                 kv_len, causal=False, window=None, paged=False,
                 softcap=None, alibi=False, docs=None, ragged=False,
                 page=16, kv_dtype=None, sinks=0, kv_lens=None,
                 v_dim=None):
        self.name, self.what = name, what
        self.batch, self.heads, self.kv_heads, self.dim = (batch, heads,
                                                           kv_heads, dim)
        self.v_dim = dim if v_dim is None else v_dim
        self.q_len, self.kv_len = q_len, kv_len
        self.causal, self.window, self.paged = causal, window, paged
        self.softcap, self.alibi = softcap, alibi
        self.docs, self.ragged = docs, ragged
        self.page = page  # tokens per page of a paged (or decode) cache
        self.kv_dtype = kv_dtype
        self.sinks = sinks  # keys kept visible left of a window
        self.kv_lens = kv_lens
        if kv_lens is not None:
            assert batch == len(kv_lens) and kv_len == max(kv_lens)
        if docs is not None:
            assert batch == 1 and q_len == kv_len == sum(docs)

    @property
    def decode(self):
        return self.q_len == 1

    @property
    def ragged_layout(self):
        """attnc and FlashInfer take index pointers, not a dense batch."""
        return self.ragged or self.docs is not None

    def request_lengths(self):
        """(query lengths, key lengths) of the requests attnc and FlashInfer
        see in the ragged layout: one request per document."""
        if self.docs is not None:
            return list(self.docs), list(self.docs)
        if self.kv_lens is not None:
            return [self.q_len] * self.batch, list(self.kv_lens)
        return [self.q_len] * self.batch, [self.kv_len] * self.batch

    def _pairs(self, q_len, kv_len):
        """(query, key) pairs of one request, bottom-right aligned."""
        if not self.causal and self.window is None:
            return q_len * kv_len
        total = 0
        offset = kv_len - q_len
        for i in range(q_len):
            hi = i + offset  # last visible key
            lo = 0 if self.window is None else max(0, hi - self.window)
            total += hi - lo + 1 + min(self.sinks, lo)
        return total

    def visible_pairs(self):
        """(query, key) pairs attended per batch entry and head: only pairs
        the masks let through count (a document sees only itself)."""
        if self.docs is not None:
            return sum(self._pairs(n, n) for n in self.docs)
        return self._pairs(self.q_len, self.kv_len)

    def flops(self):
        return (2 * self.batch * self.heads * (self.dim + self.v_dim) *
                self.visible_pairs())

    def kv_bytes(self):
        """Bytes of the keys and values a decode step must read: the
        visible ones (fp8: one byte per element)."""
        element = 1 if self.kv_dtype else 2
        lens = self.request_lengths()[1]
        keys = sum(self._pairs(1, n) if self.decode else n for n in lens)
        return keys * self.kv_heads * (self.dim + self.v_dim) * element


P6_DOCS = document_lengths(16384, 8, seed=6)


def ragged_lengths(count, longest, seed):
    """`count` request lengths spread log-uniformly over 1..`longest`, the
    longest included, fixed by a seeded RNG."""
    rng = random.Random(seed)
    lengths = [max(1, int(2 ** rng.uniform(0, longest.bit_length() - 1)))
               for _ in range(count - 1)]
    return lengths + [longest]


D13_LENS = ragged_lengths(32, 32768, seed=13)

WORKLOADS = [
    Workload("P1", "causal prefill GQA 32/8 d128, 2x8192", 2, 32, 8, 128,
             8192, 8192, causal=True),
    Workload("P2", "non-causal MHA 32 d128, 2x4096", 2, 32, 32, 128, 4096,
             4096),
    Workload("P3", "causal sliding window 1024, P1 shapes", 2, 32, 8, 128,
             8192, 8192, causal=True, window=1024),
    Workload("P4", "causal soft-cap 30, P1 shapes", 2, 32, 8, 128, 8192,
             8192, causal=True, softcap=30.0),
    Workload("P5", "causal ALiBi, P1 shapes", 2, 32, 8, 128, 8192, 8192,
             causal=True, alibi=True),
    Workload("P6", "8 packed documents, causal within each, GQA 32/8 d128, "
             "16384 tokens", 1, 32, 8, 128, 16384, 16384, causal=True,
             docs=P6_DOCS),
    Workload("P7a", "causal MHA 64 heads d64, 2x8192", 2, 64, 64, 64, 8192,
             8192, causal=True),
    Workload("P7b", "causal MHA 16 heads d256, 2x8192", 2, 16, 16, 256, 8192,
             8192, causal=True),
    Workload("P8", "16 short requests, causal GQA 32/8 d128, 16x512 "
             "(ragged)", 16, 32, 8, 128, 512, 512, causal=True, ragged=True),
    # DeepSeek-V3's MLA prefill in the non-absorbed form (issue 15): plain
    # attention over 128 heads with qk 192 (128 + 64 rope) and v 128.
    Workload("P9", "causal MHA 128 heads qk 192 / v 128 (MLA prefill, "
             "non-absorbed), 1x8192", 1, 128, 128, 192, 8192, 8192,
             causal=True, v_dim=128),
    Workload("D1", "decode 32/8 d128, 64 x 4096", 64, 32, 8, 128, 1, 4096),
    Workload("D2", "decode 32/8 d128, 8 x 32768", 8, 32, 8, 128, 1, 32768),
    Workload("D3", "decode 28/4 d128, 64 x 4096", 64, 28, 4, 128, 1, 4096),
    Workload("D4", "D1 through a paged cache, page 16, shuffled", 64, 32, 8,
             128, 1, 4096, paged=True),
    Workload("D5", "decode 32/8 d128, 1 x 32768", 1, 32, 8, 128, 1, 32768),
    Workload("D6", "decode 32/8 d128, 1 x 131072", 1, 32, 8, 128, 1, 131072),
    Workload("D7", "decode 32/8 d128, 16 x 8192", 16, 32, 8, 128, 1, 8192),
    Workload("D8", "D1 through a paged cache, page 1, shuffled", 64, 32, 8,
             128, 1, 4096, paged=True, page=1),
    Workload("D9", "D1 through a paged cache, page 64, shuffled", 64, 32, 8,
             128, 1, 4096, paged=True, page=64),
    Workload("D10", "decode 32/8 d64, 64 x 4096", 64, 32, 8, 64, 1, 4096),
    Workload("D11", "decode 16/4 d256, 64 x 4096", 64, 16, 4, 256, 1, 4096),
    Workload("D12", "decode 32/8 d128, 16 x 32768, window 4096 + 4 sinks",
             16, 32, 8, 128, 1, 32768, window=4096, sinks=4),
    Workload("D13", "ragged decode 32/8 d128, 32 requests of 1 to 32768 "
             "keys (log-uniform), page 16, shuffled", 32, 32, 8, 128, 1,
             32768, paged=True, kv_lens=D13_LENS),
    # fp8 twins of D1, D2 and D4 (issue 13): attnc over an e4m3 cache with
    # per-tensor scales, the peers over the same values in bf16.
    Workload("D1f8", "D1 over an fp8 (e4m3) cache", 64, 32, 8, 128, 1, 4096,
             kv_dtype="float8_e4m3fn"),
    Workload("D2f8", "D2 over an fp8 (e4m3) cache", 8, 32, 8, 128, 1, 32768,
             kv_dtype="float8_e4m3fn"),
    Workload("D4f8", "D4 over an fp8 (e4m3) cache, page 16, shuffled", 64,
             32, 8, 128, 1, 4096, paged=True, kv_dtype="float8_e4m3fn"),
]
