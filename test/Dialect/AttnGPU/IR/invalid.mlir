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
// expected-error @below {{attribute 'window' failed to satisfy constraint: an #attn.window}}
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
// expected-error @below {{query, key, value and output must be !attn.q, !attn.kv, !attn.kv and !attn.out}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = i32 key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A plan without warps is refused before anything divides by its warp count.
// expected-error @below {{warps must be at least 1 x 1 and at most 32 in all, got 8 x 0}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 128 x 64, warps = 8 x 0, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Tiles are non-empty.
// expected-error @below {{block must be in [1, 1024] x [1, 1024], got 64 x 0}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 0, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Stage counts are positive.
// expected-error @below {{stages must be in [1, 16], got 0}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 0, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A plan splits the keys at least once and at most as often as a merge combines.
// expected-error @below {{kv_splits must be in [1, 32], got 0}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 2, kv_splits = 0, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Targets name a supported architecture.
// expected-error @below {{unsupported GPU architecture 'banana'; attnc compiles for sm_80, sm_86, sm_87, sm_89, sm_90a}}
attn_gpu.kernel @k target = #attn_gpu.target<"banana", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A target has multiprocessors.
// expected-error @below {{sms must be in [1, 4096], got 0}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 0, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A target has shared memory.
// expected-error @below {{smem must be in [1, 16777216] bytes, got -1}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = -1> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// The analysis never holds negative sinks.
// expected-error @below {{sinks must be in [0, 2147483647], got -4}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = true, upper = false, sinks = -4, partial = edges> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Partial tiles are one of the three classes.
// expected-error @below {{expected 'never', 'edges' or 'always', got 'sometimes'}}
// expected-error @below {{failed to parse AttnGPU_MaskAnalysisAttr parameter 'partial'}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = true, upper = false, sinks = 0, partial = sometimes> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A launch runs at least one thread and no more than a CTA holds.
func.func @f(%q: !attn.q<?x8x64xbf16>) {
  // expected-error @below {{threads must be in [1, 1024], got 0}}
  attn_gpu.launch @k(%q) {geometry = #attn_gpu.launch<threads = 0, smem = 0, block_m = 64, kv_splits = 1>} : (!attn.q<?x8x64xbf16>) -> ()
  return
}

// -----

// A launch's splits are bounded like a plan's.
func.func @f(%q: !attn.q<?x8x64xbf16>) {
  // expected-error @below {{block_m must be positive and kv_splits in [1, 32], got 64 and 64}}
  attn_gpu.launch @k(%q) {geometry = #attn_gpu.launch<threads = 128, smem = 0, block_m = 64, kv_splits = 64>} : (!attn.q<?x8x64xbf16>) -> ()
  return
}

// -----

// The module's target annotation is an #attn_gpu.target.
// expected-error @below {{'attn_gpu.target' must be an #attn_gpu.target on the module, got "sm_90a"}}
module attributes {attn_gpu.target = "sm_90a"} {
}

// -----

// A key that is no !attn.kv is refused before anything reads it as one (found by the fuzzer).
// expected-error @below {{query, key, value and output must be !attn.q, !attn.kv, !attn.kv and !attn.out}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = i32 value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Warp counts are bounded before they are multiplied (found by the fuzzer).
// expected-error @below {{warps must be at least 1 x 1 and at most 32 in all, got 9223372036854775807 x 1}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 9223372036854775807 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A hand-written kernel holds only head dims the tiles hold.
// expected-error @below {{head dims must be multiples of 16 up to 256, got 24}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x24xbf16> key = !attn.kv<?x8x24xbf16> value = !attn.kv<?x8x24xbf16> output = !attn.out<?x8x24xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Query heads share key heads in whole groups.
// expected-error @below {{query heads (8) must be a multiple of key heads (3)}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x3x64xbf16> value = !attn.kv<?x3x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A warp-specialized plan is a producer warpgroup and consumer warpgroups.
// expected-error @below {{a warp_specialized plan has 4 x (1 + consumers) x 1 warps, at least 8 x 1, got 10 x 1}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 10 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Each consumer warpgroup owns 64 rows.
// expected-error @below {{a warp_specialized plan's block has 64 rows per consumer warpgroup (128), got 64}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 64 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// The P.V products step over 16 keys.
// expected-error @below {{a warp_specialized plan's KV tile must be a multiple of 16 keys up to 256, got 72}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 72, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// wgmma and setmaxnreg exist only on sm_90a.
// expected-error @below {{a warp_specialized plan needs sm_90a, the target is sm_80}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_80", sms = 108, smem = 166912> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// The producer runs at least a stage ahead of the consumers.
// expected-error @below {{a warp_specialized plan needs at least 2 stages, got 1}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 1, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A consumer alternates between at most two query tiles.
// expected-error @below {{q_buffers must be 1 or 2, got 3}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_buffers = 3> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Only the warp-specialized consumers stage their output through a second
// query tile; the mma.sync schedules keep one.
// expected-error @below {{a prefill plan has one query tile per consumer, got q_buffers = 2}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true, q_buffers = 2> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Only warp-specialized CTAs claim their work items; the latent ones always
// walk a static share, so the choice is not theirs to state.
// expected-error @below {{a latent plan does not choose how its CTAs share the work items (static_order)}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, static_order = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x16x576xbf16> key = !attn.latent_kv<?x576xbf16, rope = 64> value = !attn.latent_kv<?x576xbf16, rope = 64> output = !attn.out<1x16x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A plan's optional fields are named.
// expected-error @below {{expected 'q_buffers', 'static_order', 'cluster_ctas' or 'lean_tile_loop', got 'q_tiles'}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_tiles = 2> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Each optional plan field is given at most once.
// expected-error @below {{plan field 'q_buffers' given twice}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, q_buffers = 2, q_buffers = 1> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// static_order is a boolean.
// expected-error @below {{static_order is true or false, got 'yes'}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, static_order = yes> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// lean_tile_loop is a boolean too.
// expected-error @below {{lean_tile_loop is true or false, got 'always'}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, lean_tile_loop = always> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Only the warp-specialized consumers have the tile loop whose shape
// lean_tile_loop chooses; the latent ones wait for each tile's P.V.
// expected-error @below {{a latent plan does not choose the shape of its consumers' tile loop (lean_tile_loop)}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, lean_tile_loop = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x16x576xbf16> key = !attn.latent_kv<?x576xbf16, rope = 64> value = !attn.latent_kv<?x576xbf16, rope = 64> output = !attn.out<1x16x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A consumer waits for its scores with at most the one P.V after them in
// flight.
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
  // expected-error @+1 {{'attn_gpu.wait_scores' op attribute 'pending' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 0 whose maximum value is 1}}
  attn_gpu.wait_scores pending = 2
}

// -----

// An fp8 cache's scales come in pairs.
// expected-error @below {{key and value scales must be given together}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 4, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x8x64xbf16> key = !attn.kv<?x2x64xf8E4M3FN> value = !attn.kv<?x2x64xf8E4M3FN> output = !attn.out<1x8x64xbf16> captures = [] attributes {key_scale = memref<1xf32>, scale = 1.250000e-01 : f32} {
}

// -----

// A scale is one f32 per tensor or per KV head.
// expected-error @below {{scales must be memref<1xf32> or memref<2xf32>, got 'f32'}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 4, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x8x64xbf16> key = !attn.kv<?x2x64xf8E4M3FN> value = !attn.kv<?x2x64xf8E4M3FN> output = !attn.out<1x8x64xbf16> captures = [] attributes {key_scale = f32, value_scale = memref<1xf32>, scale = 1.250000e-01 : f32} {
}

// -----

// sm_80 has no conversions of fp8 pairs.
// expected-error @below {{an fp8 key/value cache needs sm_89 or newer, the target is sm_80}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_80", sms = 132, smem = 232448> plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 4, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x8x64xbf16> key = !attn.kv<?x2x64xf8E5M2> value = !attn.kv<?x2x64xf8E5M2> output = !attn.out<1x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Scales dequantize fp8 caches only.
// expected-error @below {{scales dequantize an fp8 key/value cache}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 4, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x8x64xbf16> key = !attn.kv<?x2x64xbf16> value = !attn.kv<?x2x64xbf16> output = !attn.out<1x8x64xbf16> captures = [] attributes {key_scale = memref<1xf32>, value_scale = memref<1xf32>, scale = 1.250000e-01 : f32} {
}

// -----

// The warp-specialized prefill's bulk copies land K/V where wgmma reads
// them: an fp8 cache cannot take it (only the latent producer widens one).
// expected-error @below {{a warp_specialized plan reads keys of the queries' element type (a latent plan fp8 ones too), got 'f8E4M3FN'}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x128xbf16> key = !attn.kv<?x2x128xf8E4M3FN> value = !attn.kv<?x2x128xf8E4M3FN> output = !attn.out<?x8x128xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A kernel merges its own splits only when its plan splits the keys.
// expected-error @below {{merge_splits needs a split-KV plan of the mma.sync or latent schedules, got #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 3, kv_splits = 1, q_in_regs = true>}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<decode, block = 16 x 64, warps = 1 x 4, stages = 3, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x8x64xbf16> key = !attn.kv<?x2x64xbf16> value = !attn.kv<?x2x64xbf16> output = !attn.out<1x8x64xbf16> captures = [] attributes {has_lse, merge_splits, scale = 1.250000e-01 : f32} {
}

// -----

// A latent kernel merges its splits in a second launch of itself: a
// merge_splits op after its stores has no counter to count on.
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 16, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = edges> query = !attn.q<1x16x576xbf16> key = !attn.kv<?x1x576xbf16, paged<64, nhd>> value = !attn.kv<?x1x512xbf16, paged<64, nhd>> output = !attn.out<1x16x512xbf16> captures = [] attributes {has_lse, merge_splits, scale = 0.0721687824 : f32} {
  // expected-error @below {{'attn_gpu.merge_splits' op needs a kernel with merge_splits that merges in its own launch (the mma.sync schedules)}}
  attn_gpu.merge_splits
}

// -----

// The warp-specialized prefill does not split its keys, so it has no
// splits of its own to merge.
// expected-error @below {{merge_splits needs a split-KV plan of the mma.sync or latent schedules, got #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 4, q_in_regs = false>}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 4, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x128xbf16> key = !attn.kv<?x2x128xbf16> value = !attn.kv<?x2x128xbf16> output = !attn.out<?x8x128xbf16> captures = [] attributes {merge_splits, scale = 1.250000e-01 : f32} {
}

// -----

// The transposed decode's rows are mma's 8 columns: one token's GQA group,
// with every warp taking a slice of the KV tile.
// expected-error @below {{a transposed_decode plan has 1 x N warps and 8-row blocks (a token's GQA group), got 1 x 4 warps and 16 rows}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<transposed_decode, block = 16 x 64, warps = 1 x 4, stages = 3, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x32x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<1x32x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A latent plan is a producer, a scorer and a value warpgroup over 64 rows.
// expected-error @below {{a latent plan has 12 x 1 warps and 64-row blocks, got 8 x 1 warps and 64 rows}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 8 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x16x576xbf16> key = !attn.kv<?x1x576xbf16> value = !attn.kv<?x1x512xbf16> output = !attn.out<1x16x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// A latent plan's KV tiles are whole k16 steps of whole swizzle atoms, in a ring.
// expected-error @below {{a latent plan's KV tile must be a multiple of 16 keys up to 256, in at least 2 stages, got 60 keys in 2}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 60, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x16x576xbf16> key = !attn.kv<?x1x576xbf16> value = !attn.kv<?x1x512xbf16> output = !attn.out<1x16x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// An fp8 latent cache is widened 32 rows a pass: a 48-key tile is refused.
// expected-error @below {{a latent plan over an fp8 cache widens 32 rows a pass: its KV tile must be a multiple of them, got 48 keys}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 48, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x16x576xbf16> key = !attn.kv<?x1x576xf8E4M3FN> value = !attn.kv<?x1x512xf8E4M3FN> output = !attn.out<1x16x512xbf16> captures = [] attributes {key_scale = memref<1xf32>, value_scale = memref<1xf32>, scale = 1.250000e-01 : f32} {
}

// -----

// A latent kernel reads one cache head, shared by every query head.
// expected-error @below {{a latent kernel reads one cache head of the queries' head dim (a multiple of 16 up to 576) whose first columns, a multiple of 128 up to 512, are the values; got 2 heads of 576 for queries of 576 and outputs of 512}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x16x576xbf16> key = !attn.kv<?x2x576xbf16> value = !attn.kv<?x2x512xbf16> output = !attn.out<1x16x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Clusters hold two CTAs: a token's two row blocks.
// expected-error @below {{cluster_ctas must be 1 or 2, got 4}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, cluster_ctas = 4> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x128x576xbf16> key = !attn.kv<?x1x576xbf16> value = !attn.kv<?x1x512xbf16> output = !attn.out<1x128x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Only the latent CTAs share their loads across a cluster.
// expected-error @below {{a warp_specialized plan does not share its loads across a cluster (cluster_ctas = 2)}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, cluster_ctas = 2> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// At 64 heads a token's rows are one block: the two CTAs of a cluster would
// see different keys.
// expected-error @below {{a latent kernel shares its loads across a cluster (cluster_ctas = 2) only where a token's query heads fill pairs of 64-row blocks and the copy engine loads whole swizzle atoms of a 16-bit cache; got 64 query heads and boxes of 64 rows}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, cluster_ctas = 2> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x64x576xbf16> key = !attn.kv<?x1x576xbf16> value = !attn.kv<?x1x512xbf16> output = !attn.out<1x64x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Pages of one slot are gathered row by row, which the copy engine cannot
// multicast.
// expected-error @below {{a latent kernel shares its loads across a cluster (cluster_ctas = 2) only where a token's query heads fill pairs of 64-row blocks and the copy engine loads whole swizzle atoms of a 16-bit cache; got 128 query heads and boxes of 1 rows}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<latent, block = 64 x 64, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false, cluster_ctas = 2> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<1x128x576xbf16> key = !attn.kv<?x1x576xbf16, paged<1, nhd>> value = !attn.kv<?x1x512xbf16, paged<1, nhd>> output = !attn.out<1x128x512xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
}

// -----

// Only the warp-specialized consumers mask apart from the modifiers; the
// other schedules mask in `modify_scores {masked}`.
attn_gpu.kernel @k target = #attn_gpu.target<"sm_80", sms = 108, smem = 166912> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = true, sinks = 0, partial = edges> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {causal, scale = 1.250000e-01 : f32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'attn_gpu.mask_scores' op needs a warp_specialized kernel (the other schedules mask in `modify_scores {masked}`)}}
  attn_gpu.mask_scores %c0
}

// -----

// A plan's schedule is a row of the schedule table; anything else is
// refused with the table's keywords.
// expected-error @+2 {{expected a schedule ('prefill', 'decode', 'warp_specialized', 'latent', 'transposed_decode'), got 'pipelined'}}
// expected-error @+1 {{failed to parse AttnGPU_PlanAttr parameter 'schedule'}}
func.func @f() attributes {p = #attn_gpu.plan<pipelined, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true>} {
  return
}

// -----

// The device holds raw products in place of logits: only a positive scale
// keeps their row maxima the logits'.
// expected-error @below {{scale must be positive and finite, got -1.250000e-01}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = -1.250000e-01 : f32} {
}

// -----

// A soft-cap divides the scores.
// expected-error @below {{softcap must be positive and finite, got 0.000000e+00}}
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<prefill, block = 64 x 64, warps = 4 x 1, stages = 2, kv_splits = 1, q_in_regs = true> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32, softcap = 0.0 : f32} {
}
