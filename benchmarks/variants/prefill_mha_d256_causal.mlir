// P7b's variant: causal prefill, 16 heads (MHA), d256.
func.func @prefill_mha_d256_causal(
    %q: !attn.q<?x16x256xbf16>, %k: !attn.kv<?x16x256xbf16>,
    %v: !attn.kv<?x16x256xbf16>) -> !attn.out<?x16x256xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x256xbf16>, !attn.kv<?x16x256xbf16>, !attn.kv<?x16x256xbf16>
      -> !attn.out<?x16x256xbf16>
  return %out : !attn.out<?x16x256xbf16>
}
