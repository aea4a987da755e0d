// DeepSeek-V3 MLA decode (absorbed weights) with 16 query heads over a
// paged latent cache of 64-slot pages: 512 latent + 64 rope dims per token.
func.func @mla_decode_h16(
    %q: !attn.q<1x16x576xbf16>,
    %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> (!attn.out<1x16x512xbf16>, !attn.lse<1x16>) {
  %out, %lse = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x16x576xbf16>,
        !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>
      -> !attn.out<1x16x512xbf16>, !attn.lse<1x16>
  return %out, %lse : !attn.out<1x16x512xbf16>, !attn.lse<1x16>
}
