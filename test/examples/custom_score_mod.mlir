// RUN: attn-opt %examples/custom_score_mod.mlir | attn-opt | FileCheck %s

// The relative-bias score_mod example round-trips with its capture, and
// measures distance from the query's aligned position qi + kv_len - q_len,
// which chunked prefill and decode need.
// CHECK-LABEL: func.func @relative_bias
// CHECK: captures(%[[TABLE:.+]] : memref<16x64xf32>)
// CHECK: score_mod {
// CHECK: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %[[H:.+]]: index, %[[QI:.+]]: index, %[[KVI:.+]]: index, %[[QLEN:.+]]: index, %[[KVLEN:.+]]: index, %[[T:.+]]: memref<16x64xf32>):
// CHECK: %[[END:.+]] = arith.addi %[[QI]], %[[KVLEN]] : index
// CHECK: %[[POS:.+]] = arith.subi %[[END]], %[[QLEN]] : index
// CHECK: %[[REL:.+]] = arith.subi %[[POS]], %[[KVI]] : index
// CHECK: %[[DIST:.+]] = math.absi %[[REL]] : index
// CHECK: %[[BUCKET:.+]] = arith.minui %[[DIST]], %{{.+}} : index
// CHECK: %[[BIAS:.+]] = memref.load %[[T]][%[[H]], %[[BUCKET]]] : memref<16x64xf32>
// CHECK: %[[R:.+]] = arith.addf %[[S]], %[[BIAS]] : f32
// CHECK: attn.yield %[[R]] : f32
