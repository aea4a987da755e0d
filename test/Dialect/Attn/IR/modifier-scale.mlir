// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// An explicit scale replaces 1/sqrt(head_dim).
// CHECK-LABEL: func.func @scale
// CHECK: {scale = 1.250000e-01 : f32}
func.func @scale(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {scale = 0.125 : f32}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return
}
