// RUN: not attn-opt %s -attn-plan="cluster-ctas=3" 2>&1 | FileCheck %s

// A latent kernel's clusters hold the two CTAs of a token's row blocks, or
// there are none: the knob takes 1 or 2.
// CHECK: attn-plan option cluster-ctas must be in [1, 2], got 3
func.func @f(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}
