// RUN: attn-opt %s | attn-opt | FileCheck %s

// A shared level of cascade attention: the node's rows see all its keys,
// with a score_mod that reads only the score and the head.
// CHECK-LABEL: func.func @shared_prefix_level
// CHECK: attn.attention(%{{.+}}, %{{.+}}, %{{.+}}) {shared_keys, softcap = 3.000000e+01 : f32}
// CHECK: score_mod
func.func @shared_prefix_level(%q: !attn.q<?x32x128xbf16, ragged>,
                               %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
                               %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>) {
  %out, %lse = attn.attention(%q, %k, %v) {shared_keys, softcap = 30.0 : f32}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, paged<16, nhd>>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<?x32x128xbf16, ragged>, !attn.lse<?x32, ragged>
      score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index, %ql: index, %kl: index):
    %i = arith.index_cast %h : index to i32
    %f = arith.sitofp %i : i32 to f32
    %r = arith.addf %s, %f : f32
    attn.yield %r : f32
  }
  return
}
