// RUN: attn-opt %s -split-input-file -attn-plan -attn-split-kv | FileCheck %s

// Decode is split over the keys: f32 partial states, then their merge.
// CHECK-LABEL: func.func @decode
// CHECK: %[[O:.+]], %[[L:.+]] = attn.attention
// CHECK-SAME: kv_splits = 16 : i64
// CHECK-SAME: -> !attn.out<1x32x128xf32>, !attn.lse<1x32>
// CHECK: %[[OUT:.+]], %[[LSE:.+]] = attn.merge_states (%[[O]], %[[L]]) {kv_splits = 16 : i64} : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
// CHECK: return %[[OUT]], %[[LSE]]
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                  %v: !attn.kv<?x8x128xbf16>) -> (!attn.out<1x32x128xbf16>, !attn.lse<1x32>) {
  %out, %lse = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<1x32x128xbf16>, !attn.lse<1x32>
  return %out, %lse : !attn.out<1x32x128xbf16>, !attn.lse<1x32>
}

// -----

// Prefill has work for every multiprocessor already and is not split.
// CHECK-LABEL: func.func @prefill
// CHECK: attn.attention
// CHECK-NOT: kv_splits = {{[0-9]+}} : i64
// CHECK-NOT: attn.merge_states
func.func @prefill(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                   %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}
