// RUN: attn-opt %examples/mla_fp8_decode.mlir | attn-opt | FileCheck %s

// The fp8 MLA decode example round-trips with its scales and no value
// operand.
// CHECK-LABEL: func.func @mla_fp8_decode
// CHECK: attn.attention(%{{[^,]+}}, %{{[^,]+}}) kv_scales(%{{[^,]+}}, %{{[^ ]+}} : memref<1xf32>, memref<1xf32>) {scale = {{.*}} : f32} : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>, !attn.lse<1x128>
