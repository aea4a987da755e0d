// RUN: not attnc compile %s --emit=cuda 2>&1 | FileCheck %s

// A feature the verifier accepts but the GPU pipeline cannot compile yet
// fails with a diagnostic that names it, and a non-zero exit status.
// CHECK: error: 'attn.attention' op cannot be compiled for the GPU yet: ALiBi with a latent cache
func.func @mla(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) {alibi, scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}
