// BLOOM-style ALiBi: a per-head linear bias slope_h * (j - p) on the scores,
// with the standard geometric slopes, causal multi-head attention in f16.
func.func @alibi(
    %q: !attn.q<?x32x128xf16>,
    %k: !attn.kv<?x32x128xf16>,
    %v: !attn.kv<?x32x128xf16>) -> !attn.out<?x32x128xf16> {
  %out = attn.attention(%q, %k, %v) {alibi, causal}
      : !attn.q<?x32x128xf16>, !attn.kv<?x32x128xf16>, !attn.kv<?x32x128xf16>
      -> !attn.out<?x32x128xf16>
  return %out : !attn.out<?x32x128xf16>
}
