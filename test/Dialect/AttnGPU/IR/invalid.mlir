// RUN: attn-opt %s -split-input-file -verify-diagnostics

// The M tile is 16 rows per warp along M.
// expected-error @below {{block_m must be 16 rows per M warp, got 32 for 4 warps}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 32 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A pipeline needs a stage to load while another is read.
// expected-error @below {{the K/V pipeline needs at least 2 stages}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 1, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// The plan must fit the target's shared memory.
// expected-error @below {{needs 40960 bytes of shared memory, the target allows 1024}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 1024> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A window is an #attn.window.
// expected-error @below {{window must be an #attn.window}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32, window = 3 : i64} {
}

// -----

// A launch names a kernel.
func.func @f(%q: !attn.q<?x8x64xbf16>) {
  // expected-error @below {{'attn_gpu.launch' op 'nowhere' is not an attn_gpu kernel}}
  attn_gpu.launch @nowhere(%q) {geometry = #attn_gpu.launch<threads = 128, smem = 0, block_m = 64, kv_splits = 1>} : (!attn.q<?x8x64xbf16>) -> ()
  return
}

// -----

// Each N warp takes whole 16-key steps of the KV tile.
// expected-error @below {{block_n must give each N warp a multiple of 16 keys}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 24, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// The kernel's query and output are attn descriptors.
// expected-error @below {{query and output must be attn descriptor types}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = i32 key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}
