// RUN: not attnc compile %s --emit=attn 2>&1 | FileCheck %s

// A discardable attribute that nothing reads would leave the kernel as if
// it were not there: `causal` belongs on attn.attention, and on the
// function it is refused rather than ignored.
// CHECK: attnc-unread-attribute.mlir:[[# @LINE + 1]]:1: error: attribute 'causal' on 'func.func' would be ignored: attnc reads no such attribute there
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>,
             %v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16>
    attributes {causal} {
  %o = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16>
      -> !attn.out<?x8x64xbf16>
  return %o : !attn.out<?x8x64xbf16>
}
