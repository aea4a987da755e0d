// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Page sizes at both ends of the range and in between, in both page orders.
// CHECK-LABEL: func.func @page_sizes
// CHECK-SAME: !attn.kv<?x8x128xbf16, paged<1, nhd>>
// CHECK-SAME: !attn.kv<?x8x128xbf16, paged<16, nhd>>
// CHECK-SAME: !attn.kv<?x8x128xbf16, paged<64, hnd>>
// CHECK-SAME: !attn.kv<?x8x128xbf16, paged<256, hnd>>
func.func @page_sizes(%a: !attn.kv<?x8x128xbf16, paged<1, nhd>>,
                      %b: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
                      %c: !attn.kv<?x8x128xbf16, paged<64, hnd>>,
                      %d: !attn.kv<?x8x128xbf16, paged<256, hnd>>) {
  return
}
