// RUN: attn-opt %examples/merge_states.mlir | attn-opt | FileCheck %s

// The hand-written cascade example round-trips.
// CHECK-LABEL: func.func @cascade_decode
// CHECK: %[[O0:.+]], %[[L0:.+]] = attn.attention
// CHECK: %[[O1:.+]], %[[L1:.+]] = attn.attention
// CHECK: attn.merge_states (%[[O0]], %[[L0]]), (%[[O1]], %[[L1]]) : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
