// REQUIRES: nvrtc
// RUN: attnc compile %s --emit=cubin --no-cache --time -o /dev/null 2>&1 | FileCheck %s

// `--time` says what a cold compile goes to: attnc's own passes, then
// NVRTC, split into its front end with NVVM and ptxas where ptxas reports
// its time (CUDA 13's does; PtxasLog.ReadsTheRealReport holds it to that).
// While it compiles, the command says what it is doing.
// CHECK: attnc: compiling {{.*}}attnc-compile-time.mlir for sm_90a with NVRTC (no disk cache)
// CHECK-NEXT: attnc: compiled {{.*}}attnc-compile-time.mlir in {{[0-9]+}} ms
// CHECK-NEXT: frontend (MLIR passes, C++ emission): [[FRONTEND:[0-9.e+-]+]] ms
// CHECK-NEXT: nvrtc + ptxas: [[NVRTC:[0-9.e+-]+]] ms{{( \(NVRTC's front end and NVVM [0-9.e+-]+ ms, ptxas [0-9.e+-]+ ms\))?$}}
// CHECK-NEXT: total: [[TOTAL:[0-9.e+-]+]] ms
func.func @prefill_causal(%q: !attn.q<?x4x64xbf16>, %k: !attn.kv<?x1x64xbf16>, %v: !attn.kv<?x1x64xbf16>)
    -> !attn.out<?x4x64xbf16> {
  %out = attn.attention(%q, %k, %v) {scale = 0.125 : f32, causal}
      : !attn.q<?x4x64xbf16>, !attn.kv<?x1x64xbf16>, !attn.kv<?x1x64xbf16>
      -> !attn.out<?x4x64xbf16>
  return %out : !attn.out<?x4x64xbf16>
}
