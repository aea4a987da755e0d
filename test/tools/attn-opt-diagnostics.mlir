// RUN: not attn-opt %s 2>&1 | FileCheck %s

// A malformed variant is rejected with its file, line and column, and the
// driver exits non-zero (`not` fails this test otherwise).
// CHECK: attn-opt-diagnostics.mlir:[[# @LINE + 3]]:10: error: 'attn.attention' op query heads (32) must be a multiple of key/value heads (6)
func.func @bad_groups(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x6x128xbf16>,
                      %v: !attn.kv<?x6x128xbf16>) {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<?x32x128xbf16>, !attn.kv<?x6x128xbf16>, !attn.kv<?x6x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return
}
