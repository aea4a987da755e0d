// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_90a register-relief=1" | FileCheck %s

// A first step of register relief plans the score work as heavy: where
// three consumers' 128-key tiles ran out of registers (this variant spilled
// 4 bytes), two consumers with 128-key tiles and no third stage.
// CHECK-LABEL: func.func @prefill_d32_alibi
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d32_alibi(%q: !attn.q<?x8x32xf16>, %k: !attn.kv<?x1x32xf16, paged<128, nhd>>, %v: !attn.kv<?x1x32xf16, paged<128, nhd>>)
    -> (!attn.out<?x8x32xf32>, !attn.lse<?x8>) {
  %out, %lse = attn.attention(%q, %k, %v) {scale = 0.191 : f32, alibi}
      : !attn.q<?x8x32xf16>, !attn.kv<?x1x32xf16, paged<128, nhd>>, !attn.kv<?x1x32xf16, paged<128, nhd>>
      -> !attn.out<?x8x32xf32>, !attn.lse<?x8>
  return %out, %lse : !attn.out<?x8x32xf32>, !attn.lse<?x8>
}

// -----

// At head dim 128 heavy work takes 96-key tiles.
// CHECK-LABEL: func.func @prefill_d128
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 96, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d128(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, ragged>,
                        %v: !attn.kv<?x8x128xbf16, ragged>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// Decode rereads its queries from shared memory instead of keeping them in
// registers beside the output.
// CHECK-LABEL: func.func @decode
// CHECK: attn_gpu.plan = #attn_gpu.plan<transposed_decode, block = 8 x 64, warps = 1 x 4, stages = 3, kv_splits = 16, q_in_regs = false>
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                  %v: !attn.kv<?x8x128xbf16>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}
