// RUN: attn-opt %examples/mqa_fp8_decode.mlir | attn-opt | FileCheck %s

// The fp8 MQA decode example round-trips.
// CHECK-LABEL: func.func @mqa_fp8_decode
// CHECK: !attn.kv<?x1x128xf8E4M3FN, paged<64, hnd>>
// CHECK-SAME: %[[KS:[a-z0-9_]+]]: memref<1xf32>, %[[VS:[a-z0-9_]+]]: memref<1xf32>
// CHECK: attn.attention(%{{.*}}) kv_scales(%[[KS]], %[[VS]] : memref<1xf32>, memref<1xf32>)
