// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_80" -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu | FileCheck %s

// Causal prefill: a kernel that walks the visible tiles through a two-stage
// pipeline and masks only the tiles that cross the diagonal.
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: (%[[Q:[^:]+]]: {{.*}}, %[[K:[^:]+]]: {{.*}}, %[[V:[^:]+]]: {{.*}})
// CHECK: %[[OUT:.+]] = attn_gpu.launch @attention(%[[Q]], %[[K]], %[[V]]) {geometry = #attn_gpu.launch<threads = 256, smem = 98304, block_m = 128, kv_splits = 1>}
// CHECK: return %[[OUT]]
// CHECK: attn_gpu.kernel @attention
// CHECK-SAME: plan = <prefill
// CHECK-SAME: masks = <lower = false, upper = true, sinks = 0, partial = edges>
// CHECK: %[[LIVE:.+]] = attn_gpu.begin : i1
// CHECK: scf.if %[[LIVE]]
// CHECK: attn_gpu.load_query
// CHECK: %[[BEGIN:.+]] = attn_gpu.tiles_begin
// CHECK-NEXT: %[[END:.+]] = attn_gpu.tiles_end
// CHECK: attn_gpu.prefetch_tile %[[BEGIN]] from !attn.kv<?x8x128xbf16, ragged>
// CHECK: scf.for %[[T:.+]] = %[[BEGIN]] to %[[END]]
// CHECK: attn_gpu.wait_tile %[[T]]
// CHECK: attn_gpu.prefetch_tile
// CHECK: attn_gpu.score_mma %[[T]]
// CHECK: %[[PARTIAL:.+]] = attn_gpu.tile_is_partial %[[T]] : i1
// CHECK: scf.if %[[PARTIAL]]
// CHECK: attn_gpu.modify_scores %[[T]] {masked}
// CHECK: } else {
// CHECK: attn_gpu.modify_scores %[[T]]{{$}}
// CHECK: attn_gpu.softmax_update
// CHECK: attn_gpu.value_mma %[[T]]
// CHECK: attn_gpu.store_state
func.func @prefill(%q: !attn.q<?x32x128xbf16, ragged>, %k: !attn.kv<?x8x128xbf16, ragged>,
                   %v: !attn.kv<?x8x128xbf16, ragged>) -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// Split-KV decode: the attention launch writes partial states that a merge
// kernel combines; the paged cache shows in the tile loads.
// CHECK-LABEL: func.func @decode
// CHECK: %[[P:.+]]:2 = attn_gpu.launch @attention({{.*}}) {geometry = #attn_gpu.launch<threads = 128, smem = {{[0-9]+}}, block_m = 8, kv_splits = 16>}
// CHECK: attn_gpu.launch @merge(%[[P]]#0, %[[P]]#1)
// CHECK: attn_gpu.kernel @attention
// CHECK: attn_gpu.prefetch_tile {{.*}} from !attn.kv<?x8x128xbf16, paged<16, hnd>>
// CHECK: attn_gpu.merge_kernel @merge input = f32 output = bf16 v_dim = 128
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16, paged<16, hnd>>,
                  %v: !attn.kv<?x8x128xbf16, paged<16, hnd>>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16, paged<16, hnd>>, !attn.kv<?x8x128xbf16, paged<16, hnd>>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}

// -----

// Whole tiles and no mask: the loop has no mask at all.
// CHECK-LABEL: func.func @unmasked
// CHECK: attn_gpu.kernel
// CHECK-NOT: attn_gpu.tile_is_partial
// CHECK-NOT: masked
// CHECK: attn_gpu.modify_scores
func.func @unmasked(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<256x8x64xbf16>,
                    %v: !attn.kv<256x8x64xbf16>) -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<256x8x64xbf16>, !attn.kv<256x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}
