// RUN: attn-opt %examples/gqa_paged_decode.mlir | attn-opt | FileCheck %s

// The paged GQA decode example parses, prints and parses again.
// CHECK-LABEL: func.func @gqa_paged_decode
// CHECK: %[[OUT:.+]], %[[LSE:.+]] = attn.attention(%{{.+}}, %{{.+}}, %{{.+}}) : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
// CHECK: return %[[OUT]], %[[LSE]]
