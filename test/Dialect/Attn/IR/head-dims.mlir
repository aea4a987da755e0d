// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Different head dims for QK (192) and V (128), as in DeepSeek prefill.
// CHECK-LABEL: func.func @qk_192_v_128
// CHECK: -> !attn.out<?x16x128xbf16, ragged>
func.func @qk_192_v_128(%q: !attn.q<?x16x192xbf16, ragged>,
                        %k: !attn.kv<?x16x192xbf16, ragged>,
                        %v: !attn.kv<?x16x128xbf16, ragged>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x16x192xbf16, ragged>, !attn.kv<?x16x192xbf16, ragged>,
        !attn.kv<?x16x128xbf16, ragged>
      -> !attn.out<?x16x128xbf16, ragged>
  return
}

// -----

// An uneven head dim (96) and the largest common one (256).
// CHECK-LABEL: func.func @dims_96_and_256
// CHECK-SAME: !attn.q<?x32x96xf16>
// CHECK-SAME: !attn.kv<?x8x256xbf16>
func.func @dims_96_and_256(%a: !attn.q<?x32x96xf16>, %b: !attn.kv<?x8x256xbf16>) {
  return
}
