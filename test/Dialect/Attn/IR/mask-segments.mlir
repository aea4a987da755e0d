// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Document segments of a ragged batch, one id per token.
// CHECK-LABEL: func.func @ragged_segments
// CHECK-SAME: %[[QS:[^:]+]]: memref<?xi32>, %[[KS:[^:]+]]: memref<?xi32>
// CHECK: segments(%[[QS]], %[[KS]] : memref<?xi32>, memref<?xi32>)
func.func @ragged_segments(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, ragged>,
                           %v: !attn.kv<?x8x64xbf16, ragged>,
                           %qs: memref<?xi32>, %ks: memref<?xi32>) {
  %out = attn.attention(%q, %k, %v) segments(%qs, %ks : memref<?xi32>, memref<?xi32>)
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, ragged>
      -> !attn.out<?x8x64xbf16, ragged>
  return
}

// -----

// Segments of a dense batch against a paged cache are [batch, position].
// CHECK-LABEL: func.func @paged_segments
// CHECK: segments({{.*}} : memref<?x?xi32>, memref<?x?xi32>)
func.func @paged_segments(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>,
                          %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>,
                          %qs: memref<?x?xi32>, %ks: memref<?x?xi32>) {
  %out = attn.attention(%q, %k, %v) segments(%qs, %ks : memref<?x?xi32>, memref<?x?xi32>)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16, paged<16, nhd>>, !attn.kv<?x8x64xbf16, paged<16, nhd>>
      -> !attn.out<?x8x64xbf16>
  return
}
