// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// No mask and no modifier: full bidirectional attention with the default
// scale, printed without attributes.
// CHECK-LABEL: func.func @full_attention
// CHECK: attn.attention(%{{[^)]*}}) : !attn.q<?x16x128xf16>
func.func @full_attention(%q: !attn.q<?x16x128xf16>, %k: !attn.kv<?x16x128xf16>,
                          %v: !attn.kv<?x16x128xf16>) -> !attn.out<?x16x128xf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x16x128xf16>, !attn.kv<?x16x128xf16>, !attn.kv<?x16x128xf16>
      -> !attn.out<?x16x128xf16>
  return %out : !attn.out<?x16x128xf16>
}
