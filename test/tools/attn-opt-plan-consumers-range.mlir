// RUN: not attn-opt %s -attn-plan="consumers=4" 2>&1 | FileCheck %s

// The consumer count of the warp-specialized schedule is a tuning knob with
// a range: a CTA holds a producer and at most three consumer warpgroups.
// CHECK: attn-plan option consumers must be in [0, 3], got 4
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>)
    -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}
