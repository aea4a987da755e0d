// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Outputs in every element type, f32 for partial states, and their LSEs.
// CHECK-LABEL: func.func @outputs
// CHECK-SAME: !attn.out<1x32x128xbf16>
// CHECK-SAME: !attn.out<?x32x128xf16, ragged>
// CHECK-SAME: !attn.out<1x32x128xf32>
// CHECK-SAME: !attn.lse<1x32>
// CHECK-SAME: !attn.lse<?x32, ragged>
func.func @outputs(%a: !attn.out<1x32x128xbf16>, %b: !attn.out<?x32x128xf16, ragged>,
                   %c: !attn.out<1x32x128xf32>, %d: !attn.lse<1x32>,
                   %e: !attn.lse<?x32, ragged>) {
  return
}
