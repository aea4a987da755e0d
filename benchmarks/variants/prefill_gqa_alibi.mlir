// P5's variant: causal ALiBi, GQA 32/8, d128.
func.func @prefill_gqa_alibi(
    %q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
    %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) {alibi, causal}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}
