// RUN: attn-opt %examples/document_segments.mlir | attn-opt | FileCheck %s

// The declarative document segments example round-trips.
// CHECK-LABEL: func.func @document_segments
// CHECK: segments(%{{.+}}, %{{.+}} : memref<?xi32>, memref<?xi32>) {causal}
