// RUN: not attnc compile %s --emit=cuda 2>&1 | FileCheck %s

// A feature the verifier accepts but the GPU pipeline cannot compile yet
// fails with a diagnostic that names it, and a non-zero exit status.
// CHECK: error: 'attn.attention' op cannot be compiled for the GPU yet: multi-head latent attention over a f8E4M3FN cache with bf16 queries (bf16 or f16, both alike)
func.func @mla(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xf8E4M3FN, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}
