// RUN: attn-opt %s -split-input-file -verify-diagnostics -attn-plan="arch=sm_90a" | FileCheck %s

// Hopper prefill is warp-specialized: a producer warpgroup and two consumer
// warpgroups of 64 rows (12 warps, 128 rows) past head dim 64, 128-key tiles
// up to head dim 128, two query tiles per consumer first (the next item's queries load
// while one runs, and its output stages through the other), then as many
// stages as fit, up to three: two at head dim 128.
// CHECK-LABEL: func.func @prefill_d128
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d128(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, ragged>,
                        %v: !attn.kv<?x8x128xbf16, ragged>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// Up to head dim 64 three consumers (16 warps, 192 rows) share 128-key
// tiles, and the third stage stays beside the second query tiles.
// CHECK-LABEL: func.func @prefill_d64
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 192 x 128, warps = 16 x 1, stages = 3, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d64(%q: !attn.q<?x64x64xbf16>, %k: !attn.kv<?x64x64xbf16>,
                       %v: !attn.kv<?x64x64xbf16>) -> !attn.out<?x64x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x64x64xbf16>, !attn.kv<?x64x64xbf16>, !attn.kv<?x64x64xbf16>
      -> !attn.out<?x64x64xbf16>
  return %out : !attn.out<?x64x64xbf16>
}

// -----

// A producer that gathers pages of 3 slots keeps more registers than three
// consumers leave it: two consumers, with 192-key tiles, at head dim 64.
// CHECK-LABEL: func.func @prefill_d64_gathered_pages
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 192, warps = 12 x 1, stages = 3, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d64_gathered_pages(%q: !attn.q<?x16x64xbf16, ragged>, %k: !attn.kv<?x4x64xbf16, paged<3, nhd>>,
                                      %v: !attn.kv<?x4x64xbf16, paged<3, nhd>>) -> !attn.out<?x16x64xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x64xbf16, ragged>, !attn.kv<?x4x64xbf16, paged<3, nhd>>, !attn.kv<?x4x64xbf16, paged<3, nhd>>
      -> !attn.out<?x16x64xbf16, ragged>
  return %out : !attn.out<?x16x64xbf16, ragged>
}

// -----

// A region at head dim 64 over pages of one slot: the gathering producer
// leaves room for two consumers, on 128-key tiles, where 192 keys spill
// them beside the region.
// CHECK-LABEL: func.func @prefill_d64_score_mod_pages_of_one
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1,
func.func @prefill_d64_score_mod_pages_of_one(%q: !attn.q<?x16x64xbf16>,
    %k: !attn.kv<?x16x64xbf16, paged<1, nhd>>,
    %v: !attn.kv<?x16x64xbf16, paged<1, nhd>>) -> !attn.out<?x16x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x64xbf16>, !attn.kv<?x16x64xbf16, paged<1, nhd>>,
        !attn.kv<?x16x64xbf16, paged<1, nhd>>
      -> !attn.out<?x16x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c = arith.constant 0.5 : f32
        %r = arith.mulf %s, %c : f32
        attn.yield %r : f32
      }
  return %out : !attn.out<?x16x64xbf16>
}

// -----

// A score_mod region at head dim 64 keeps three consumers on 96-key tiles:
// beside the region, 128-key tiles spill the consumers' 160 registers. The
// CTAs still claim the work items, and the tile loop is the compact one.
// CHECK-LABEL: func.func @prefill_d64_score_mod
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 192 x 96, warps = 16 x 1, stages = 3, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d64_score_mod(%q: !attn.q<?x16x64xbf16>, %k: !attn.kv<?x16x64xbf16>,
                                 %v: !attn.kv<?x16x64xbf16>) -> !attn.out<?x16x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x64xbf16>, !attn.kv<?x16x64xbf16>, !attn.kv<?x16x64xbf16>
      -> !attn.out<?x16x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c = arith.constant 0.5 : f32
        %r = arith.mulf %s, %c : f32
        attn.yield %r : f32
      }
  return %out : !attn.out<?x16x64xbf16>
}

// -----

// Heavy score work (soft-cap, ALiBi and a window) at head dim 64 keeps two
// consumers, with 128-key tiles.
// CHECK-LABEL: func.func @prefill_d64_heavy
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d64_heavy(%q: !attn.q<?x16x64xbf16>, %k: !attn.kv<?x4x64xbf16>,
                             %v: !attn.kv<?x4x64xbf16>) -> !attn.out<?x16x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal, alibi, softcap = 20.0 : f32, window = #attn.window<300, 0>}
      : !attn.q<?x16x64xbf16>, !attn.kv<?x4x64xbf16>, !attn.kv<?x4x64xbf16>
      -> !attn.out<?x16x64xbf16>
  return %out : !attn.out<?x16x64xbf16>
}

// -----

// DeepSeek's 192/128 head dims narrow the KV tile to 96 keys, so the output
// accumulators fit beside the scores; two stages and two query tiles fill
// the shared memory.
// CHECK-LABEL: func.func @prefill_d192_v128
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 96, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_buffers = 2>
func.func @prefill_d192_v128(%q: !attn.q<?x16x192xbf16>, %k: !attn.kv<?x16x192xbf16>,
                             %v: !attn.kv<?x16x128xbf16>) -> !attn.out<?x16x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x192xbf16>, !attn.kv<?x16x192xbf16>, !attn.kv<?x16x128xbf16>
      -> !attn.out<?x16x128xbf16>
  return %out : !attn.out<?x16x128xbf16>
}

// -----

// Head dim 256 takes 80-key tiles, two stages of them, and one query tile
// per consumer: a second would not fit beside them.
// CHECK-LABEL: func.func @prefill_d256
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 80, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false>
func.func @prefill_d256(%q: !attn.q<?x8x256xbf16>, %k: !attn.kv<?x8x256xbf16>,
                        %v: !attn.kv<?x8x256xbf16>) -> !attn.out<?x8x256xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x256xbf16>, !attn.kv<?x8x256xbf16>, !attn.kv<?x8x256xbf16>
      -> !attn.out<?x8x256xbf16>
  return %out : !attn.out<?x8x256xbf16>
}

// -----

// Heavy score work (three or more per score: soft-cap, ALiBi and a window)
// narrows head dim 256's tiles to 32 keys, which leaves room for a second
// query tile, but past head dim 192 the consumers keep one: its
// bookkeeping spilled them (HeadDimGrid's heaviest variants).
// CHECK-LABEL: func.func @prefill_d256_heavy
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 32, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false>
func.func @prefill_d256_heavy(%q: !attn.q<?x8x256xbf16>, %k: !attn.kv<?x8x256xbf16>,
                              %v: !attn.kv<?x8x256xbf16>) -> !attn.out<?x8x256xbf16> {
  %out = attn.attention(%q, %k, %v) {causal, softcap = 30.0 : f32, alibi, window = #attn.window<1024, 0>}
      : !attn.q<?x8x256xbf16>, !attn.kv<?x8x256xbf16>, !attn.kv<?x8x256xbf16>
      -> !attn.out<?x8x256xbf16>
  return %out : !attn.out<?x8x256xbf16>
}

// -----

// A paged cache of 16-slot pages is warp-specialized too: the producer
// copies each page's slots with one box per column block.
// CHECK-LABEL: func.func @paged_prefill
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized,
func.func @paged_prefill(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
                         %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, paged<16, nhd>>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// Pages of fewer than 8 slots do not fill the copy engine's swizzle atoms;
// the producer warps gather them, so they take the Hopper schedule too.
// CHECK-LABEL: func.func @paged_prefill_page4
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized,
func.func @paged_prefill_page4(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, paged<4, nhd>>,
                               %v: !attn.kv<?x8x128xbf16, paged<4, nhd>>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, paged<4, nhd>>, !attn.kv<?x8x128xbf16, paged<4, nhd>>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// Decode stays on the mma.sync decode schedules (it is memory-bound): a GQA
// group of up to 8 heads transposed.
// CHECK-LABEL: func.func @decode
// CHECK: attn_gpu.plan = #attn_gpu.plan<transposed_decode, block = 8 x 64,
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                  %v: !attn.kv<?x8x128xbf16>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}

// -----

// Document segments are warp-specialized: the consumers keep their rows'
// ids in registers and load a tile's column ids once.
// CHECK-LABEL: func.func @segments_prefill
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 128,
func.func @segments_prefill(%q: !attn.q<?x16x128xbf16, ragged>, %k: !attn.kv<?x16x128xbf16, ragged>,
                            %v: !attn.kv<?x16x128xbf16, ragged>, %qd: memref<?xi32>,
                            %kd: memref<?xi32>) -> !attn.out<?x16x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) segments(%qd, %kd : memref<?xi32>, memref<?xi32>) {causal}
      : !attn.q<?x16x128xbf16, ragged>, !attn.kv<?x16x128xbf16, ragged>, !attn.kv<?x16x128xbf16, ragged>
      -> !attn.out<?x16x128xbf16, ragged>
  return %out : !attn.out<?x16x128xbf16, ragged>
}

// -----

// An fp8 cache is widened between its bulk copies and the products, so it
// takes the mma.sync schedules even on sm_90a: decode with four stages (a
// stage holds half the bytes of a 16-bit one) ...
// CHECK-LABEL: func.func @fp8_decode
// CHECK: attn_gpu.plan = #attn_gpu.plan<transposed_decode, block = 8 x 64, warps = 1 x 4, stages = 4, kv_splits = 16, q_in_regs = true>
func.func @fp8_decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>,
                      %v: !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>,
                      %ks: memref<1xf32>, %vs: memref<8xf32>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) kv_scales(%ks, %vs : memref<1xf32>, memref<8xf32>)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>,
        !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>> -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}

// -----

// ... and the mma.sync prefill for chunked prefill over the cache.
// CHECK-LABEL: func.func @fp8_chunked_prefill
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 64, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = true>
func.func @fp8_chunked_prefill(%q: !attn.q<?x32x128xf16, ragged>, %k: !attn.kv<?x8x128xf8E5M2, paged<16, hnd>>,
                               %v: !attn.kv<?x8x128xf8E5M2, paged<16, hnd>>) -> !attn.out<?x32x128xf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xf16, ragged>, !attn.kv<?x8x128xf8E5M2, paged<16, hnd>>,
        !attn.kv<?x8x128xf8E5M2, paged<16, hnd>> -> !attn.out<?x32x128xf16, ragged>
  return %out : !attn.out<?x32x128xf16, ragged>
}

// -----

// Multi-head latent attention takes the latent schedule: 64 packed (token,
// head) rows, 64-key tiles of whole 576-element cache rows, two stages (all
// that fits beside the query tile), split-KV allowed.
// CHECK-LABEL: func.func @mla_decode
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false>
func.func @mla_decode(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}

// -----

// Narrower cache rows leave room for more stages: four at 256 + 64.
// CHECK-LABEL: func.func @mla_narrow
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 4, kv_splits = 16, q_in_regs = false>
func.func @mla_narrow(%q: !attn.q<?x16x320xbf16, ragged>, %kv: !attn.latent_kv<?x320xbf16, rope = 64, ragged>)
    -> !attn.out<?x16x256xbf16, ragged> {
  %out = attn.attention(%q, %kv) {causal}
      : !attn.q<?x16x320xbf16, ragged>, !attn.latent_kv<?x320xbf16, rope = 64, ragged> -> !attn.out<?x16x256xbf16, ragged>
  return %out : !attn.out<?x16x256xbf16, ragged>
}

// -----

// SGLang's pages of one slot take the latent schedule too: the producer
// gathers their rows (the plan is the one of whole pages).
// CHECK-LABEL: func.func @mla_paged1
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false>
func.func @mla_paged1(%q: !attn.q<1x16x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<1, nhd>>)
    -> !attn.out<1x16x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x16x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<1, nhd>> -> !attn.out<1x16x512xbf16>
  return %out : !attn.out<1x16x512xbf16>
}

// -----

// An fp8 latent cache takes the latent schedule: its producer widens the
// rows into the same 16-bit tiles, so the plan is the bf16 cache's.
// CHECK-LABEL: func.func @mla_fp8
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false>
func.func @mla_fp8(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>>,
                   %ks: memref<1xf32>, %vs: memref<1xf32>) -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) kv_scales(%ks, %vs : memref<1xf32>, memref<1xf32>) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}

// -----

// The value columns split between two warpgroups in whole 64-column blocks:
// other latent widths are named.
func.func @mla_latent_448(%q: !attn.q<1x16x512xbf16>, %kv: !attn.latent_kv<?x512xbf16, rope = 64>)
    -> !attn.out<1x16x448xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: a latent cache of 448 latent and 64 rope dims (the latent dims must be a multiple of 128 up to 512, all dims a multiple of 16 up to 576, e.g. 512 + 64)}}
  %out = attn.attention(%q, %kv)
      : !attn.q<1x16x512xbf16>, !attn.latent_kv<?x512xbf16, rope = 64> -> !attn.out<1x16x448xbf16>
  return %out : !attn.out<1x16x448xbf16>
}

// -----

// The latent kernel applies no ALiBi slopes.
func.func @mla_alibi(%q: !attn.q<1x16x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64>)
    -> !attn.out<1x16x512xbf16> {
  // expected-error @below {{cannot be compiled for the GPU yet: ALiBi with a latent cache}}
  %out = attn.attention(%q, %kv) {alibi}
      : !attn.q<1x16x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64> -> !attn.out<1x16x512xbf16>
  return %out : !attn.out<1x16x512xbf16>
}

// -----

// The latent kernel keeps no document ids: segments are named.
func.func @mla_segments(%q: !attn.q<?x16x576xbf16, ragged>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, ragged>,
                        %qd: memref<?xi32>, %kd: memref<?xi32>) -> !attn.out<?x16x512xbf16, ragged> {
  // expected-error @below {{cannot be compiled for the GPU yet: document segments with a latent cache}}
  %out = attn.attention(%q, %kv) segments(%qd, %kd : memref<?xi32>, memref<?xi32>) {causal}
      : !attn.q<?x16x576xbf16, ragged>, !attn.latent_kv<?x576xbf16, rope = 64, ragged> -> !attn.out<?x16x512xbf16, ragged>
  return %out : !attn.out<?x16x512xbf16, ragged>
}

// -----

// A shared node of cascade attention on sm_90a is warp-specialized with
// its keys split across CTAs (each split's state merged by a second
// launch): few row tiles face a long prefix.
// CHECK-LABEL: func.func @shared_keys_split
// CHECK: attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false, q_buffers = 2>
func.func @shared_keys_split(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
                             %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>) -> !attn.out<?x32x128xbf16, ragged> {
  %out, %lse = attn.attention(%q, %k, %v) {shared_keys}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, paged<16, nhd>>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<?x32x128xbf16, ragged>, !attn.lse<?x32, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// Over an fp8 cache (which wgmma does not read as stored) a shared node
// takes the mma.sync loop, the GQA group packed into its rows, with split
// keys it merges itself.
// CHECK-LABEL: func.func @shared_keys_fp8_split
// CHECK: attn_gpu.plan = #attn_gpu.plan<prefill, block = 128 x 64, warps = 8 x 1, stages = 2, kv_splits = 16, q_in_regs = true>
func.func @shared_keys_fp8_split(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>,
                                 %v: !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>) -> !attn.out<?x32x128xbf16, ragged> {
  %out, %lse = attn.attention(%q, %k, %v) {shared_keys}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>, !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>
      -> !attn.out<?x32x128xbf16, ragged>, !attn.lse<?x32, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// A shared node of an MLA cache takes the latent schedule, which packs a
// token's heads into its rows and splits the keys already.
// CHECK-LABEL: func.func @shared_keys_latent
// CHECK: attn_gpu.plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false>
func.func @shared_keys_latent(%q: !attn.q<?x16x576xbf16, ragged>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<?x16x512xbf16, ragged> {
  %out, %lse = attn.attention(%q, %kv) {shared_keys}
      : !attn.q<?x16x576xbf16, ragged>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>
      -> !attn.out<?x16x512xbf16, ragged>, !attn.lse<?x16, ragged>
  return %out : !attn.out<?x16x512xbf16, ragged>
}
