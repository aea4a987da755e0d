//===- AttnDialect.td - the attn dialect -------------------*- tablegen -*-===//
//
// The `attn` dialect says *what* attention to compute: one variant per op,
// with the mask, score modifiers, head grouping and KV layout carried by types
// and attributes so that passes can reason about them in closed form.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DIALECT_ATTN_DIALECT_TD
#define ATTNC_DIALECT_ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention variants: what to compute, independent of the GPU";
  let description = [{
    The `attn` dialect describes one attention computation per
    `attn.attention` op. Its operands are typed descriptors of the queries,
    keys and values (head counts, head dims, element types and the KV layout:
    dense, ragged or paged); its attributes carry the declarative masks
    (causal, sliding window, sink tokens, document segments) and score
    modifiers (scale, tanh soft-cap, ALiBi); its optional `score_mod` and
    `mask_mod` regions are the general fallbacks, written with `arith`,
    `math` and `memref.load` ops.

    Attention *states* (an output plus its log-sum-exp) combine with
    `attn.merge_states`, so split-KV, cascade and sequence-parallel attention
    are compositions of attention ops and merges.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // attn annotates no other operation: a discardable `attn.*` attribute
  // (`attn.causal` on a function, say) would be ignored, so it is refused.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect"];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTNC_DIALECT_ATTN_DIALECT_TD
