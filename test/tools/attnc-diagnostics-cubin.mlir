// REQUIRES: nvrtc
// RUN: not attnc compile %s --emit=cubin --no-cache -o /dev/null 2>&1 | FileCheck %s --implicit-check-not="see current operation" --implicit-check-not="attnc: parse error" --implicit-check-not="attnc: compil"

// Through NVRTC the diagnostics read exactly as at the IR stages: file,
// line and column, the source line, and no IR dump; a variant that never
// reaches NVRTC says nothing of compiling.
// CHECK: attnc-diagnostics-cubin.mlir:[[# @LINE + 4]]:10: error: 'attn.attention' op has no attribute 'casual'; did you mean 'causal'?
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>)
    -> !attn.out<1x8x64xbf16> {
  // A typo must not compile as a variant without the mask.
  %out = attn.attention(%q, %k, %v) {casual}
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xbf16>
  return %out : !attn.out<1x8x64xbf16>
}
