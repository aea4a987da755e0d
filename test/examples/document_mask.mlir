// RUN: attn-opt %examples/document_mask.mlir | attn-opt | FileCheck %s

// The mask_mod document mask example round-trips; the query's document is
// read at its aligned position qi + kv_len - q_len.
// CHECK-LABEL: func.func @document_mask
// CHECK: mask_mod {
// CHECK: ^bb0(%[[B:.+]]: index, %{{.+}}: index, %[[QI:.+]]: index, %[[KVI:.+]]: index, %[[QLEN:.+]]: index, %[[KVLEN:.+]]: index, %[[IDS:.+]]: memref<?x?xi32>):
// CHECK: %[[END:.+]] = arith.addi %[[QI]], %[[KVLEN]] : index
// CHECK: %[[POS:.+]] = arith.subi %[[END]], %[[QLEN]] : index
// CHECK: %[[QDOC:.+]] = memref.load %[[IDS]][%[[B]], %[[POS]]]
// CHECK: %[[KVDOC:.+]] = memref.load %[[IDS]][%[[B]], %[[KVI]]]
// CHECK: %[[SAME:.+]] = arith.cmpi eq, %[[QDOC]], %[[KVDOC]] : i32
// CHECK: attn.yield %[[SAME]] : i1
