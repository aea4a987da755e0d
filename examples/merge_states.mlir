// Cascade decode by hand: attention over a prefix shared by the whole batch
// and over each request's own suffix, merged into one state. attnc's
// split-KV and cascade passes produce this shape themselves.
func.func @cascade_decode(
    %q: !attn.q<1x32x128xbf16>,
    %prefix_k: !attn.kv<?x8x128xbf16>, %prefix_v: !attn.kv<?x8x128xbf16>,
    %suffix_k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
    %suffix_v: !attn.kv<?x8x128xbf16, paged<16, nhd>>)
    -> (!attn.out<1x32x128xbf16>, !attn.lse<1x32>) {
  %o0, %l0 = attn.attention(%q, %prefix_k, %prefix_v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xf32>, !attn.lse<1x32>
  %o1, %l1 = attn.attention(%q, %suffix_k, %suffix_v)
      : !attn.q<1x32x128xbf16>,
        !attn.kv<?x8x128xbf16, paged<16, nhd>>,
        !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<1x32x128xf32>, !attn.lse<1x32>
  %out, %lse = attn.merge_states (%o0, %l0), (%o1, %l1)
      : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
  return %out, %lse : !attn.out<1x32x128xbf16>, !attn.lse<1x32>
}
