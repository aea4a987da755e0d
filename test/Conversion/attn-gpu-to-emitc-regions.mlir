// RUN: attn-opt %s -attn-plan -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu -attn-gpu-to-emitc | FileCheck %s

// Every op regions admit lowers: each math function to its CUDA function,
// signed index division on ptrdiff_t (size_t is unsigned), bitwise ops and
// shifts on index values through 64-bit integers, and the request's
// lengths reach both regions. The ctest regions-compile-to-cubin compiles
// this file with NVRTC and requires no spills.
// CHECK-LABEL: func.func @every_region_op
// CHECK: func @attention_score_mod(%[[S:.+]]: f32, %{{.+}}: !emitc.size_t, %{{.+}}: !emitc.size_t, %{{.+}}: !emitc.size_t, %{{.+}}: !emitc.size_t, %{{.+}}: !emitc.size_t, %{{.+}}: !emitc.size_t, %{{.+}}: !emitc.ptr<!emitc.opaque<"const attnc::AttnParams">>) -> f32
// CHECK: call_opaque "fabsf"(%[[S]])
// CHECK: call_opaque "acosf"
// CHECK: call_opaque "acoshf"
// CHECK: call_opaque "asinf"
// CHECK: call_opaque "asinhf"
// CHECK: call_opaque "atanf"
// CHECK: call_opaque "atan2f"
// CHECK: call_opaque "atanhf"
// CHECK: call_opaque "cbrtf"
// CHECK: call_opaque "ceilf"
// CHECK: call_opaque "copysignf"
// CHECK: call_opaque "cosf"
// CHECK: call_opaque "coshf"
// CHECK: call_opaque "erff"
// CHECK: call_opaque "erfcf"
// CHECK: call_opaque "expf"
// CHECK: call_opaque "exp2f"
// CHECK: call_opaque "expm1f"
// CHECK: call_opaque "floorf"
// CHECK: call_opaque "fmaf"
// CHECK: call_opaque "logf"
// CHECK: call_opaque "log10f"
// CHECK: call_opaque "log1pf"
// CHECK: call_opaque "log2f"
// CHECK: call_opaque "powf"
// CHECK: call_opaque "roundf"
// CHECK: call_opaque "rintf"
// CHECK: call_opaque "rsqrtf"
// CHECK: call_opaque "sinf"
// CHECK: call_opaque "sinhf"
// CHECK: call_opaque "sqrtf"
// CHECK: call_opaque "tanf"
// CHECK: call_opaque "tanhf"
// CHECK: call_opaque "truncf"
// CHECK: call_opaque "fmodf"
// CHECK: func @attention_mask_mod(%{{.+}}: !emitc.size_t, %{{.+}}: !emitc.size_t, %[[QI:.+]]: !emitc.size_t, %[[KVI:.+]]: !emitc.size_t, %[[QL:.+]]: !emitc.size_t, %[[KL:.+]]: !emitc.size_t, %{{.+}}: !emitc.ptr<!emitc.opaque<"const attnc::AttnParams">>) -> i1
// CHECK: %[[END:.+]] = add %[[QI]], %[[KL]] : (!emitc.size_t, !emitc.size_t) -> !emitc.size_t
// CHECK: %[[POS:.+]] = sub %[[END]], %[[QL]] : (!emitc.size_t, !emitc.size_t) -> !emitc.size_t
// CHECK: %[[REL:.+]] = sub %[[KVI]], %[[POS]]
// CHECK: %[[SREL:.+]] = cast %[[REL]] : !emitc.size_t to !emitc.ptrdiff_t
// CHECK: div %[[SREL]], %{{.+}} : (!emitc.ptrdiff_t, !emitc.ptrdiff_t) -> !emitc.ptrdiff_t
// CHECK: bitwise_right_shift %{{.+}}, %{{.+}} : (ui64, ui64) -> ui64
// CHECK: bitwise_and %{{.+}}, %{{.+}} : (ui64, ui64) -> ui64
// CHECK: bitwise_left_shift %{{.+}}, %{{.+}} : (ui64, ui64) -> ui64
// CHECK: bitwise_right_shift %{{.+}}, %{{.+}} : (i64, ui64) -> i64
// CHECK: bitwise_or %{{.+}}, %{{.+}} : (ui64, ui64) -> ui64
// CHECK: bitwise_xor %{{.+}}, %{{.+}} : (ui64, ui64) -> ui64
// CHECK: verbatim "struct attention_config {
// CHECK-SAME: return i < qLen && j < kvLen ? attention_score_mod(s, b, h, i, j, qLen, kvLen, &p) : s;
// CHECK-SAME: return attention_mask_mod(b, h, i, j, qLen, kvLen, &p);
func.func @every_region_op(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                           %v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kvi: index, %q_len: index, %kv_len: index):
        %half = arith.constant 0.5 : f32
        %one = arith.constant 1.0 : f32
        %a = math.absf %s : f32
        %t = math.tanh %s : f32
        %u = arith.mulf %t, %half : f32
        %f0 = math.acos %u : f32
        %a1 = arith.addf %a, %one : f32
        %f1 = math.acosh %a1 : f32
        %f2 = math.asin %u : f32
        %f3 = math.asinh %s : f32
        %f4 = math.atan %s : f32
        %f5 = math.atan2 %s, %a1 : f32
        %f6 = math.atanh %u : f32
        %f7 = math.cbrt %s : f32
        %f8 = math.ceil %s : f32
        %f9 = math.copysign %half, %s : f32
        %f10 = math.cos %s : f32
        %f11 = math.cosh %u : f32
        %f12 = math.erf %s : f32
        %f13 = math.erfc %s : f32
        %f14 = math.exp %u : f32
        %f15 = math.exp2 %u : f32
        %f16 = math.expm1 %u : f32
        %f17 = math.floor %s : f32
        %f18 = math.fma %s, %half, %one : f32
        %f19 = math.log %a1 : f32
        %f20 = math.log10 %a1 : f32
        %f21 = math.log1p %a : f32
        %f22 = math.log2 %a1 : f32
        %f23 = math.powf %a1, %half : f32
        %f24 = math.round %s : f32
        %f25 = math.roundeven %s : f32
        %f26 = math.rsqrt %a1 : f32
        %f27 = math.sin %s : f32
        %f28 = math.sinh %u : f32
        %f29 = math.sqrt %a : f32
        %f30 = math.tan %u : f32
        %f31 = math.tanh %s : f32
        %f32 = math.trunc %s : f32
        %f33 = arith.remf %s, %a1 : f32
        %g0 = arith.addf %f0, %f1 : f32
        %g1 = arith.subf %g0, %f2 : f32
        %g2 = arith.mulf %g1, %f3 : f32
        %g3 = arith.divf %g2, %a1 : f32
        %g4 = arith.negf %g3 : f32
        %g5 = arith.maximumf %g4, %f4 : f32
        %g6 = arith.minimumf %g5, %f5 : f32
        %g7 = arith.maxnumf %g6, %f6 : f32
        %g8 = arith.minnumf %g7, %f7 : f32
        %h0 = arith.addf %f8, %f9 : f32
        %h1 = arith.addf %h0, %f10 : f32
        %h2 = arith.addf %h1, %f11 : f32
        %h3 = arith.addf %h2, %f12 : f32
        %h4 = arith.addf %h3, %f13 : f32
        %h5 = arith.addf %h4, %f14 : f32
        %h6 = arith.addf %h5, %f15 : f32
        %h7 = arith.addf %h6, %f16 : f32
        %h8 = arith.addf %h7, %f17 : f32
        %h9 = arith.addf %h8, %f18 : f32
        %h10 = arith.addf %h9, %f19 : f32
        %h11 = arith.addf %h10, %f20 : f32
        %h12 = arith.addf %h11, %f21 : f32
        %h13 = arith.addf %h12, %f22 : f32
        %h14 = arith.addf %h13, %f23 : f32
        %h15 = arith.addf %h14, %f24 : f32
        %h16 = arith.addf %h15, %f25 : f32
        %h17 = arith.addf %h16, %f26 : f32
        %h18 = arith.addf %h17, %f27 : f32
        %h19 = arith.addf %h18, %f28 : f32
        %h20 = arith.addf %h19, %f29 : f32
        %h21 = arith.addf %h20, %f30 : f32
        %h22 = arith.addf %h21, %f31 : f32
        %h23 = arith.addf %h22, %f32 : f32
        %h24 = arith.addf %h23, %f33 : f32
        %h25 = arith.addf %h24, %g8 : f32
        // Integer and cast ops on the score: fptosi, fptoui, sitofp, uitofp.
        %si = arith.fptosi %h25 : f32 to i32
        %ui = arith.fptoui %a : f32 to i64
        %sf = arith.sitofp %si : i32 to f32
        %uf = arith.uitofp %ui : i64 to f32
        %pos = arith.cmpf ogt, %s, %sf : f32
        %nan = arith.cmpf uno, %s, %uf : f32
        %pick = arith.ori %pos, %nan : i1
        %r = arith.select %pick, %h25, %uf : f32
        attn.yield %r : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kvi: index, %q_len: index, %kv_len: index):
        %c1 = arith.constant 1 : index
        %c4 = arith.constant 4 : index
        %c64 = arith.constant 64 : index
        // The aligned position of the query, and the key's offset from it.
        %end = arith.addi %qi, %kv_len : index
        %pos = arith.subi %end, %q_len : index
        %rel = arith.subi %kvi, %pos : index
        %d0 = arith.divsi %rel, %c4 : index
        %d1 = arith.remsi %rel, %c4 : index
        %d2 = arith.floordivsi %rel, %c4 : index
        %d3 = arith.ceildivsi %rel, %c4 : index
        %d4 = arith.divui %kvi, %c4 : index
        %d5 = arith.remui %kvi, %c4 : index
        %d6 = arith.ceildivui %kvi, %c4 : index
        %m0 = arith.minsi %d0, %d1 : index
        %m1 = arith.maxsi %d2, %d3 : index
        %m2 = arith.minui %d4, %d5 : index
        %m3 = arith.maxui %d6, %c1 : index
        %n0 = arith.muli %m0, %m1 : index
        %n1 = arith.addi %n0, %m2 : index
        %n2 = arith.subi %n1, %m3 : index
        %n3 = math.absi %n2 : index
        // Bitwise ops and shifts on index values: a packed mask's word and
        // bit of a key.
        %c5 = arith.constant 5 : index
        %c31 = arith.constant 31 : index
        %word = arith.shrui %kvi, %c5 : index
        %bitpos = arith.andi %kvi, %c31 : index
        %o0 = arith.shli %word, %c1 : index
        %o1 = arith.shrsi %rel, %c1 : index
        %o2 = arith.ori %o0, %bitpos : index
        %o3 = arith.xori %o2, %o1 : index
        %n4 = arith.addi %n3, %o3 : index
        %i0 = arith.index_cast %n4 : index to i32
        %i1 = arith.index_castui %h : index to i64
        %i2 = arith.extsi %i0 : i32 to i64
        %i3 = arith.extui %i0 : i32 to i64
        %i4 = arith.trunci %i1 : i64 to i32
        %j0 = arith.andi %i2, %i3 : i64
        %j1 = arith.ori %j0, %i1 : i64
        %j2 = arith.xori %j1, %i3 : i64
        %sh = arith.constant 2 : i32
        %j3 = arith.shli %i4, %sh : i32
        %j4 = arith.shrsi %i0, %sh : i32
        %j5 = arith.shrui %j3, %sh : i32
        %j6 = math.absi %j4 : i32
        %j7 = arith.trunci %j2 : i64 to i32
        %j8 = arith.addi %j5, %j6 : i32
        %j9 = arith.addi %j8, %j7 : i32
        %bit = arith.trunci %j9 : i32 to i1
        %bi = arith.extui %bit : i1 to i32
        %bf = arith.uitofp %bit : i1 to f32
        %bx = arith.index_castui %bit : i1 to index
        // Causal at the aligned position, far keys hidden, a pattern on top.
        %causal = arith.cmpi ule, %kvi, %pos : index
        %near = arith.cmpi slt, %rel, %c64 : index
        %zero = arith.constant 0 : i32
        %odd = arith.cmpi ne, %bi, %zero : i32
        %zf = arith.constant 0.0 : f32
        %big = arith.cmpf oge, %bf, %zf : f32
        %bz = arith.cmpi uge, %bx, %c1 : index
        %t0 = arith.andi %causal, %near : i1
        %t1 = arith.xori %odd, %bz : i1
        %t2 = arith.ori %t1, %big : i1
        %same = arith.cmpi eq, %t0, %t2 : i1
        %keep = arith.select %same, %t0, %causal : i1
        attn.yield %keep : i1
      }
  return %out : !attn.out<?x8x64xbf16>
}
