// RUN: attn-opt %examples/custom_score_mod.mlir | attn-opt | FileCheck %s

// The relative-bias score_mod example round-trips with its capture.
// CHECK-LABEL: func.func @relative_bias
// CHECK: captures(%[[TABLE:.+]] : memref<16x64xf32>)
// CHECK: score_mod {
// CHECK: %[[BIAS:.+]] = memref.load %{{.+}}[%{{.+}}, %{{.+}}] : memref<16x64xf32>
// CHECK: %[[R:.+]] = arith.addf %{{.+}}, %[[BIAS]] : f32
// CHECK: attn.yield %[[R]] : f32
