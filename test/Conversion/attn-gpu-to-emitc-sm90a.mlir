// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_90a" -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu -attn-gpu-to-emitc | FileCheck %s

// The warp-specialized kernel takes its tensor maps in a __grid_constant__
// parameter struct and drives a WarpSpecializedCta from the Hopper header.
// The consumers' tile loop (an scf.while) becomes a do-while: the tile
// index and the loop's condition live in variables, and the issues run
// only where the condition holds. The plan's one KV split reaches the
// configuration, so that the device compiles no split-KV stores.
// CHECK-LABEL: func.func @prefill(
// CHECK: include "attnc/device/hopper/prefill.h"
// CHECK: static constexpr int kKVSplits = 1;
// CHECK: static constexpr bool kClaimItems = true;
// CHECK: verbatim "attnc::WarpSpecializedCta<attention_config> cta;"
// CHECK: call_opaque "cta.begin"{{.*}}!emitc.opaque<"const __grid_constant__ attnc::TmaAttnParams">
// CHECK: call_opaque "cta.isProducer"
// CHECK: call_opaque "cta.beginProducer"
// CHECK: call_opaque "cta.workItems"
// CHECK: call_opaque "cta.beginItem"
// CHECK: call_opaque "cta.produce"
// CHECK: call_opaque "cta.beginConsumer"
// CHECK: call_opaque "cta.beginItem"
// CHECK: call_opaque "cta.beginRows"
// CHECK: call_opaque "cta.waitScores<0>"
// CHECK: %[[TILE:.*]] = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.lvalue<i32>
// CHECK-NEXT: assign %{{.*}} : i32 to %[[TILE]]
// CHECK-NEXT: %[[MORE:.*]] = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.lvalue<i1>
// CHECK-NEXT: do {
// CHECK-NEXT: %[[CURRENT:.*]] = load %[[TILE]]
// CHECK: call_opaque "cta.onlineSoftmax"
// CHECK-NEXT: %[[NEXT:.*]] = add %[[CURRENT]]
// CHECK-NEXT: %[[PROCEED:.*]] = cmp lt, %[[NEXT]]
// CHECK-NEXT: assign %[[PROCEED]] : i1 to %[[MORE]]
// CHECK-NEXT: if %[[PROCEED]] {
// CHECK: call_opaque "cta.issueScores"(%[[NEXT]])
// CHECK-NEXT: call_opaque "cta.issueValues"
// CHECK-NEXT: call_opaque "cta.passTurn"
// CHECK-NEXT: call_opaque "cta.waitScores<1>"
// CHECK-NEXT: assign %[[NEXT]] : i32 to %[[TILE]]
// CHECK-NEXT: }
// CHECK-NEXT: } while {
// CHECK-NEXT: %[[TEST:.*]] = expression %[[MORE]]
// CHECK-NEXT: %[[LOADED:.*]] = load %[[MORE]]
// CHECK-NEXT: yield %[[LOADED]] : i1
// CHECK-NEXT: }
// CHECK-NEXT: yield %[[TEST]] : i1
// CHECK-NEXT: }
// CHECK: call_opaque "cta.issueValues"
// CHECK: call_opaque "cta.finish"
// CHECK: call_opaque "cta.releaseQuery"
func.func @prefill(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                   %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}

// -----

// Pages of one slot are not whole 8-row swizzle atoms: the configuration
// says the key boxes are one row, and the device gathers them with the
// producer warpgroup instead of bulk-copying them.
// CHECK-LABEL: func.func @prefill_paged1
// CHECK: static constexpr int kKVBoxRows = 1;
// CHECK-SAME: static constexpr int kPageSize = 1;
func.func @prefill_paged1(%q: !attn.q<?x32x128xbf16, ragged>,
                          %k: !attn.kv<?x8x128xbf16, paged<1, nhd>>,
                          %v: !attn.kv<?x8x128xbf16, paged<1, nhd>>)
    -> !attn.out<?x32x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, paged<1, nhd>>,
        !attn.kv<?x8x128xbf16, paged<1, nhd>>
      -> !attn.out<?x32x128xbf16, ragged>
  return %out : !attn.out<?x32x128xbf16, ragged>
}

// -----

// A latent cache of one-slot pages: the latent kernel reads the same box
// rows from the configuration and gathers them.
// CHECK-LABEL: func.func @mla_paged1
// CHECK: include "attnc/device/hopper/latent.h"
// CHECK: static constexpr int kKVBoxRows = 1;
// CHECK-SAME: static constexpr int kPageSize = 1;
// CHECK: verbatim "attnc::LatentCta<attention_config> cta;"
func.func @mla_paged1(%q: !attn.q<1x16x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<1, nhd>>)
    -> !attn.out<1x16x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x16x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<1, nhd>> -> !attn.out<1x16x512xbf16>
  return %out : !attn.out<1x16x512xbf16>
}

// -----

// An fp8 latent cache is read a row at a time (its producer widens rows in
// registers): boxes of one row, whatever its pages, and its scales.
// CHECK-LABEL: func.func @mla_fp8
// CHECK: include "attnc/device/hopper/latent.h"
// CHECK: using KVElem = attnc::f8e4m3;
// CHECK-SAME: static constexpr int kKVBoxRows = 1;
// CHECK-SAME: static constexpr int kPageSize = 64;
// CHECK-SAME: static constexpr bool kKVScales = true;
// CHECK: verbatim "attnc::LatentCta<attention_config> cta;"
func.func @mla_fp8(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>>,
                   %ks: memref<1xf32>, %vs: memref<1xf32>) -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) kv_scales(%ks, %vs : memref<1xf32>, memref<1xf32>) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}

// -----

// An fp8 cache's element type and its scales reach the kernel's config.
// CHECK-LABEL: func.func @fp8_decode
// CHECK: verbatim "struct attention_config {
// CHECK-SAME: using KVElem = attnc::f8e4m3;
// CHECK-SAME: static constexpr bool kKVScales = true;
// CHECK-SAME: static constexpr bool kKScalePerHead = false;
// CHECK-SAME: static constexpr bool kVScalePerHead = true;
func.func @fp8_decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xf8E4M3FN>,
                      %v: !attn.kv<?x8x128xf8E4M3FN>,
                      %ks: memref<1xf32>, %vs: memref<8xf32>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) kv_scales(%ks, %vs : memref<1xf32>, memref<8xf32>)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xf8E4M3FN>, !attn.kv<?x8x128xf8E4M3FN>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}

// -----

// Three consumers beside a region claim their work items like any others
// (their 96-key tiles leave the claims room); a written plan's static
// order is in attn-gpu-to-emitc-written-plans.mlir.
// CHECK-LABEL: func.func @prefill_d64_score_mod
// CHECK: static constexpr int kBlockN = 96;
// CHECK: static constexpr bool kClaimItems = true;
// CHECK: verbatim "attnc::WarpSpecializedCta<attention_config> cta;"
func.func @prefill_d64_score_mod(%q: !attn.q<?x16x64xbf16>, %k: !attn.kv<?x16x64xbf16>,
                                 %v: !attn.kv<?x16x64xbf16>) -> !attn.out<?x16x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x64xbf16>, !attn.kv<?x16x64xbf16>, !attn.kv<?x16x64xbf16>
      -> !attn.out<?x16x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index):
        %c = arith.constant 0.5 : f32
        %r = arith.mulf %s, %c : f32
        attn.yield %r : f32
      }
  return %out : !attn.out<?x16x64xbf16>
}
