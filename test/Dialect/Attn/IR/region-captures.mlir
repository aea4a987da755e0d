// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s

// Captured buffers appear as trailing block arguments of both regions.
// CHECK-LABEL: func.func @per_head_bias
// CHECK-SAME: %[[SLOPES:[^:]+]]: memref<8xf32>
// CHECK: captures(%[[SLOPES]] : memref<8xf32>)
// CHECK: ^bb0(%{{.+}}: f32, %{{.+}}: index, %[[H:.+]]: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %[[BUF:.+]]: memref<8xf32>):
// CHECK: memref.load %[[BUF]][%[[H]]] : memref<8xf32>
func.func @per_head_bias(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>,
                         %slopes: memref<8xf32>) {
  %out = attn.attention(%q, %k, %v) captures(%slopes : memref<8xf32>)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index, %buf: memref<8xf32>):
        %m = memref.load %buf[%h] : memref<8xf32>
        %r = arith.addf %s, %m : f32
        attn.yield %r : f32
      }
  return
}
