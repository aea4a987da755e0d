// RUN: not attnc compile %s --cluster-ctas 0 2>&1 | FileCheck %s

// The CLI's cluster knob takes 1 (no clusters) or 2: anything else is
// refused by name before anything is compiled (exit 2).
// CHECK: --cluster-ctas: Value 0 not in range 1 to 2
func.func @f(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  %out = attn.attention(%q, %kv) {scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}
