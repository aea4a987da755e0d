//===- AttnSplitKV.cpp - partial attentions plus a merge ------------------===//

#include "attnc/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNSPLITKV
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct AttnSplitKVPass : public attn::impl::AttnSplitKVBase<AttnSplitKVPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> candidates;
    getOperation()->walk([&](AttentionOp op) {
      auto plan = op->getAttrOfType<attn_gpu::PlanAttr>(attn_gpu::AttnGPUDialect::kPlanAnnotation);
      if (plan && plan.getKvSplits() > 1 && !op.getKvSplits())
        candidates.push_back(op);
    });
    for (AttentionOp op : candidates)
      split(op);
  }

  void split(AttentionOp op) {
    IRRewriter rewriter(op);
    MLIRContext *ctx = op.getContext();
    auto plan = op->getAttrOfType<attn_gpu::PlanAttr>(attn_gpu::AttnGPUDialect::kPlanAnnotation);
    OutputType out = op.getOutput().getType();
    auto partialOut =
        OutputType::get(ctx, out.getSeqLen(), out.getNumHeads(),
                        out.getHeadDim(), Float32Type::get(ctx),
                        out.getLayout(), out.getPageSize(), out.getPageOrder());
    QueryType q = op.getQuery().getType();
    auto lse = LseType::get(ctx, q.getSeqLen(), q.getNumHeads(), q.getLayout());

    OperationState state(op.getLoc(), op->getName());
    state.addOperands(op->getOperands());
    state.addAttributes(op->getDiscardableAttrDictionary().getValue());
    state.propertiesAttr = op->getPropertiesAsAttribute();
    state.addTypes(TypeRange{partialOut, lse});
    for (Region &region : op->getRegions()) {
      Region *copy = state.addRegion();
      copy->takeBody(region);
    }
    Operation *partial = rewriter.create(state);
    auto partialOp = cast<AttentionOp>(partial);
    partialOp.setKvSplitsAttr(rewriter.getI64IntegerAttr(plan.getKvSplits()));

    auto merge = MergeStatesOp::create(
        rewriter, op.getLoc(), TypeRange{out, lse},
        ValueRange{partialOp.getOutput()}, ValueRange{partialOp.getLse()},
        rewriter.getI64IntegerAttr(plan.getKvSplits()));
    op.getOutput().replaceAllUsesWith(merge.getOutput());
    if (Value oldLse = op.getLse())
      oldLse.replaceAllUsesWith(merge.getLse());
    rewriter.eraseOp(op);
  }
};

} // namespace
