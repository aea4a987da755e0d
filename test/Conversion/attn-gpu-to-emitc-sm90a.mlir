// RUN: attn-opt %s -attn-plan="arch=sm_90a" -attn-analyze-masks -attn-split-kv -attn-lower-to-gpu -attn-gpu-to-emitc | FileCheck %s

// The warp-specialized kernel takes its tensor maps in a __grid_constant__
// parameter struct and drives a WarpSpecializedCta from the Hopper header.
// CHECK: include "attnc/device/hopper/prefill.h"
// CHECK: !emitc.opaque<"attnc::WarpSpecializedCta<attention_config>">
// CHECK: call_opaque "attnc::ctaBegin"{{.*}}!emitc.opaque<"const __grid_constant__ attnc::TmaAttnParams">
// CHECK: call_opaque "attnc::isProducer"
// CHECK: call_opaque "attnc::beginProducer"
// CHECK: call_opaque "attnc::workItems"
// CHECK: call_opaque "attnc::beginItem"
// CHECK: call_opaque "attnc::produceTiles"
// CHECK: call_opaque "attnc::beginConsumer"
// CHECK: call_opaque "attnc::beginItem"
// CHECK: call_opaque "attnc::beginRows"
// CHECK: call_opaque "attnc::waitScores<0>"
// CHECK: call_opaque "attnc::waitScores<1>"
// CHECK: call_opaque "attnc::issueValues"
// CHECK: call_opaque "attnc::releaseQuery"
// CHECK: call_opaque "attnc::finish"
func.func @prefill(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                   %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}
