// REQUIRES: nvrtc
// RUN: rm -rf %t && attnc compile %s --emit=cubin --cache-dir %t -o /dev/null 2>&1 | FileCheck %s --check-prefix=COLD && attnc compile %s --emit=cubin --cache-dir %t --time -o /dev/null 2>&1 | FileCheck %s --check-prefix=HIT --implicit-check-not="attnc: compil"

// A compile that misses the kernel cache says what it is doing while NVRTC
// runs (a second or more); the next one, a cache hit, says nothing of
// compiling.
// COLD: attnc: compiling {{.*}}attnc-compile-progress.mlir for sm_90a with NVRTC (not in the kernel cache)
// COLD-NEXT: attnc: compiled {{.*}}attnc-compile-progress.mlir in {{[0-9]+}} ms
// HIT: cache hit: {{[0-9.e+-]+}} ms
func.func @decode_gqa(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x2x64xbf16>, %v: !attn.kv<?x2x64xbf16>)
    -> !attn.out<1x8x64xbf16> {
  %out = attn.attention(%q, %k, %v) {scale = 0.125 : f32}
      : !attn.q<1x8x64xbf16>, !attn.kv<?x2x64xbf16>, !attn.kv<?x2x64xbf16>
      -> !attn.out<1x8x64xbf16>
  return %out : !attn.out<1x8x64xbf16>
}
