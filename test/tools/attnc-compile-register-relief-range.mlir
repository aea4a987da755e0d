// RUN: not attnc compile %s --register-relief 3 2>&1 | FileCheck %s

// The CLI's register-relief knob takes 0 to 2: anything else is refused by
// name before anything is compiled (exit 2).
// CHECK: --register-relief: Value 3 not in range 0 to 2
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>)
    -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}
