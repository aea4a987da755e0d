// A launch of a hand-written attn_gpu.kernel whose key is not an !attn.kv:
// the kernel verifier checks only the query and output types, and
// describeProgram (lib/Driver/Pipeline.cpp) casts the key to KVType. An
// assertion fails; a release build reads an IntegerType as a KVType.
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = i32 value = i32 output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16> {
  %x = attn_gpu.launch @k(%q) {geometry = #attn_gpu.launch<threads = 128, smem = 0, block_m = 64, kv_splits = 1>} : (!attn.q<?x8x64xbf16>) -> (!attn.out<?x8x64xbf16>)
  %o = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %o : !attn.out<?x8x64xbf16>
}
