// RUN: not attnc compile %s --emit=gpu 2>&1 | FileCheck %s --implicit-check-not="see current operation"

// A pass failure names the problem at its location without dumping the
// operation (that is what --mlir-print-op-on-diagnostic is for).
// CHECK: attnc-diagnostics-no-ir-dump.mlir:[[# @LINE + 4]]:10: error: 'attn.attention' op cannot be compiled for the GPU yet: ALiBi with a latent cache
func.func @mla(%q: !attn.q<1x128x576xbf16>, %kv: !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>)
    -> !attn.out<1x128x512xbf16> {
  // The latent kernel has no ALiBi slopes.
  %out = attn.attention(%q, %kv) {alibi, scale = 0.0721687824 : f32}
      : !attn.q<1x128x576xbf16>, !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>> -> !attn.out<1x128x512xbf16>
  return %out : !attn.out<1x128x512xbf16>
}
