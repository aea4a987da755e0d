// P1's variant: causal prefill, 32 query heads over 8 KV heads, d128.
func.func @prefill_gqa_causal(
    %q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
    %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}
