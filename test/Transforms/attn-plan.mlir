// RUN: attn-opt %s -split-input-file -verify-diagnostics -attn-plan | FileCheck %s

// One query token per request is decode: a 16-row tile of GQA heads, four
// warps across each KV tile, three stages, split-KV allowed.
// CHECK: module attributes {attn_gpu.target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448>}
// CHECK-LABEL: func.func @decode
// CHECK: attn.attention
// CHECK-SAME: attn_gpu.plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 3, kv_splits = 16, q_in_regs = true>
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
                  %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16, paged<16, nhd>>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}

// -----

// Several queries per request is prefill: eight warps of 16 rows, 64-key tiles.
// CHECK-LABEL: func.func @prefill
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 64, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = true>
func.func @prefill(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, ragged>,
                   %v: !attn.kv<?x8x128xbf16, ragged>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// Head dim 256 halves the KV tile and reloads queries from shared memory,
// which keeps the kernel free of register spills.
// CHECK-LABEL: func.func @prefill_d256
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 32, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = false>
func.func @prefill_d256(%q: !attn.q<?x8x256xbf16>, %k: !attn.kv<?x8x256xbf16>,
                        %v: !attn.kv<?x8x256xbf16>) -> !attn.out<?x8x256xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x256xbf16>, !attn.kv<?x8x256xbf16>, !attn.kv<?x8x256xbf16> -> !attn.out<?x8x256xbf16>
  return %out : !attn.out<?x8x256xbf16>
}

// -----

// What the verifier accepts but the GPU pipeline cannot compile is named.
func.func @mla(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64>)
    -> !attn.out<1x128x512xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: multi-head latent attention (!attn.latent_kv)}}
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}

// -----

func.func @fp8(%q: !attn.q<1x16x128xbf16>, %k: !attn.kv<?x1x128xf8E4M3FN>,
               %v: !attn.kv<?x1x128xf8E4M3FN>) -> !attn.out<1x16x128xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: a f8E4M3FN key/value cache (bf16 and f16 only)}}
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x16x128xbf16>, !attn.kv<?x1x128xf8E4M3FN>, !attn.kv<?x1x128xf8E4M3FN> -> !attn.out<1x16x128xbf16>
  return %out : !attn.out<1x16x128xbf16>
}

// -----

func.func @head_dim_96(%q: !attn.q<?x8x96xbf16>, %k: !attn.kv<?x8x96xbf16>,
                       %v: !attn.kv<?x8x96xbf16>) -> !attn.out<?x8x96xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: head dim 96/96 (multiples of 64 only)}}
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x96xbf16>, !attn.kv<?x8x96xbf16>, !attn.kv<?x8x96xbf16> -> !attn.out<?x8x96xbf16>
  return %out : !attn.out<?x8x96xbf16>
}
