// RUN: attn-opt %examples/repeat_kv_gqa.mlir | attn-opt | FileCheck %s

// The repeat_kv example round-trips as written (canonicalization removes the repeats).
// CHECK-LABEL: func.func @repeat_kv_gqa
// CHECK: %[[K:.+]] = attn.repeat_kv %{{.+}} by 7
// CHECK: %[[V:.+]] = attn.repeat_kv %{{.+}} by 7
// CHECK: attn.attention(%{{.+}}, %[[K]], %[[V]]) {causal}
