// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_90a register-relief=2" | FileCheck %s

// The second step narrows the heavy tiles once more and keeps one query
// tile per consumer: 96 keys where heavy work at head dim 32 took 128.
// CHECK-LABEL: func.func @prefill_d32_alibi
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 96, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false>
func.func @prefill_d32_alibi(%q: !attn.q<?x8x32xf16>, %k: !attn.kv<?x1x32xf16, paged<128, nhd>>, %v: !attn.kv<?x1x32xf16, paged<128, nhd>>)
    -> (!attn.out<?x8x32xf32>, !attn.lse<?x8>) {
  %out, %lse = attn.attention(%q, %k, %v) {scale = 0.191 : f32, alibi}
      : !attn.q<?x8x32xf16>, !attn.kv<?x1x32xf16, paged<128, nhd>>, !attn.kv<?x1x32xf16, paged<128, nhd>>
      -> !attn.out<?x8x32xf32>, !attn.lse<?x8>
  return %out, %lse : !attn.out<?x8x32xf32>, !attn.lse<?x8>
}

// -----

// Head dim 192 with segments and a window, already heavy (64-key tiles),
// narrows to 32 keys.
// CHECK-LABEL: func.func @prefill_d192_segments_window
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 32, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false>
func.func @prefill_d192_segments_window(%q: !attn.q<?x4x192xf16>, %k: !attn.kv<?x4x192xf16, ragged>,
                                        %v: !attn.kv<?x4x192xf16, ragged>, %qs: memref<?x?xi32>, %ks: memref<?xi32>)
    -> !attn.out<?x4x192xf16> {
  %out = attn.attention(%q, %k, %v) segments(%qs, %ks : memref<?x?xi32>, memref<?xi32>) {window = #attn.window<100, 31>}
      : !attn.q<?x4x192xf16>, !attn.kv<?x4x192xf16, ragged>, !attn.kv<?x4x192xf16, ragged>
      -> !attn.out<?x4x192xf16>
  return %out : !attn.out<?x4x192xf16>
}
