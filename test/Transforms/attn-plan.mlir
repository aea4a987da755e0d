// RUN: attn-opt %s -split-input-file -verify-diagnostics -attn-plan="arch=sm_80" | FileCheck %s

// On sm_80 (the mma.sync schedules; attn-plan-sm90a.mlir has Hopper's): one
// query token per request is decode. A GQA group of up to 8 heads takes the
// transposed products (its 8 rows as mma's columns), four warps across each
// KV tile, three stages, split-KV allowed.
// CHECK: module attributes {attn_gpu.target = #attn_gpu.target<"sm_80", sms = 132, smem = 232448>}
// CHECK-LABEL: func.func @decode
// CHECK: attn.attention
// CHECK-SAME: attn_gpu.plan = #attn_gpu.plan<transposed_decode, block = 8 x 64, warps = 1 x 4, stages = 3, kv_splits = 16, q_in_regs = true>
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
                  %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16, paged<16, nhd>>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}

// -----

// A group of more than 8 heads fills 16 rows: the decode schedule.
// CHECK-LABEL: func.func @decode_group16
// CHECK: attn_gpu.plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 3, kv_splits = 16, q_in_regs = true>
func.func @decode_group16(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x2x128xbf16>,
                          %v: !attn.kv<?x2x128xbf16>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x2x128xbf16>, !attn.kv<?x2x128xbf16>
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

// What the verifier accepts but the GPU pipeline cannot compile for the
// target is named: the latent schedule is Hopper's.
func.func @mla(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64>)
    -> !attn.out<1x128x512xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: multi-head latent attention on sm_80 (its kernel is sm_90a's wgmma)}}
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}

// -----

// sm_80 has no conversions from fp8 pairs, which the widening on load uses.
func.func @fp8(%q: !attn.q<1x16x128xbf16>, %k: !attn.kv<?x1x128xf8E4M3FN>,
               %v: !attn.kv<?x1x128xf8E4M3FN>) -> !attn.out<1x16x128xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: an fp8 key/value cache on sm_80 (fp8 conversions need sm_89 or newer)}}
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x16x128xbf16>, !attn.kv<?x1x128xf8E4M3FN>, !attn.kv<?x1x128xf8E4M3FN> -> !attn.out<1x16x128xbf16>
  return %out : !attn.out<1x16x128xbf16>
}

// -----

// Head dims off the kernels' 16-column steps are refused, naming the dims
// and what is supported.
func.func @head_dim_24(%q: !attn.q<?x8x24xbf16>, %k: !attn.kv<?x8x24xbf16>,
                       %v: !attn.kv<?x8x24xbf16>) -> !attn.out<?x8x24xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: head dim 24/24 (query/key and value head dims must each be a multiple of 16 from 16 to 256, e.g. 64, 96, 128, 192/128 or 256)}}
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x24xbf16>, !attn.kv<?x8x24xbf16>, !attn.kv<?x8x24xbf16> -> !attn.out<?x8x24xbf16>
  return %out : !attn.out<?x8x24xbf16>
}

// -----

// So are head dims past 256, whose accumulators do not fit a thread.
func.func @head_dim_320(%q: !attn.q<1x8x320xbf16>, %k: !attn.kv<?x8x320xbf16>,
                        %v: !attn.kv<?x8x128xbf16>) -> !attn.out<1x8x128xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: head dim 320/128 (query/key and value head dims must each be a multiple of 16 from 16 to 256, e.g. 64, 96, 128, 192/128 or 256)}}
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x8x320xbf16>, !attn.kv<?x8x320xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<1x8x128xbf16>
  return %out : !attn.out<1x8x128xbf16>
}

// -----

// Head dim 96 (not a multiple of 64) plans like 128: 64-key tiles, queries
// in registers.
// CHECK-LABEL: func.func @prefill_d96
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 64, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = true>
func.func @prefill_d96(%q: !attn.q<?x8x96xbf16>, %k: !attn.kv<?x8x96xbf16>,
                       %v: !attn.kv<?x8x96xbf16>) -> !attn.out<?x8x96xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x96xbf16>, !attn.kv<?x8x96xbf16>, !attn.kv<?x8x96xbf16> -> !attn.out<?x8x96xbf16>
  return %out : !attn.out<?x8x96xbf16>
}

// -----

// Query/key dim 192 with value dim 128 (DeepSeek): the wider of the two
// halves the KV tile, and queries past 128 stay in shared memory.
// CHECK-LABEL: func.func @prefill_qk192_v128
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 32, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = false>
func.func @prefill_qk192_v128(%q: !attn.q<?x16x192xbf16, ragged>, %k: !attn.kv<?x16x192xbf16, ragged>,
                              %v: !attn.kv<?x16x128xbf16, ragged>) -> !attn.out<?x16x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x192xbf16, ragged>, !attn.kv<?x16x192xbf16, ragged>, !attn.kv<?x16x128xbf16, ragged>
      -> !attn.out<?x16x128xbf16, ragged>
  return %out : !attn.out<?x16x128xbf16, ragged>
}

// -----

// One region is per-score work of two: a d128 prefill keeps its plan.
// CHECK-LABEL: func.func @prefill_one_region
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 64, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = true>
func.func @prefill_one_region(%q: !attn.q<?x8x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                              %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x8x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<?x8x128xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c1 = arith.constant 1 : index
        %c3 = arith.constant 3 : index
        %m = arith.remsi %j, %c3 : index
        %keep = arith.cmpi ne, %m, %c1 : index
        attn.yield %keep : i1
      }
  return %out : !attn.out<?x8x128xbf16>
}

// -----

// A region with a window (per-score work of three) would spill 64-key tiles:
// the tile halves and head dim 128 reads queries from shared memory.
// CHECK-LABEL: func.func @prefill_region_and_window
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 32, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = false>
func.func @prefill_region_and_window(%q: !attn.q<?x8x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                                     %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x8x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<100, 0>}
      : !attn.q<?x8x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<?x8x128xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c1 = arith.constant 1 : index
        %c3 = arith.constant 3 : index
        %m = arith.remsi %j, %c3 : index
        %keep = arith.cmpi ne, %m, %c1 : index
        attn.yield %keep : i1
      }
  return %out : !attn.out<?x8x128xbf16>
}

// -----

// The same work at head dim 64 still keeps queries in registers.
// CHECK-LABEL: func.func @prefill_d64_softcap_alibi_window
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 32, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = true>
func.func @prefill_d64_softcap_alibi_window(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                                            %v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v) {alibi, causal, softcap = 30.0 : f32, window = #attn.window<100, 0>}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}

// -----

// Plain decode keeps queries in registers up to head dim 256.
// CHECK-LABEL: func.func @decode_d256
// CHECK: attn_gpu.plan = #attn_gpu.plan<transposed_decode, block = 8 x 64, warps = 1 x 4, stages = 3, kv_splits = 16, q_in_regs = true>
func.func @decode_d256(%q: !attn.q<1x8x256xbf16>, %k: !attn.kv<?x2x256xbf16, paged<16, nhd>>,
                       %v: !attn.kv<?x2x256xbf16, paged<16, nhd>>) -> !attn.out<1x8x256xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x8x256xbf16>, !attn.kv<?x2x256xbf16, paged<16, nhd>>, !attn.kv<?x2x256xbf16, paged<16, nhd>>
      -> !attn.out<1x8x256xbf16>
  return %out : !attn.out<1x8x256xbf16>
}

// -----

// Per-score work beside wide accumulators reads decode queries from shared
// memory: qk 240 / 4 + v 240 / 2 + 8 per unit of work exceeds 160 registers.
// CHECK-LABEL: func.func @decode_d240_alibi
// CHECK: attn_gpu.plan = #attn_gpu.plan<transposed_decode, block = 8 x 64, warps = 1 x 4, stages = 3, kv_splits = 16, q_in_regs = false>
func.func @decode_d240_alibi(%q: !attn.q<1x8x240xbf16>, %k: !attn.kv<?x2x240xbf16, paged<16, nhd>>,
                             %v: !attn.kv<?x2x240xbf16, paged<16, nhd>>) -> !attn.out<1x8x240xbf16> {
  %out = attn.attention(%q, %k, %v) {alibi}
      : !attn.q<1x8x240xbf16>, !attn.kv<?x2x240xbf16, paged<16, nhd>>, !attn.kv<?x2x240xbf16, paged<16, nhd>>
      -> !attn.out<1x8x240xbf16>
  return %out : !attn.out<1x8x240xbf16>
}

// -----

// At head dim 128 the same work leaves room for them.
// CHECK-LABEL: func.func @decode_d128_window_sinks
// CHECK: attn_gpu.plan = #attn_gpu.plan<transposed_decode, block = 8 x 64, warps = 1 x 4, stages = 3, kv_splits = 16, q_in_regs = true>
func.func @decode_d128_window_sinks(%q: !attn.q<1x8x128xbf16>, %k: !attn.kv<?x2x128xbf16, paged<16, nhd>>,
                                    %v: !attn.kv<?x2x128xbf16, paged<16, nhd>>) -> !attn.out<1x8x128xbf16> {
  %out = attn.attention(%q, %k, %v) {window = #attn.window<100, 0>, sinks = 4}
      : !attn.q<1x8x128xbf16>, !attn.kv<?x2x128xbf16, paged<16, nhd>>, !attn.kv<?x2x128xbf16, paged<16, nhd>>
      -> !attn.out<1x8x128xbf16>
  return %out : !attn.out<1x8x128xbf16>
}
