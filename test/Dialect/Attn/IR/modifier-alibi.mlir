// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// ALiBi with the standard slopes.
// CHECK-LABEL: func.func @alibi
// CHECK: {alibi}
func.func @alibi(%q: !attn.q<?x8x64xf16>, %k: !attn.kv<?x8x64xf16>, %v: !attn.kv<?x8x64xf16>) {
  %out = attn.attention(%q, %k, %v) {alibi}
      : !attn.q<?x8x64xf16>, !attn.kv<?x8x64xf16>, !attn.kv<?x8x64xf16> -> !attn.out<?x8x64xf16>
  return
}
