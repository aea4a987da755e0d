// REQUIRES: nvrtc
// RUN: rm -rf %t && attnc cache --cache-dir %t/cache prewarm %s > %t.log 2>&1 && attnc cache --cache-dir %t/cache prewarm %s >> %t.log 2>&1 && attnc cache --cache-dir %t/cache prune --max-age-days 30 >> %t.log 2>&1 && attnc cache --cache-dir %t/cache prune --max-bytes 1 >> %t.log 2>&1 && FileCheck %s < %t.log

// `attnc cache prewarm` compiles variants into the cache ahead of their
// first use, and finds them there the next time; `prune` keeps what was
// used within its age and the most recently used within its size. A
// compile leaves two entries: the variant's and its cubin's (docs/CACHE.md).
// CHECK: attnc: compiling {{.*}}attnc-cache-prewarm-prune.mlir for sm_90a with NVRTC (not in the kernel cache)
// CHECK: attnc-cache-prewarm-prune.mlir: compiled in {{[0-9]+}} ms
// CHECK-NEXT: {{.*}}attnc-cache-prewarm-prune.mlir: cached already
// CHECK-NEXT: removed 0 entries from {{.*}}cache; kept 2 ({{[0-9]+}} bytes)
// CHECK-NEXT: removed 2 entries from {{.*}}cache; kept 0 (0 bytes)
func.func @prefill(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x2x64xbf16>, %v: !attn.kv<?x2x64xbf16>)
    -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x8x64xbf16>, !attn.kv<?x2x64xbf16>, !attn.kv<?x2x64xbf16>
      -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}
