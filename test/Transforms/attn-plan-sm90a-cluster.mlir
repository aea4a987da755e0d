// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_90a cluster-ctas=2" | FileCheck %s

// At 128 heads a token's rows are two 64-row blocks that see the same keys:
// asked for clusters, the plan pairs their CTAs to share each tile's loads.
// CHECK-LABEL: func.func @mla_decode_128_heads
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false, cluster_ctas = 2>
func.func @mla_decode_128_heads(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}

// -----

// Chunked prefill over a contiguous ragged cache: each token's 128 heads
// still fill a pair of blocks.
// CHECK-LABEL: func.func @mla_chunked_128_heads
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false, cluster_ctas = 2>
func.func @mla_chunked_128_heads(%q: !attn.q<?x128x576xbf16, ragged>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, ragged>)
    -> !attn.out<?x128x512xbf16, ragged> {
  %out = attn.attention(%q, %kv) {causal, scale = 0.0721687824 : f32}
      : !attn.q<?x128x576xbf16, ragged>, !attn.latent_kv<?x576xbf16, rope = 64, ragged> -> !attn.out<?x128x512xbf16, ragged>
  return %out : !attn.out<?x128x512xbf16, ragged>
}

// -----

// At 64 heads a token's rows are one block: no pair to share the loads.
// CHECK-LABEL: func.func @mla_decode_64_heads
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false>
func.func @mla_decode_64_heads(%q: !attn.q<1x64x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x64x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x64x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x64x512xbf16>
  return %out : !attn.out<1x64x512xbf16>
}

// -----

// Pages of one slot are gathered row by row, which the copy engine cannot
// multicast: no cluster.
// CHECK-LABEL: func.func @mla_paged1_128_heads
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false>
func.func @mla_paged1_128_heads(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<1, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<1, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}

// -----

// An fp8 cache is widened by the producer, not loaded by the copy engine:
// no cluster.
// CHECK-LABEL: func.func @mla_fp8_128_heads
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false>
func.func @mla_fp8_128_heads(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>>,
                             %ks: memref<1xf32>, %vs: memref<1xf32>) -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) kv_scales(%ks, %vs : memref<1xf32>, memref<1xf32>) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}
