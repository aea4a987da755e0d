// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Causal prefill; causal is aligned bottom-right when q_len < kv_len.
// CHECK-LABEL: func.func @causal
// CHECK: attn.attention({{.*}}) {causal}
func.func @causal(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, paged<16, nhd>>,
                  %v: !attn.kv<?x8x64xbf16, paged<16, nhd>>) {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, paged<16, nhd>>,
        !attn.kv<?x8x64xbf16, paged<16, nhd>>
      -> !attn.out<?x8x64xbf16, ragged>
  return
}
