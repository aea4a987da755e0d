//===- AttnAnalyzeMasks.cpp - closed-form KV tile classification ----------===//

#include "attnc/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNANALYZEMASKS
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using attn_gpu::PartialTiles;

namespace {

struct AttnAnalyzeMasksPass
    : public attn::impl::AttnAnalyzeMasksBase<AttnAnalyzeMasksPass> {
  void runOnOperation() override {
    getOperation()->walk([&](AttentionOp op) {
      auto plan = op->getAttrOfType<attn_gpu::PlanAttr>(attn_gpu::AttnGPUDialect::kPlanAnnotation);
      if (!plan) {
        op.emitOpError("has no attn_gpu.plan; run attn-plan first");
        return signalPassFailure();
      }
      bool window = op.getWindow().has_value();
      bool lower = window;
      bool upper = window || op.getCausal();
      int64_t sinks = window ? op.getSinks().value_or(0) : 0;
      PartialTiles partial = PartialTiles::Edges;
      if (op.getMaskMod().empty() == false || op.getQuerySegments())
        partial = PartialTiles::Always;
      else if (!lower && !upper) {
        int64_t kvLen = op.getStaticKVLen();
        if (!ShapedType::isDynamic(kvLen) && kvLen % plan.getBlockN() == 0)
          partial = PartialTiles::Never;
      }
      op->setAttr(attn_gpu::AttnGPUDialect::kMasksAnnotation,
                  attn_gpu::MaskAnalysisAttr::get(op.getContext(), lower, upper,
                                                  sinks, partial));
    });
  }
};

} // namespace
