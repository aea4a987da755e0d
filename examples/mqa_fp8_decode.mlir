// Multi-query decode over an fp8 (e4m3) KV cache in HND page order: every
// query head reads the single KV head; keys widen to bf16 on load.
func.func @mqa_fp8_decode(
    %q: !attn.q<1x16x128xbf16>,
    %k: !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>,
    %v: !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>) -> !attn.out<1x16x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x16x128xbf16>,
        !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>,
        !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>
      -> !attn.out<1x16x128xbf16>
  return %out : !attn.out<1x16x128xbf16>
}
