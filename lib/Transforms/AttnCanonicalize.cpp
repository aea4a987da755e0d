//===- AttnCanonicalize.cpp - the attn-canonicalize pass ------------------===//
//
// Runs every registered canonicalization pattern (the attn normal form of
// AttnCanonicalization.cpp plus upstream folding inside the modifier regions)
// to a fixed point.
//
//===----------------------------------------------------------------------===//

#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCANONICALIZE
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// `arith.cmpf false|true` is a constant whatever its operands. MLIR 22's
/// own CmpFIntToFPConst pattern crashes on it when an operand is an
/// int-to-float conversion (docs/UPSTREAM.md); folding it first, with a
/// higher benefit, keeps that pattern from ever seeing one.
struct FoldConstantPredicateCmpF : OpRewritePattern<arith::CmpFOp> {
  FoldConstantPredicateCmpF(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/100) {}
  LogicalResult matchAndRewrite(arith::CmpFOp op,
                                PatternRewriter &rewriter) const override {
    arith::CmpFPredicate predicate = op.getPredicate();
    if (predicate != arith::CmpFPredicate::AlwaysFalse &&
        predicate != arith::CmpFPredicate::AlwaysTrue)
      return failure();
    if (!op.getType().isInteger(1))
      return failure(); // vector compares are refused by the verifier
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op,
        rewriter.getBoolAttr(predicate == arith::CmpFPredicate::AlwaysTrue));
    return success();
  }
};

struct AttnCanonicalizePass
    : attn::impl::AttnCanonicalizeBase<AttnCanonicalizePass> {
  LogicalResult initialize(MLIRContext *context) override {
    RewritePatternSet patterns(context);
    patterns.add<FoldConstantPredicateCmpF>(context);
    for (Dialect *dialect : context->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : context->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, context);
    frozenPatterns = FrozenRewritePatternSet(std::move(patterns));
    return success();
  }

  void runOnOperation() override {
    if (failed(applyPatternsGreedily(getOperation(), frozenPatterns))) {
      getOperation()->emitError("attn-canonicalize did not reach a fixed "
                                "point; please report this variant");
      signalPassFailure();
    }
  }

  FrozenRewritePatternSet frozenPatterns;
};

} // namespace
