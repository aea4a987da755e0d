// RUN: not attnc compile %s --arch banana --emit=gpu 2>&1 | FileCheck %s

// An architecture attnc has no schedule for is refused before anything is
// compiled, with the supported list.
// CHECK: --arch: unsupported GPU architecture 'banana'; attnc compiles for sm_80, sm_86, sm_87, sm_89, sm_90a
func.func @f(%q: !attn.q<1x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>)
    -> !attn.out<1x8x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<1x8x64xbf16>
  return %out : !attn.out<1x8x64xbf16>
}
