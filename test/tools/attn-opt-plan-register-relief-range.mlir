// RUN: not attn-opt %s -attn-plan="register-relief=3" 2>&1 | FileCheck %s

// Register relief has two steps (heavier score work, then narrower
// tiles): a third is refused by name.
// CHECK: attn-plan option register-relief must be in [0, 2], got 3
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>)
    -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}
