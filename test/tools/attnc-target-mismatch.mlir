// RUN: not attnc compile %s --emit=gpu --arch sm_90a 2>&1 | FileCheck %s

// A module that names its target asks for that target: compiling it for
// another would ignore what it says, so attn-plan refuses.
// CHECK: attnc-target-mismatch.mlir:[[# @LINE + 1]]:1: error: the module asks for #attn_gpu.target<"sm_80", sms = 132, smem = 232448>, but this compile is for #attn_gpu.target<"sm_90a", sms = 132, smem = 232448>: remove the module's attn_gpu.target or compile for its target (attn-plan's arch, sms and smem options; attnc compile --arch)
module attributes {attn_gpu.target = #attn_gpu.target<"sm_80", sms = 132, smem = 232448>} {
  func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
               %v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16> {
    %o = attn.attention(%q, %k, %v)
        : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16>
        -> !attn.out<?x8x64xbf16>
    return %o : !attn.out<?x8x64xbf16>
  }
}
