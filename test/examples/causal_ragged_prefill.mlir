// RUN: attn-opt %examples/causal_ragged_prefill.mlir | attn-opt | FileCheck %s

// The ragged causal prefill example round-trips.
// CHECK-LABEL: func.func @causal_ragged_prefill
// CHECK: attn.attention({{.*}}) {causal} : !attn.q<?x32x128xbf16, ragged>
