// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// A mask_mod yields i1: here, only even keys are visible.
// CHECK-LABEL: func.func @even_keys
// CHECK: mask_mod {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %[[J:.+]]: index, %{{.+}}: index, %{{.+}}: index):
// CHECK: arith.remui %[[J]]
// CHECK: attn.yield %{{.+}} : i1
func.func @even_keys(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c2 = arith.constant 2 : index
        %c0 = arith.constant 0 : index
        %r = arith.remui %j, %c2 : index
        %e = arith.cmpi eq, %r, %c0 : index
        attn.yield %e : i1
      }
  return
}

// -----

// score_mod and mask_mod together, the score_mod printed first.
// CHECK-LABEL: func.func @both_regions
// CHECK: score_mod {
// CHECK: mask_mod {
func.func @both_regions(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %t = math.tanh %s : f32
        attn.yield %t : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %le = arith.cmpi ule, %j, %i : index
        attn.yield %le : i1
      }
  return
}

// -----

// A mask_mod sees the request's lengths: causal at the aligned position
// qi + kv_len - q_len, right under chunked prefill and decode.
// CHECK-LABEL: func.func @aligned_causal
// CHECK: mask_mod {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[QI:.+]]: index, %[[KVI:.+]]: index, %[[QLEN:.+]]: index, %[[KVLEN:.+]]: index):
// CHECK: %[[END:.+]] = arith.addi %[[QI]], %[[KVLEN]] : index
// CHECK: %[[POS:.+]] = arith.subi %[[END]], %[[QLEN]] : index
// CHECK: %[[SEEN:.+]] = arith.cmpi ule, %[[KVI]], %[[POS]] : index
// CHECK: attn.yield %[[SEEN]] : i1
func.func @aligned_causal(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kvi: index, %q_len: index, %kv_len: index):
        %end = arith.addi %qi, %kv_len : index
        %pos = arith.subi %end, %q_len : index
        %seen = arith.cmpi ule, %kvi, %pos : index
        attn.yield %seen : i1
      }
  return
}
