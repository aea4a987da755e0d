//===- AttnPlan.cpp - choose target, schedule and tiles -------------------===//

#include "attnc/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPLAN
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using attn_gpu::PlanAttr;
using attn_gpu::Schedule;

namespace {

/// Names the first feature of `op` that the GPU pipeline cannot compile,
/// or returns an empty string.
std::string unsupportedFeature(AttentionOp op) {
  if (op.isLatent())
    return "multi-head latent attention (!attn.latent_kv)";
  auto key = cast<KVType>(op.getKey().getType());
  Type element = key.getElementType();
  if (!element.isBF16() && !element.isF16())
    return "a " + [&] {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << element;
      return s;
    }() + " key/value cache (bf16 and f16 only)";
  if (op.getQuery().getType().getElementType() != element)
    return "queries of another element type than the keys";
  if (op.getQKHeadDim() % 64 != 0 || op.getVHeadDim() % 64 != 0)
    return "head dim " + std::to_string(op.getQKHeadDim()) + "/" +
           std::to_string(op.getVHeadDim()) + " (multiples of 64 only)";
  if (op.getQuerySegments() && key.getLayout() == TokenLayout::Paged)
    return "document segments with a paged cache";
  Type out = op.getOutput().getType().getElementType();
  if (!out.isBF16() && !out.isF16() && !out.isF32())
    return "an output of another type than bf16, f16 or f32";
  return "";
}

struct AttnPlanPass : public attn::impl::AttnPlanBase<AttnPlanPass> {
  using AttnPlanBase::AttnPlanBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ModuleOp module = getOperation();
    auto target = attn_gpu::TargetAttr::getChecked(
        [&] { return module.emitError(); }, ctx, StringRef(arch), int64_t(sms),
        int64_t(smem));
    if (!target)
      return signalPassFailure();
    if (failed(verifyTuningOptions(module)))
      return signalPassFailure();
    module->setAttr(attn_gpu::AttnGPUDialect::kTargetAnnotation, target);
    WalkResult result = module.walk([&](AttentionOp op) {
      std::string feature = unsupportedFeature(op);
      if (!feature.empty()) {
        op.emitOpError("cannot be compiled for the GPU yet: ") << feature;
        return WalkResult::interrupt();
      }
      FailureOr<PlanAttr> plan = choosePlan(op);
      if (failed(plan))
        return WalkResult::interrupt();
      op->setAttr(attn_gpu::AttnGPUDialect::kPlanAnnotation, *plan);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// The knobs reach the plan unchecked otherwise (PlanAttr::get does not
  /// verify), so they are range-checked against what a plan may hold.
  LogicalResult verifyTuningOptions(ModuleOp module) {
    auto outside = [&](StringRef option, int64_t value, int64_t lo,
                       int64_t hi) -> LogicalResult {
      if (value >= lo && value <= hi)
        return success();
      return module.emitError("attn-plan option ")
             << option << " must be in [" << lo << ", " << hi << "], got "
             << value;
    };
    return success(
        succeeded(outside("max-splits", maxSplits, 1,
                          attnc::limits::kMaxKVSplits)) &&
        succeeded(outside("prefill-warps", prefillWarps, 0, 8)) &&
        succeeded(outside("decode-stages", decodeStages, 0, 8)));
  }

  FailureOr<PlanAttr> choosePlan(AttentionOp op) {
    MLIRContext *ctx = &getContext();
    int64_t qkDim = op.getQKHeadDim(), vDim = op.getVHeadDim();
    auto fits = [&](PlanAttr plan) {
      return plan.getSharedMemoryBytes(qkDim, vDim) <= smem;
    };
    PlanAttr plan;
    if (op.getQuery().getType().getSeqLen() == 1) {
      // Decode has few rows per request: every warp takes a quarter of each
      // KV tile. Three stages keep enough bytes in flight and leave room for
      // two CTAs per SM (measured on an H100: 3 stages 0.40 ms, 4 stages
      // 0.45 ms, 2 stages 0.43 ms on D1; docs/PERFORMANCE.md).
      auto decode = [&](int64_t stages) {
        return PlanAttr::get(ctx, Schedule::decode, 16, 64, 1, 4, stages,
                             maxSplits, true);
      };
      int64_t stages = decodeStages > 0 ? decodeStages : 3;
      while (stages > 2 && !fits(decode(stages)))
        --stages;
      plan = decode(stages);
    } else {
      int64_t blockN = std::max(qkDim, vDim) > 128 ? 32 : 64;
      // Eight warps share each K/V tile loaded into shared memory (measured
      // on P1: 5.06 ms against 5.38 ms with four; docs/PERFORMANCE.md).
      int64_t warps = prefillWarps > 0 ? prefillWarps : 8;
      plan = PlanAttr::get(ctx, Schedule::prefill, 16 * warps, blockN, warps, 1,
                           /*stages=*/2, 1, qkDim <= 128);
    }
    if (!fits(plan))
      return op.emitOpError("needs more shared memory than the target's ")
             << smem << " bytes";
    return plan;
  }
};

} // namespace
