// REQUIRES: nvrtc
// RUN: rm -rf %t && mkdir -p %t
// RUN: attnc library build --list | FileCheck %s --check-prefix=LIST
// RUN: not attnc library build --filter no-such-variant --out %t/none.bin 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not attnc library build --filter latent-decode.bf16.d576.h16 --out %t/no-such-dir/lib.bin 2>&1 | FileCheck %s --check-prefix=NODIR
// RUN: attnc library build --filter paged-decode.bf16.d128.h32x8.causal --out %t/lib.bin --jobs 2 | FileCheck %s --check-prefix=BUILD
// RUN: cp %t/lib.bin %t/first.bin
// RUN: attnc library build --filter paged-decode.bf16.d128.h32x8.causal --out %t/lib.bin --jobs 2 | FileCheck %s --check-prefix=REBUILD
// RUN: cmp %t/lib.bin %t/first.bin
// RUN: env ATTNC_KERNEL_LIBRARY=%t/lib.bin attnc compile %s --emit=cubin --cache-dir %t/cache --time -o %t/hit.cubin 2>&1 | FileCheck %s --check-prefix=HIT --implicit-check-not=NVRTC
// RUN: env ATTNC_KERNEL_LIBRARY=%t/lib.bin attnc compile %s --emit=cubin --cache-dir %t/cache --time -o /dev/null 2>&1 | FileCheck %s --check-prefix=AGAIN
// RUN: env ATTNC_KERNEL_LIBRARY=%t/lib.bin attnc cache --cache-dir %t/prewarmed prewarm %s | FileCheck %s --check-prefix=PREWARM
// RUN: attnc compile %s --emit=cubin --no-cache -o %t/cold.cubin
// RUN: cmp %t/hit.cubin %t/cold.cubin
// RUN: printf 'garbage!!!!!!' > %t/bad.bin
// RUN: env ATTNC_KERNEL_LIBRARY=%t/bad.bin attnc compile %s --emit=cubin --no-cache -o /dev/null 2>&1 | not grep -i "warning\|kernel library"
// RUN: env ATTNC_KERNEL_LIBRARY=%t/bad.bin attnc compile %s --emit=cubin --cache-dir %t/cache2 --time -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: env ATTNC_KERNEL_LIBRARY=%t/missing.bin attnc compile %s --emit=cubin --cache-dir %t/cache3 --time -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING

// The prebuilt kernel library: `attnc library build` compiles the common
// variants (the table in tools/attnc/LibrarySpace.cpp) into one file, and a
// compile of a variant whose CUDA is in it runs no NVRTC. This function is
// what attnc.PagedAttention(32, 8, 128, 16, causal=True) builds for decode.
// LIST: prefill.bf16.d64.h32x8.none
// LIST: paged-decode.bf16-kv.e4m3.d128.h32x8.none
// LIST: paged-decode.f16.d256.h8x1.causal-softcap
// LIST: paged-prefill.bf16.d128.h32x8.causal-window
// LIST: latent-decode.bf16-kv.e4m3.d576.h16
// LIST: {{[0-9]+}} variants
// A filter that matches nothing, and an --out that cannot be written, are
// refused by name before anything is compiled.
// NOMATCH: attnc: library build: no variant of the library matches --filter 'no-such-variant'
// NODIR: attnc: library build: cannot write --out {{.*}}no-such-dir/lib.bin: {{.*}}no-such-dir: No such file or directory
// NODIR-NOT: compiled
// BUILD: attnc: library: 3 variants, {{[0-9]+}} kernels (0 reused from the library before), {{[0-9]+}} bytes of entries, in {{.*}} s on 2 threads: {{.*}}lib.bin
// A rebuild takes every kernel whose CUDA did not change from the file it
// replaces, and writes the same file.
// REBUILD: attnc: library: 3 variants, [[N:[0-9]+]] kernels ([[N]] reused from the library before)
// HIT: cubin: library
// The variant's entry went to the disk cache; its cubin is the library's.
// AGAIN: cache hit:
// AGAIN: cubin: library
// PREWARM: attnc-library.mlir: in the prebuilt kernel library
// A cold compile (--no-cache) reads no library, malformed or not.
// BAD: attnc: warning: kernel library {{.*}}bad.bin is malformed: truncated (13 bytes, less than a header) (ignored; kernels are compiled instead)
// BAD: cubin: compiled
// MISSING: attnc: warning: cannot open kernel library {{.*}}missing.bin: No such file or directory (ignored; kernels are compiled instead)
// MISSING: cubin: compiled
func.func @attention(%attnc_q: !attn.q<1x32x128xbf16>, %attnc_k: !attn.kv<?x8x128xbf16, paged<16, nhd>>, %attnc_v: !attn.kv<?x8x128xbf16, paged<16, nhd>>) -> (!attn.out<1x32x128xbf16>) {
  %attnc_out = attn.attention(%attnc_q, %attnc_k, %attnc_v) {causal}
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16, paged<16, nhd>>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<1x32x128xbf16>
  return %attnc_out : !attn.out<1x32x128xbf16>
}
