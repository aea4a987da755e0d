// attn_gpu.kernel with warps = 9223372036854775807 x 1: KernelOp::verify
// computes 16 * warps_m, a signed overflow (UBSan: undefined behaviour),
// because nothing bounds the plan's numbers (AttnGPUOps.cpp).
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 9223372036854775807 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}
