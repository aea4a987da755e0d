// P1's variant through a paged KV cache of 16-slot pages (chunked prefill
// as vLLM's block tables hold it).
func.func @prefill_gqa_causal_paged16(
    %q: !attn.q<?x32x128xbf16, ragged>,
    %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
    %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>)
    -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, paged<16, nhd>>,
        !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}
