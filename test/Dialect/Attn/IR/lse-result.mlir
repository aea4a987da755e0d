// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// The log-sum-exp result is optional; here it is asked for.
// CHECK-LABEL: func.func @with_lse
// CHECK: %[[OUT:.+]], %[[LSE:.+]] = attn.attention
// CHECK-SAME: -> !attn.out<?x8x64xbf16, ragged>, !attn.lse<?x8, ragged>
// CHECK: return %[[OUT]], %[[LSE]]
func.func @with_lse(%q: !attn.q<?x8x64xbf16, ragged>, %k: !attn.kv<?x8x64xbf16, ragged>,
                    %v: !attn.kv<?x8x64xbf16, ragged>)
    -> (!attn.out<?x8x64xbf16, ragged>, !attn.lse<?x8, ragged>) {
  %out, %lse = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, ragged>, !attn.kv<?x8x64xbf16, ragged>
      -> !attn.out<?x8x64xbf16, ragged>, !attn.lse<?x8, ragged>
  return %out, %lse : !attn.out<?x8x64xbf16, ragged>, !attn.lse<?x8, ragged>
}
