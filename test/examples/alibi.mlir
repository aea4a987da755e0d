// RUN: attn-opt %examples/alibi.mlir | attn-opt | FileCheck %s

// The ALiBi example round-trips.
// CHECK-LABEL: func.func @alibi
// CHECK: {alibi, causal} : !attn.q<?x32x128xf16>
