// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Both fp8 formats are accepted for a KV cache.
// CHECK-LABEL: func.func @fp8_caches
// CHECK-SAME: !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>
// CHECK-SAME: !attn.kv<?x8x128xf8E5M2>
func.func @fp8_caches(%a: !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>,
                      %b: !attn.kv<?x8x128xf8E5M2>) {
  return
}

// -----

// An fp8 cache serves bf16 queries.
// CHECK-LABEL: func.func @fp8_attention
// CHECK: attn.attention(%{{.*}}) : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xf8E4M3FN>
func.func @fp8_attention(%q: !attn.q<1x32x128xbf16>,
                         %k: !attn.kv<?x8x128xf8E4M3FN>,
                         %v: !attn.kv<?x8x128xf8E4M3FN>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xf8E4M3FN>, !attn.kv<?x8x128xf8E4M3FN>
      -> !attn.out<1x32x128xbf16>
  return
}

// -----

// Dequantization scales: one for all keys, one per KV head for the values.
// CHECK-LABEL: func.func @fp8_scales
// CHECK: attn.attention(%{{.*}}) kv_scales(%[[KS:.+]], %[[VS:.+]] : memref<1xf32>, memref<8xf32>)
func.func @fp8_scales(%q: !attn.q<1x32x128xbf16>,
                      %k: !attn.kv<?x8x128xf8E5M2, paged<16, hnd>>,
                      %v: !attn.kv<?x8x128xf8E5M2, paged<16, hnd>>,
                      %ks: memref<1xf32>, %vs: memref<8xf32>) {
  %out = attn.attention(%q, %k, %v) kv_scales(%ks, %vs : memref<1xf32>, memref<8xf32>)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xf8E5M2, paged<16, hnd>>,
        !attn.kv<?x8x128xf8E5M2, paged<16, hnd>> -> !attn.out<1x32x128xbf16>
  return
}
