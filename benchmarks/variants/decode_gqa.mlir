// D1's variant: one query per request, 32 query heads over 8 KV heads, d128.
func.func @decode_gqa(
    %q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
    %v: !attn.kv<?x8x128xbf16>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}
