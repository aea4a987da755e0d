// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// repeat_kv expands 8 KV heads by 4.
// CHECK-LABEL: func.func @repeat
// CHECK: attn.repeat_kv %{{.+}} by 4 : !attn.kv<?x8x128xbf16, paged<16, nhd>> -> !attn.kv<?x32x128xbf16, paged<16, nhd>>
func.func @repeat(%k: !attn.kv<?x8x128xbf16, paged<16, nhd>>) -> !attn.kv<?x32x128xbf16, paged<16, nhd>> {
  %r = attn.repeat_kv %k by 4 : !attn.kv<?x8x128xbf16, paged<16, nhd>> -> !attn.kv<?x32x128xbf16, paged<16, nhd>>
  return %r : !attn.kv<?x32x128xbf16, paged<16, nhd>>
}
