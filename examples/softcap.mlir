// Gemma-2-style logit soft-capping: scores pass through 50 * tanh(s / 50)
// before the softmax; head dim 256, GQA 16/8, causal.
func.func @softcap(
    %q: !attn.q<?x16x256xbf16, ragged>,
    %k: !attn.kv<?x8x256xbf16, ragged>,
    %v: !attn.kv<?x8x256xbf16, ragged>) -> !attn.out<?x16x256xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal, softcap = 50.0 : f32}
      : !attn.q<?x16x256xbf16, ragged>,
        !attn.kv<?x8x256xbf16, ragged>,
        !attn.kv<?x8x256xbf16, ragged>
      -> !attn.out<?x16x256xbf16, ragged>
  return %out : !attn.out<?x16x256xbf16, ragged>
}
