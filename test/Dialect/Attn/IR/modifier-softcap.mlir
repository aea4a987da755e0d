// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Tanh soft-capping of the scores at 30 (Grok) with a causal mask.
// CHECK-LABEL: func.func @softcap
// CHECK: {causal, softcap = 3.000000e+01 : f32}
func.func @softcap(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal, softcap = 30.0 : f32}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}
