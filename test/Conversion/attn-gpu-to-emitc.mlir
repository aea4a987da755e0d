// RUN: attn-opt %s -split-input-file -attn-plan="arch=sm_80" -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu -attn-gpu-to-emitc | FileCheck %s

// The kernel becomes a __global__ function in the device file: a CTA object
// of the schedule's class and one call of its members per attn_gpu op; the
// launches stay on the host side.
// CHECK-LABEL: func.func @prefill
// CHECK: attn_gpu.launch @attention
// CHECK: emitc.file "attnc_device"
// CHECK: include "attnc/device/attention.h"
// CHECK: verbatim "struct attention_config {
// CHECK-SAME: static constexpr int kGroup = 4;
// CHECK-SAME: static constexpr bool kCausal = true;
// CHECK: func @attention(%[[P:.+]]: !emitc.opaque<"const attnc::AttnParams">) attributes {specifiers = ["extern \22C\22 __global__ __launch_bounds__(256, 1)"]}
// CHECK: verbatim "attnc::AttentionCta<attention_config> cta;"
// CHECK: %[[LIVE:.+]] = call_opaque "cta.begin"(%[[P]]) {args = [0 : index, #emitc.opaque<"attnc_smem">]}
// CHECK: if %[[LIVE]]
// CHECK: call_opaque "cta.loadQuery"()
// CHECK: %[[BEGIN:.+]] = call_opaque "cta.tilesBegin"() : () -> i32
// CHECK: call_opaque "cta.prefetch"(%[[BEGIN]])
// CHECK: for %[[T:.+]] = {{.*}} : i32
// CHECK: call_opaque "cta.waitTile"(%[[T]])
// CHECK: call_opaque "cta.scores"(%[[T]])
// CHECK: %[[PARTIAL:.+]] = call_opaque "cta.visitsPartialTile"(%[[T]]) : (i32) -> i1
// CHECK: if %[[PARTIAL]]
// CHECK: call_opaque "cta.modifyScores<true>"(%[[T]])
// CHECK: call_opaque "cta.modifyScores<false>"(%[[T]])
// CHECK: call_opaque "cta.onlineSoftmax"()
// CHECK: call_opaque "cta.accumulateValues"(%[[T]])
// CHECK: call_opaque "cta.finish"()
// CHECK-NOT: attn_gpu.kernel
func.func @prefill(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                   %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}

// -----

// A score_mod becomes a __device__ function through the upstream arith
// conversion; loads from captures read the launch's strided views.
// CHECK-LABEL: func.func @score_mod
// CHECK: emitc.file "attnc_device"
// CHECK: func @attention_score_mod(%[[S:.+]]: f32, %{{.+}}: !emitc.size_t, %[[H:.+]]: !emitc.size_t, %{{.+}}: !emitc.size_t, %[[J:.+]]: !emitc.size_t, %{{.+}}: !emitc.size_t, %{{.+}}: !emitc.size_t, %[[PARAMS:.+]]: !emitc.ptr<!emitc.opaque<"const attnc::AttnParams">>) -> f32 attributes {specifiers = ["static __device__ __forceinline__"]}
// CHECK: %[[BIAS:.+]] = call_opaque "attnc::loadCapture<float>"(%[[PARAMS]], %[[H]], %[[J]]) {args = [0 : index, 0 : i32, 1 : index, 2 : index]}
// CHECK: %[[SUM:.+]] = add %[[S]], %[[BIAS]]
// CHECK: return %[[SUM]] : f32
// CHECK: verbatim "struct attention_config {
// CHECK-SAME: return i < qLen && j < kvLen ? attention_score_mod(s, b, h, i, j, qLen, kvLen, &p) : s;
func.func @score_mod(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
                     %v: !attn.kv<?x8x64xbf16>, %table: memref<8x?xf32>) -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v) captures(%table : memref<8x?xf32>)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %ql: index, %kl: index, %t: memref<8x?xf32>):
        %bias = memref.load %t[%h, %j] : memref<8x?xf32>
        %r = arith.addf %s, %bias : f32
        attn.yield %r : f32
      }
  return %out : !attn.out<?x8x64xbf16>
}

// -----

// A decode kernel's CTA follows its plan: a GQA group of 16 fills the 16
// rows of attention.h's CTA ...
// CHECK-LABEL: func.func @decode_group16
// CHECK: include "attnc/device/attention.h"
// CHECK-NOT: transposed_decode.h
// CHECK: verbatim "struct attention_config {
// CHECK-SAME: static constexpr int kBlockM = 16;
// CHECK: verbatim "attnc::AttentionCta<attention_config> cta;"
func.func @decode_group16(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x2x128xbf16>,
                          %v: !attn.kv<?x2x128xbf16>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x2x128xbf16>, !attn.kv<?x2x128xbf16> -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}

// -----

// ... and a group of 4 the 8 columns of the transposed CTA, whose header
// the file includes.
// CHECK-LABEL: func.func @decode_group4
// CHECK: include "attnc/device/transposed_decode.h"
// CHECK: verbatim "struct attention_config {
// CHECK-SAME: static constexpr int kBlockM = 8;
// CHECK: verbatim "attnc::TransposedDecodeCta<attention_config> cta;"
func.func @decode_group4(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                         %v: !attn.kv<?x8x128xbf16>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16> -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}
