// D12's variant: one query per request, 32 query heads over 8 KV heads,
// d128, a window of 4096 keys with 4 sinks.
func.func @decode_gqa_window_sinks(
    %q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
    %v: !attn.kv<?x8x128xbf16>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      {causal, window = #attn.window<4096, 0>, sinks = 4}
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}
