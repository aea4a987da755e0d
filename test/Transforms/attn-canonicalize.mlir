// RUN: attn-opt %s -split-input-file -attn-canonicalize -allow-unregistered-dialect | FileCheck %s

// Repeated KV heads are read grouped: the repeats disappear.
// CHECK-LABEL: func.func @repeat_kv_becomes_gqa
// CHECK-SAME: (%[[Q:[^:]+]]: {{.*}}, %[[K:[^:]+]]: {{.*}}, %[[V:[^:]+]]: {{.*}})
// CHECK-NOT: attn.repeat_kv
// CHECK: attn.attention(%[[Q]], %[[K]], %[[V]]) : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
func.func @repeat_kv_becomes_gqa(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                                 %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %k32 = attn.repeat_kv %k by 4 : !attn.kv<?x8x128xbf16> -> !attn.kv<?x32x128xbf16>
  %v32 = attn.repeat_kv %v by 4 : !attn.kv<?x8x128xbf16> -> !attn.kv<?x32x128xbf16>
  %out = attn.attention(%q, %k32, %v32)
      : !attn.q<?x32x128xbf16>, !attn.kv<?x32x128xbf16>, !attn.kv<?x32x128xbf16> -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}

// -----

// A repeat by 1 is MHA and folds away wherever it is used.
// CHECK-LABEL: func.func @repeat_by_one_is_mha
// CHECK-SAME: (%[[K:[^:]+]]: !attn.kv<?x8x64xbf16>)
// CHECK-NEXT: return %[[K]]
func.func @repeat_by_one_is_mha(%k: !attn.kv<?x8x64xbf16>) -> !attn.kv<?x8x64xbf16> {
  %r = attn.repeat_kv %k by 1 : !attn.kv<?x8x64xbf16> -> !attn.kv<?x8x64xbf16>
  return %r : !attn.kv<?x8x64xbf16>
}

// -----

// A window with right extent 0 is causal, and says so.
// CHECK-LABEL: func.func @window_right_zero_is_causal
// CHECK: {causal, window = #attn.window<256, 0>}
func.func @window_right_zero_is_causal(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {window = #attn.window<256, 0>}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// A window at least as long as every request is plain causal attention.
// CHECK-LABEL: func.func @window_covering_kv_is_causal
// CHECK: attn.attention(%{{.*}}) {causal} :
func.func @window_covering_kv_is_causal(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<4096x8x64xbf16>, %v: !attn.kv<4096x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<4095, 0>, sinks = 4}
      : !attn.q<?x8x64xbf16>, !attn.kv<4096x8x64xbf16>, !attn.kv<4096x8x64xbf16> -> !attn.out<?x8x64xbf16>
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// One key short of covering, the window and its sinks stay.
// CHECK-LABEL: func.func @window_one_short_stays
// CHECK: {causal, sinks = 4 : i64, window = #attn.window<4094, 0>}
func.func @window_one_short_stays(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<4096x8x64xbf16>, %v: !attn.kv<4096x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<4094, 0>, sinks = 4}
      : !attn.q<?x8x64xbf16>, !attn.kv<4096x8x64xbf16>, !attn.kv<4096x8x64xbf16> -> !attn.out<?x8x64xbf16>
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// A single query sits at the last position: causal masks nothing there.
// CHECK-LABEL: func.func @decode_causal_is_no_mask
// CHECK: attn.attention(%{{.*}}) : !attn.q<1x8x64xbf16>
func.func @decode_causal_is_no_mask(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xbf16>
  "test.use"(%out) : (!attn.out<1x8x64xbf16>) -> ()
  return
}

// -----

// Decode keeps its window's left bound but not the causal flag.
// CHECK-LABEL: func.func @decode_window_keeps_left_bound
// CHECK: {sinks = 4 : i64, window = #attn.window<1024, 0>}
func.func @decode_window_keeps_left_bound(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {causal, window = #attn.window<1024, 0>, sinks = 4}
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xbf16>
  "test.use"(%out) : (!attn.out<1x8x64xbf16>) -> ()
  return
}

// -----

// Sinks only exempt keys from a window's left bound; without one, or when
// there are none, they go.
// CHECK-LABEL: func.func @sinks_without_window
// CHECK: attn.attention(%{{.*}}) {causal} :
// CHECK: attn.attention(%{{.*}}) {causal, window = #attn.window<64, 0>} :
func.func @sinks_without_window(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %a = attn.attention(%q, %k, %v) {causal, sinks = 4}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  %b = attn.attention(%q, %k, %v) {causal, window = #attn.window<64, 0>, sinks = 0}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  "test.use"(%a, %b) : (!attn.out<?x8x64xbf16>, !attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// A score_mod that is c * tanh(s / c) is the softcap attribute.
// CHECK-LABEL: func.func @softcap_from_division
// CHECK: {softcap = 5.000000e+01 : f32}
// CHECK-NOT: score_mod
func.func @softcap_from_division(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c = arith.constant 50.0 : f32
        %d = arith.divf %s, %c : f32
        %t = math.tanh %d : f32
        %r = arith.mulf %c, %t : f32
        attn.yield %r : f32
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// The same soft-cap written with a reciprocal multiply.
// CHECK-LABEL: func.func @softcap_from_reciprocal
// CHECK: {softcap = 3.000000e+01 : f32}
// CHECK-NOT: score_mod
func.func @softcap_from_reciprocal(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %inv = arith.constant 0.0333333351 : f32
        %c = arith.constant 30.0 : f32
        %d = arith.mulf %s, %inv : f32
        %t = math.tanh %d : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// ALiBi applies before score_mod, so a soft-cap region cannot move ahead
// of it into the attribute.
// CHECK-LABEL: func.func @softcap_after_alibi_stays
// CHECK: {alibi}
// CHECK: score_mod
// CHECK: math.tanh
func.func @softcap_after_alibi_stays(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v) {alibi}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c = arith.constant 50.0 : f32
        %d = arith.divf %s, %c : f32
        %t = math.tanh %d : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// Multiplying the score by a constant folds into the scale (0.125 * 2).
// CHECK-LABEL: func.func @constant_factor_into_scale
// CHECK: {scale = 2.500000e-01 : f32}
// CHECK-NOT: score_mod
func.func @constant_factor_into_scale(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c = arith.constant 2.0 : f32
        %r = arith.mulf %s, %c : f32
        attn.yield %r : f32
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// Identity score_mod and always-true mask_mod modify nothing; the captures
// they alone declared are dropped too.
// CHECK-LABEL: func.func @trivial_regions
// CHECK: attn.attention(%{{[^)]*}}) :
// CHECK-NOT: captures
// CHECK-NOT: score_mod
// CHECK-NOT: mask_mod
func.func @trivial_regions(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>, %buf: memref<8xf32>) {
  %out = attn.attention(%q, %k, %v) captures(%buf : memref<8xf32>)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index, %x: memref<8xf32>):
        attn.yield %s : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index, %x: memref<8xf32>):
        %t = arith.constant true
        attn.yield %t : i1
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// Of two captures, the one a region reads stays, renumbered.
// CHECK-LABEL: func.func @unused_capture
// CHECK-SAME: %[[A:[^:]+]]: memref<8xf32>, %[[B:[^:]+]]: memref<8xf32>
// CHECK: captures(%[[B]] : memref<8xf32>)
// CHECK: ^bb0(%{{.+}}: f32, %{{.+}}: index, %[[H:.+]]: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %[[BUF:.+]]: memref<8xf32>):
// CHECK: memref.load %[[BUF]][%[[H]]]
func.func @unused_capture(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>,
                          %a: memref<8xf32>, %b: memref<8xf32>) {
  %out = attn.attention(%q, %k, %v) captures(%a, %b : memref<8xf32>, memref<8xf32>)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %bt: index, %h: index, %i: index, %j: index, %ql: index, %kl: index, %x: memref<8xf32>, %y: memref<8xf32>):
        %m = memref.load %y[%h] : memref<8xf32>
        %r = arith.addf %s, %m : f32
        attn.yield %r : f32
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// The default scale 1/sqrt(64) is implied; another scale stays.
// CHECK-LABEL: func.func @default_scale
// CHECK: attn.attention(%{{.*}}) :
// CHECK: attn.attention(%{{.*}}) {scale = 1.000000e-01 : f32} :
func.func @default_scale(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %a = attn.attention(%q, %k, %v) {scale = 0.125 : f32}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  %b = attn.attention(%q, %k, %v) {scale = 0.1 : f32}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  "test.use"(%a, %b) : (!attn.out<?x8x64xbf16>, !attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// Constants inside a region fold: 0.5 + 0.25 becomes one constant.
// CHECK-LABEL: func.func @fold_in_region
// CHECK: score_mod {
// CHECK: %[[C:.+]] = arith.constant 7.500000e-01 : f32
// CHECK: %[[R:.+]] = arith.subf %{{.+}}, %[[C]] : f32
// CHECK: attn.yield %[[R]]
func.func @fold_in_region(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %a = arith.constant 0.5 : f32
        %c = arith.constant 0.25 : f32
        %sum = arith.addf %a, %c : f32
        %r = arith.subf %s, %sum : f32
        attn.yield %r : f32
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}

// -----

// A compare whose predicate is `false` is the constant false, folded before
// MLIR 22's int-to-float compare pattern (which crashes on it) can run.
// CHECK-LABEL: func.func @cmpf_false_is_false
// CHECK: mask_mod {
// CHECK: %[[F:.+]] = arith.constant false
// CHECK-NEXT: attn.yield %[[F]] : i1
func.func @cmpf_false_is_false(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %n = arith.index_cast %j : index to i32
        %x = arith.sitofp %n : i32 to f32
        %c = arith.constant -2.5 : f32
        %m = arith.cmpf false, %x, %c : f32
        attn.yield %m : i1
      }
  "test.use"(%out) : (!attn.out<?x8x64xbf16>) -> ()
  return
}
