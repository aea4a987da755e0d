// RUN: attn-opt %s -split-input-file -attn-plan=arch=sm_90a -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu -attn-fuse-split-merge | FileCheck %s

// An MLA decode step's latent kernel merges its own splits: one launch with
// the merge's results. It merges them in a second launch of itself (the
// runtime's merge pass), so its programs have no merge_splits op.
// CHECK-LABEL: func.func @mla_decode
// CHECK: %[[OUT:.+]]:2 = attn_gpu.launch @attention(%{{.+}}, %{{.+}}) {geometry = #attn_gpu.launch<threads = 384, smem = {{[0-9]+}}, block_m = 64, kv_splits = 16>}
// CHECK-SAME: -> (!attn.out<1x16x512xbf16>, !attn.lse<1x16>)
// CHECK-NOT: attn_gpu.launch
// CHECK: return %[[OUT]]#0, %[[OUT]]#1
// CHECK: attn_gpu.kernel @attention
// CHECK-SAME: plan = <latent,
// CHECK-SAME: output = !attn.out<1x16x512xbf16>
// CHECK-SAME: merge_splits
// CHECK: attn_gpu.is_scorer
// CHECK: attn_gpu.store_state
// CHECK-NOT: attn_gpu.merge_splits
// CHECK: attn_gpu.store_state
// CHECK-NOT: attn_gpu.merge_splits
// CHECK-NOT: attn_gpu.merge_kernel
func.func @mla_decode(%q: !attn.q<1x16x576xbf16>,
                      %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> (!attn.out<1x16x512xbf16>, !attn.lse<1x16>) {
  %out, %lse = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x16x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>
      -> !attn.out<1x16x512xbf16>, !attn.lse<1x16>
  return %out, %lse : !attn.out<1x16x512xbf16>, !attn.lse<1x16>
}

// -----

// The warp-specialized prefill does not split its keys: one launch, and a
// kernel with nothing to merge.
// CHECK-LABEL: func.func @prefill
// CHECK: %[[OUT:.+]] = attn_gpu.launch @attention
// CHECK-NEXT: return %[[OUT]]
// CHECK: attn_gpu.kernel @attention
// CHECK-SAME: plan = <warp_specialized,
// CHECK-NOT: merge_splits
func.func @prefill(%q: !attn.q<?x8x128xbf16>, %k: !attn.kv<?x2x128xbf16>,
                   %v: !attn.kv<?x2x128xbf16>) -> !attn.out<?x8x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x128xbf16>, !attn.kv<?x2x128xbf16>, !attn.kv<?x2x128xbf16>
      -> !attn.out<?x8x128xbf16>
  return %out : !attn.out<?x8x128xbf16>
}
