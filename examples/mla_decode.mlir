// DeepSeek-V3 multi-head latent attention, absorbed-weight decode: 128 query
// heads read one shared paged cache of 512 latent + 64 rope dims per token;
// the value is the latent part of the same cache. The scale is the model's
// 1/sqrt(128 + 64), not derived from the absorbed query width.
func.func @mla_decode(
    %q: !attn.q<1x128x576xbf16>,
    %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> (!attn.out<1x128x512xbf16>, !attn.lse<1x128>) {
  %out, %lse = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>,
        !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>
      -> !attn.out<1x128x512xbf16>, !attn.lse<1x128>
  return %out, %lse : !attn.out<1x128x512xbf16>, !attn.lse<1x128>
}
