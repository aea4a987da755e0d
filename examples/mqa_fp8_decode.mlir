// Multi-query decode over an fp8 (e4m3) KV cache in HND page order: every
// query head reads the single KV head. The cache holds k / k_scale and
// v / v_scale; the scales are read at run time (one f32 each here, per
// tensor), and the keys and values widen exactly to f16 on load.
func.func @mqa_fp8_decode(
    %q: !attn.q<1x16x128xbf16>,
    %k: !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>,
    %v: !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>,
    %k_scale: memref<1xf32>, %v_scale: memref<1xf32>)
    -> !attn.out<1x16x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      kv_scales(%k_scale, %v_scale : memref<1xf32>, memref<1xf32>)
      : !attn.q<1x16x128xbf16>,
        !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>,
        !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>
      -> !attn.out<1x16x128xbf16>
  return %out : !attn.out<1x16x128xbf16>
}
