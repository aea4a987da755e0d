// MLIR 22's arith canonicalization (CmpFIntToFPConst) segfaults on an
// arith.cmpf with the predicate `false` or `true` whose operands are a
// sitofp/uitofp and a constant; `mlir-opt --canonicalize` does too.
// attn-canonicalize applies every loaded dialect's patterns to the regions
// (lib/Transforms/AttnCanonicalize.cpp), and folds such a cmpf to a constant
// first so that pattern never sees one.
func.func @f(%q: !attn.q<?x4x128xbf16>, %k: !attn.kv<?x1x128xbf16>, %v: !attn.kv<?x1x128xbf16>) -> !attn.out<?x4x128xbf16> {
  %o = attn.attention(%q, %k, %v)
      : !attn.q<?x4x128xbf16>, !attn.kv<?x1x128xbf16>, !attn.kv<?x1x128xbf16> -> !attn.out<?x4x128xbf16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kvi: index, %ql: index, %kl: index):
        %i = arith.constant 5 : i32
        %x = arith.sitofp %i : i32 to f32
        %c = arith.constant -2.5 : f32
        %m = arith.cmpf false, %x, %c : f32
        attn.yield %m : i1
      }
  return %o : !attn.out<?x4x128xbf16>
}
