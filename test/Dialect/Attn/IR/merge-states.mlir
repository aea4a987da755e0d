// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Three partial f32 states merged into one bf16 output.
// CHECK-LABEL: func.func @merge_three
// CHECK-SAME: (%[[O0:[^:]+]]: !attn.out<1x32x128xf32>, %[[L0:[^:]+]]: !attn.lse<1x32>, %[[O1:[^:]+]]: !attn.out<1x32x128xf32>, %[[L1:[^:]+]]: !attn.lse<1x32>, %[[O2:[^:]+]]: !attn.out<1x32x128xf32>, %[[L2:[^:]+]]: !attn.lse<1x32>)
// CHECK: attn.merge_states (%[[O0]], %[[L0]]), (%[[O1]], %[[L1]]), (%[[O2]], %[[L2]]) : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
func.func @merge_three(%o0: !attn.out<1x32x128xf32>, %l0: !attn.lse<1x32>,
                       %o1: !attn.out<1x32x128xf32>, %l1: !attn.lse<1x32>,
                       %o2: !attn.out<1x32x128xf32>, %l2: !attn.lse<1x32>) {
  %out, %lse = attn.merge_states (%o0, %l0), (%o1, %l1), (%o2, %l2)
      : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
  return
}
