// RUN: attn-opt %examples/repeat_kv_gqa.mlir -attn-canonicalize | attn-opt | FileCheck %s

// The README's example job: the HF-style repeat_kv example canonicalizes to
// grouped-query attention reading the 4 KV heads directly.
// CHECK-LABEL: func.func @repeat_kv_gqa
// CHECK-SAME: (%[[Q:[^:]+]]: !attn.q<?x28x128xbf16, ragged>, %[[K:[^:]+]]: !attn.kv<?x4x128xbf16, ragged>, %[[V:[^:]+]]: !attn.kv<?x4x128xbf16, ragged>)
// CHECK-NOT: attn.repeat_kv
// CHECK: attn.attention(%[[Q]], %[[K]], %[[V]]) {causal}
