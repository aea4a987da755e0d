// StreamingLLM-style attention: each query sees the 1024 keys before it and
// the first 4 tokens of its request (attention sinks), causal.
func.func @sliding_window_sinks(
    %q: !attn.q<?x32x128xbf16>,
    %k: !attn.kv<?x8x128xbf16>,
    %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      {causal, window = #attn.window<1024, 0>, sinks = 4}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}
