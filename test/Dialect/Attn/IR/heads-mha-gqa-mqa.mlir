// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Multi-head attention: as many KV heads as query heads.
// CHECK-LABEL: func.func @mha
// CHECK-SAME: (%[[Q:.+]]: !attn.q<?x32x128xbf16>, %[[K:.+]]: !attn.kv<?x32x128xbf16>, %[[V:.+]]: !attn.kv<?x32x128xbf16>)
// CHECK: attn.attention(%[[Q]], %[[K]], %[[V]])
func.func @mha(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x32x128xbf16>,
               %v: !attn.kv<?x32x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x32x128xbf16>, !attn.kv<?x32x128xbf16>, !attn.kv<?x32x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}

// -----

// Grouped-query attention with a group of 7, not a power of two.
// CHECK-LABEL: func.func @gqa_group_7
// CHECK: attn.attention({{.*}}) : !attn.q<?x28x128xbf16>, !attn.kv<?x4x128xbf16>, !attn.kv<?x4x128xbf16> -> !attn.out<?x28x128xbf16>
func.func @gqa_group_7(%q: !attn.q<?x28x128xbf16>, %k: !attn.kv<?x4x128xbf16>,
                       %v: !attn.kv<?x4x128xbf16>) -> !attn.out<?x28x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x28x128xbf16>, !attn.kv<?x4x128xbf16>, !attn.kv<?x4x128xbf16>
      -> !attn.out<?x28x128xbf16>
  return %out : !attn.out<?x28x128xbf16>
}

// -----

// Multi-query attention: one KV head for all query heads.
// CHECK-LABEL: func.func @mqa
// CHECK: attn.attention({{.*}}) : !attn.q<1x16x64xbf16>, !attn.kv<?x1x64xbf16>
func.func @mqa(%q: !attn.q<1x16x64xbf16>, %k: !attn.kv<?x1x64xbf16>,
               %v: !attn.kv<?x1x64xbf16>) -> !attn.out<1x16x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x16x64xbf16>, !attn.kv<?x1x64xbf16>, !attn.kv<?x1x64xbf16>
      -> !attn.out<1x16x64xbf16>
  return %out : !attn.out<1x16x64xbf16>
}
