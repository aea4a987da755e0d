// RUN: attn-opt %examples/softcap.mlir | attn-opt | FileCheck %s

// The soft-cap example round-trips.
// CHECK-LABEL: func.func @softcap
// CHECK: {causal, softcap = 5.000000e+01 : f32} : !attn.q<?x16x256xbf16, ragged>
