// RUN: attn-opt %examples/document_mask.mlir -mlir-print-op-generic | attn-opt | FileCheck %s

// The generic form of an attention op with captures and a region parses
// back to the same op.
// CHECK-LABEL: func.func @document_mask
// CHECK: attn.attention(%{{.+}}, %{{.+}}, %{{.+}}) captures(%{{.+}} : memref<?x?xi32>) {causal}
// CHECK: mask_mod {
// CHECK: attn.yield %{{.+}} : i1
