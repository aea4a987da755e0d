// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Single-token decode, a padded batch and a packed batch of queries.
// CHECK-LABEL: func.func @query_layouts
// CHECK-SAME: !attn.q<1x32x128xbf16>
// CHECK-SAME: !attn.q<?x32x128xbf16>
// CHECK-SAME: !attn.q<?x32x128xf16, ragged>
func.func @query_layouts(%a: !attn.q<1x32x128xbf16>, %b: !attn.q<?x32x128xbf16>,
                         %c: !attn.q<?x32x128xf16, ragged>) {
  return
}

// -----

// An explicit dense layout is the default and prints without it.
// CHECK-LABEL: func.func @explicit_dense
// CHECK-SAME: !attn.q<512x8x64xbf16>)
func.func @explicit_dense(%a: !attn.q<512x8x64xbf16, dense>) {
  return
}
