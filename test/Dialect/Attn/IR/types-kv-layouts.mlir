// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Dense keys with a static length, and ragged keys.
// CHECK-LABEL: func.func @dense_and_ragged
// CHECK-SAME: !attn.kv<4096x8x128xbf16>
// CHECK-SAME: !attn.kv<?x8x128xbf16, ragged>
func.func @dense_and_ragged(%a: !attn.kv<4096x8x128xbf16>,
                            %b: !attn.kv<?x8x128xbf16, ragged>) {
  return
}
