// Prefill of a packed batch of prompts of different lengths: queries, keys
// and values are ragged (one index pointer per request), causal, GQA 32/8.
func.func @causal_ragged_prefill(
    %q: !attn.q<?x32x128xbf16, ragged>,
    %k: !attn.kv<?x8x128xbf16, ragged>,
    %v: !attn.kv<?x8x128xbf16, ragged>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>,
        !attn.kv<?x8x128xbf16, ragged>,
        !attn.kv<?x8x128xbf16, ragged>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}
