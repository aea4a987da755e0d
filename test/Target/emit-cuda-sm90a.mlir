// RUN: attnc compile %s --arch sm_90a --emit=cuda | FileCheck %s

// The warp-specialized prefill's tile loop exits in the middle: the C++ is
// a do-while whose body does a tile's modifiers, its masks where the tile
// is partial, and its softmax, then, where another tile
// follows, issues its scores and this tile's P.V; ptxas keeps the wgmma
// pipeline of exactly this shape (a `for` with the issues behind an `if`
// serializes every wgmma). The first scores come before the loop, the last
// P.V after it.
// CHECK: #include "attnc/device/hopper/prefill.h"
// CHECK: cta.issueScores([[FIRST:v[0-9]+]]);
// CHECK: cta.waitScores<0>();
// CHECK-NEXT: int32_t [[TILE:v[0-9]+]];
// CHECK-NEXT: [[TILE]] = [[FIRST]];
// CHECK-NEXT: bool [[MORE:v[0-9]+]];
// CHECK-NEXT: do {
// CHECK-NEXT: int32_t [[CURRENT:v[0-9]+]] = [[TILE]];
// CHECK-NEXT: cta.modifyScores<false>([[CURRENT]]);
// CHECK-NEXT: bool [[PARTIAL:v[0-9]+]] = cta.visitsPartialTile([[CURRENT]]);
// CHECK-NEXT: if ([[PARTIAL]]) {
// CHECK-NEXT: cta.maskScores([[CURRENT]]);
// CHECK-NEXT: }
// CHECK-NEXT: cta.onlineSoftmax();
// CHECK-NEXT: int32_t [[NEXT:v[0-9]+]] = [[CURRENT]] + {{v[0-9]+}};
// CHECK-NEXT: bool [[PROCEED:v[0-9]+]] = [[NEXT]] < {{v[0-9]+}};
// CHECK-NEXT: [[MORE]] = [[PROCEED]];
// CHECK-NEXT: if ([[PROCEED]]) {
// CHECK: cta.issueScores([[NEXT]]);
// CHECK-NEXT: cta.issueValues({{v[0-9]+}});
// CHECK-NEXT: cta.passTurn();
// CHECK-NEXT: cta.waitScores<1>();
// CHECK-NEXT: [[TILE]] = [[NEXT]];
// CHECK-NEXT: }
// CHECK-NEXT: } while ([[MORE]]);
// CHECK-NEXT: cta.awaitTurn();
// CHECK: cta.issueValues(
// CHECK: cta.finish();
func.func @prefill(%q: !attn.q<?x32x128xbf16>, %k: !attn.kv<?x8x128xbf16>,
                   %v: !attn.kv<?x8x128xbf16>) -> !attn.out<?x32x128xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>
      -> !attn.out<?x32x128xbf16>
  return %out : !attn.out<?x32x128xbf16>
}
