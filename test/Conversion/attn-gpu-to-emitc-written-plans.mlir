// RUN: attn-opt %s -split-input-file -attn-analyze-masks -attn-lower-to-gpu -attn-gpu-to-emitc | FileCheck %s

// Plans written by hand (attn-plan sets its own): the choices attn-plan no
// longer makes still reach the device configuration.

// A plan with static_order walks a static share of the work items: the
// configuration tells the device not to claim them.
// CHECK-LABEL: func.func @prefill_d64_score_mod
// CHECK: static constexpr int kBlockN = 128;
// CHECK: static constexpr bool kClaimItems = false;
// CHECK: verbatim "attnc::WarpSpecializedCta<attention_config> cta;"
// CHECK: call_opaque "cta.modifyScores<true>"
module attributes {attn_gpu.target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448>} {
  func.func @prefill_d64_score_mod(%q: !attn.q<?x16x64xbf16>, %k: !attn.kv<?x16x64xbf16>,
                                   %v: !attn.kv<?x16x64xbf16>) -> !attn.out<?x16x64xbf16> {
    %out = attn.attention(%q, %k, %v)
        {attn_gpu.plan = #attn_gpu.plan<warp_specialized, block = 192 x 128, warps = 16 x 1, stages = 3, kv_splits = 1, q_in_regs = false, q_buffers = 2, static_order = true, lean_tile_loop = true>}
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
}
