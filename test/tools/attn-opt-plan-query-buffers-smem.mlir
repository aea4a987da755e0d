// RUN: attn-opt %s -attn-plan="query-buffers=2" -verify-diagnostics

// A second query tile forced where it does not fit (head dim 256: two
// stages of 80-key tiles and four 32 KiB query tiles) is refused by its
// shared memory, not quietly dropped.
func.func @f(%q: !attn.q<?x8x256xbf16>, %k: !attn.kv<?x8x256xbf16>, %v: !attn.kv<?x8x256xbf16>)
    -> !attn.out<?x8x256xbf16> {
  // expected-error @below {{needs more shared memory than the target's 232448 bytes}}
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x256xbf16>, !attn.kv<?x8x256xbf16>, !attn.kv<?x8x256xbf16> -> !attn.out<?x8x256xbf16>
  return %out : !attn.out<?x8x256xbf16>
}
