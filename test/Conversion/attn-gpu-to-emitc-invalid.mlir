// RUN: attn-opt %s -split-input-file -attn-gpu-to-emitc -verify-diagnostics

// The C++ of a tile loop that exits in the middle keeps its carried values
// in variables and has none after the loop: a while whose results are used
// is refused by name.
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @below {{'scf.while' op has no EmitC lowering inside an attn_gpu.kernel when its results are used}}
  %last = scf.while (%t = %c0) : (index) -> index {
    %n = arith.addi %t, %c1 : index
    %more = arith.cmpi slt, %n, %c1 : index
    scf.condition(%more) %n : index
  } do {
  ^bb0(%n: index):
    scf.yield %n : index
  }
  attn_gpu.issue_values %last
}

// -----

// Its variables hold tile indices (int32_t): a while that carries anything
// else is refused by name too.
attn_gpu.kernel @k target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448> plan = #attn_gpu.plan<warp_specialized, block = 128 x 128, warps = 12 x 1, stages = 2, kv_splits = 1, q_in_regs = false> masks = #attn_gpu.masks<lower = false, upper = false, sinks = 0, partial = never> query = !attn.q<?x8x64xbf16> key = !attn.kv<?x8x64xbf16> value = !attn.kv<?x8x64xbf16> output = !attn.out<?x8x64xbf16> captures = [] attributes {scale = 1.250000e-01 : f32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.cmpi slt, %c0, %c1 : index
  // expected-error @below {{'scf.while' op has no EmitC lowering inside an attn_gpu.kernel but for index values}}
  scf.while (%t = %c0, %f = %true) : (index, i1) -> (index, i1) {
    %n = arith.addi %t, %c1 : index
    %more = arith.cmpi slt, %n, %c1 : index
    scf.condition(%more) %n, %f : index, i1
  } do {
  ^bb0(%n: index, %g: i1):
    scf.yield %n, %g : index, i1
  }
}
