// RUN: not attn-opt %s -attn-plan="query-buffers=3" 2>&1 | FileCheck %s

// The query tiles per consumer of the warp-specialized schedule are a
// tuning knob with a range: one, or two that items take in turns.
// CHECK: attn-plan option query-buffers must be in [0, 2], got 3
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>)
    -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}
