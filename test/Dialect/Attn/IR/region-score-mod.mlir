// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// A score_mod sees the score and the batch, head, query and key indices.
// CHECK-LABEL: func.func @distance_penalty
// CHECK: score_mod {
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %{{.+}}: index, %[[I:.+]]: index, %[[J:.+]]: index, %{{.+}}: index, %{{.+}}: index):
// CHECK: %[[D:.+]] = arith.subi %[[I]], %[[J]] : index
// CHECK: %[[R:.+]] = arith.subf %[[S]], %{{.+}} : f32
// CHECK: attn.yield %[[R]] : f32
func.func @distance_penalty(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %d = arith.subi %i, %j : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %c = arith.constant 0.01 : f32
        %p = arith.mulf %df, %c : f32
        %r = arith.subf %s, %p : f32
        attn.yield %r : f32
      }
  return
}
