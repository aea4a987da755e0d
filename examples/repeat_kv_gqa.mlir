// Grouped-query attention written the way reference model code does it:
// key/value heads repeated up to the query head count. attn-canonicalize
// reads the 4 KV heads grouped instead of copying them 7 times.
func.func @repeat_kv_gqa(
    %q: !attn.q<?x28x128xbf16, ragged>,
    %k: !attn.kv<?x4x128xbf16, ragged>,
    %v: !attn.kv<?x4x128xbf16, ragged>) -> !attn.out<?x28x128xbf16, ragged> {
  %k28 = attn.repeat_kv %k by 7
      : !attn.kv<?x4x128xbf16, ragged> -> !attn.kv<?x28x128xbf16, ragged>
  %v28 = attn.repeat_kv %v by 7
      : !attn.kv<?x4x128xbf16, ragged> -> !attn.kv<?x28x128xbf16, ragged>
  %out = attn.attention(%q, %k28, %v28) {causal}
      : !attn.q<?x28x128xbf16, ragged>,
        !attn.kv<?x28x128xbf16, ragged>,
        !attn.kv<?x28x128xbf16, ragged>
      -> !attn.out<?x28x128xbf16, ragged>
  return %out : !attn.out<?x28x128xbf16, ragged>
}
