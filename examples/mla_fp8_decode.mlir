// DeepSeek-V3 multi-head latent attention over an fp8 (e4m3) latent cache,
// as serving engines keep it: the cache holds latent / scale, and the scale
// dequantizes the keys and the values alike (they are the same bytes), so
// the one tensor is passed as both. The producer widens the rows into the
// 16-bit tiles the bf16 cache's kernel reads.
func.func @mla_fp8_decode(
    %q: !attn.q<1x128x576xbf16>,
    %kv: !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>>,
    %k_scale: memref<1xf32>, %v_scale: memref<1xf32>)
    -> (!attn.out<1x128x512xbf16>, !attn.lse<1x128>) {
  %out, %lse = attn.attention(%q, %kv)
      kv_scales(%k_scale, %v_scale : memref<1xf32>, memref<1xf32>)
      {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>,
        !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>>
      -> !attn.out<1x128x512xbf16>, !attn.lse<1x128>
  return %out, %lse : !attn.out<1x128x512xbf16>, !attn.lse<1x128>
}
