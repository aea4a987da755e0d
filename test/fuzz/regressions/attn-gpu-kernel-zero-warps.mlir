// attn_gpu.kernel with warps = 4 x 0: KernelOp::verify divides by 16 * warpsN
// (lib/Dialect/AttnGPU/IR/AttnGPUOps.cpp); a release build dies of SIGFPE.

attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448>plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 0, stages = 2, kv_splits= 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = i32 key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}
