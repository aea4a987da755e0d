// Decode step of a Llama-3-8B-style model: one new query token per request,
// 32 query heads sharing 8 key/value heads (GQA, group 4), head dim 128,
// keys and values in a paged cache of 16-token pages.
func.func @gqa_paged_decode(
    %q: !attn.q<1x32x128xbf16>,
    %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
    %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>)
    -> (!attn.out<1x32x128xbf16>, !attn.lse<1x32>) {
  %out, %lse = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>,
        !attn.kv<?x8x128xbf16, paged<16, nhd>>,
        !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<1x32x128xbf16>, !attn.lse<1x32>
  return %out, %lse : !attn.out<1x32x128xbf16>, !attn.lse<1x32>
}
