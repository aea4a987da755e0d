//===- Passes.td - passes over the attn dialect ------------*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTN_PASSES_TD
#define ATTNC_DIALECT_ATTN_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnCanonicalize : Pass<"attn-canonicalize"> {
  let summary = "Bring every attention variant into one normal form";
  let description = [{
    Rewrites equivalent spellings of a variant into one, so that the planner
    and mask analysis see every variant the same way, and folds constants
    inside the `score_mod` and `mask_mod` regions. The normal form:

    - key/value heads expanded with `attn.repeat_kv` are read grouped, never
      copied (grouped-query attention); a repeat by 1 disappears (MHA);
    - a `score_mod` that is exactly a tanh soft-cap `c * tanh(s / c)` becomes
      the `softcap` attribute, and one that only multiplies by a constant
      is folded into `scale`; an identity `score_mod` and a `mask_mod` that
      is always true are dropped;
    - a sliding window with right extent 0 is marked `causal`; a window whose
      left extent covers every key (static `kv_len`) gives way to `causal`
      or to no mask; `sinks` without a window, or of 0, are dropped;
    - a `scale` equal to the default `1/sqrt(head_dim)` is dropped;
    - captures that no region reads are dropped.

    Before:

    ```mlir
    %k32 = attn.repeat_kv %k by 4 : !attn.kv<?x8x128xbf16> -> !attn.kv<?x32x128xbf16>
    %v32 = attn.repeat_kv %v by 4 : !attn.kv<?x8x128xbf16> -> !attn.kv<?x32x128xbf16>
    %o = attn.attention(%q, %k32, %v32) {window = #attn.window<4096, 0>}
        : !attn.q<?x32x128xbf16>, !attn.kv<4096x32x128xbf16>, ...
        score_mod {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
          %c = arith.constant 30.0 : f32
          %d = arith.divf %s, %c : f32
          %t = math.tanh %d : f32
          %r = arith.mulf %t, %c : f32
          attn.yield %r : f32
        }
    ```

    After:

    ```mlir
    %o = attn.attention(%q, %k, %v) {causal, softcap = 3.000000e+01 : f32}
        : !attn.q<?x32x128xbf16>, !attn.kv<4096x8x128xbf16>, ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // ATTNC_DIALECT_ATTN_PASSES_TD
