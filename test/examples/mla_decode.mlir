// RUN: attn-opt %examples/mla_decode.mlir | attn-opt | FileCheck %s

// The MLA decode example round-trips without a value operand.
// CHECK-LABEL: func.func @mla_decode
// CHECK: attn.attention(%{{[^,]+}}, %{{[^,]+}}) {scale = {{.*}} : f32} : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>, !attn.lse<1x128>
