// RUN: attn-opt %examples/document_mask.mlir | attn-opt | FileCheck %s

// The mask_mod document mask example round-trips.
// CHECK-LABEL: func.func @document_mask
// CHECK: mask_mod {
// CHECK: %[[SAME:.+]] = arith.cmpi eq
// CHECK: attn.yield %[[SAME]] : i1
