// RUN: attn-opt %s | FileCheck %s

// A region's arguments may reuse the function's value names: `%q` and `%k`
// in the score_mod are its query and key indices, not the function's
// queries and keys (the regions are isolated from above).
// CHECK-LABEL: func.func @shadowing
// CHECK: score_mod {
// CHECK: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %{{.+}}: index, %[[Q:.+]]: index, %[[K:.+]]: index, %{{.+}}: index, %{{.+}}: index):
// CHECK: arith.subi %[[K]], %[[Q]] : index
func.func @shadowing(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                     %v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %q: index, %k: index, %ql: index, %kl: index):
        %d = arith.subi %k, %q : index
        %i = arith.index_cast %d : index to i32
        %f = arith.sitofp %i : i32 to f32
        %r = arith.addf %s, %f : f32
        attn.yield %r : f32
      }
  return %out : !attn.out<?x8x64xbf16>
}
