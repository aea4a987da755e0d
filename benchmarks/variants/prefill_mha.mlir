// P2's variant: non-causal prefill, 32 heads (MHA), d128.
func.func @prefill_mha(
    %q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x32x128xbf16>,
    %v: !attn.kv<?x32x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x32x128xbf16>, !attn.kv<?x32x128xbf16>, !attn.kv<?x32x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}
