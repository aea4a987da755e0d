// P7a's variant: causal prefill, 64 heads (MHA), d64.
func.func @prefill_mha_d64_causal(
    %q: !attn.q<?x64x64xbf16>, %k: !attn.kv<?x64x64xbf16>,
    %v: !attn.kv<?x64x64xbf16>) -> !attn.out<?x64x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x64x64xbf16>, !attn.kv<?x64x64xbf16>, !attn.kv<?x64x64xbf16>
      -> !attn.out<?x64x64xbf16>
  return %out : !attn.out<?x64x64xbf16>
}
