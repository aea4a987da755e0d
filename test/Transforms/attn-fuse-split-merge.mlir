// RUN: attn-opt %s -split-input-file -attn-plan -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu -attn-fuse-split-merge | FileCheck %s

// A decode step's split-KV kernel merges its own splits: one launch with
// the merge's results, no merge kernel.
// CHECK-LABEL: func.func @decode
// CHECK: %[[OUT:.+]]:2 = attn_gpu.launch @attention(%{{.+}}, %{{.+}}, %{{.+}}) {geometry = #attn_gpu.launch<threads = 128, smem = {{[0-9]+}}, block_m = 8, kv_splits = 16>}
// CHECK-SAME: -> (!attn.out<1x32x128xbf16>, !attn.lse<1x32>)
// CHECK-NOT: attn_gpu.launch
// CHECK: return %[[OUT]]#0, %[[OUT]]#1
// CHECK: attn_gpu.kernel @attention
// CHECK-SAME: output = !attn.out<1x32x128xbf16>
// CHECK-SAME: merge_splits
// CHECK: attn_gpu.store_state
// CHECK-NEXT: attn_gpu.merge_splits
// CHECK-NOT: attn_gpu.merge_kernel
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                  %v: !attn.kv<?x8x128xbf16>) -> (!attn.out<1x32x128xbf16>, !attn.lse<1x32>) {
  %out, %lse = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xbf16>, !attn.lse<1x32>
  return %out, %lse : !attn.out<1x32x128xbf16>, !attn.lse<1x32>
}

// -----

// Partial states that the function also returns stay in their buffers:
// the split and its merge remain two launches.
// CHECK-LABEL: func.func @partials_returned
// CHECK: %[[PART:.+]]:2 = attn_gpu.launch @attention
// CHECK-SAME: -> (!attn.out<1x32x128xf32>, !attn.lse<1x32>)
// CHECK: %[[MERGED:.+]]:2 = attn_gpu.launch @merge(%[[PART]]#0, %[[PART]]#1)
// CHECK: return %[[MERGED]]#0, %[[PART]]#0
// CHECK: attn_gpu.kernel @attention
// CHECK-NOT: merge_splits
// CHECK: attn_gpu.merge_kernel @merge
func.func @partials_returned(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                             %v: !attn.kv<?x8x128xbf16>)
    -> (!attn.out<1x32x128xbf16>, !attn.out<1x32x128xf32>) {
  %o, %l = attn.attention(%q, %k, %v) {kv_splits = 4 : i64}
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xf32>, !attn.lse<1x32>
  %out, %lse = attn.merge_states (%o, %l) {kv_splits = 4 : i64}
      : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
  return %out, %o : !attn.out<1x32x128xbf16>, !attn.out<1x32x128xf32>
}

// -----

// A merge of two attentions' states (cascade) is no split: it keeps its
// kernel.
// CHECK-LABEL: func.func @cascade
// CHECK: attn_gpu.launch @merge
// CHECK: attn_gpu.merge_kernel @merge
func.func @cascade(%o1: !attn.out<1x32x128xf32>, %l1: !attn.lse<1x32>,
                   %o2: !attn.out<1x32x128xf32>, %l2: !attn.lse<1x32>)
    -> !attn.out<1x32x128xbf16> {
  %out, %lse = attn.merge_states (%o1, %l1), (%o2, %l2)
      : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}
