// RUN: not attnc run %s --grid-ctas -1 2>&1 | FileCheck %s

// A negative cap on the persistent grid is refused by name before anything
// is compiled or run (exit 2), on machines with or without a GPU.
// CHECK: --grid-ctas: Value -1 not in range 0 to 2147483647
func.func @f(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>)
    -> !attn.out<?x8x64xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x8x64xbf16>, !attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> !attn.out<?x8x64xbf16>
  return %out : !attn.out<?x8x64xbf16>
}
