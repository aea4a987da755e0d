//===- AttnFuseSplitMerge.cpp - split-KV kernels that merge themselves ----===//

#include "attnc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFUSESPLITMERGE
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
namespace gpu = mlir::attn_gpu;

namespace {

struct AttnFuseSplitMergePass
    : public attn::impl::AttnFuseSplitMergeBase<AttnFuseSplitMergePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<gpu::LaunchOp> merges;
    module.walk([&](gpu::LaunchOp launch) {
      if (symbols.lookup<gpu::MergeKernelOp>(launch.getKernel()))
        merges.push_back(launch);
    });
    for (gpu::LaunchOp merge : merges)
      if (gpu::LaunchOp split = splitOnlyMergedBy(merge, symbols))
        fuse(split, merge, symbols);
  }

  /// The split-KV attention launch whose partial states `merge` alone
  /// reads, or null.
  gpu::LaunchOp splitOnlyMergedBy(gpu::LaunchOp merge, SymbolTable &symbols) {
    if (merge.getArgs().size() != 2)
      return {};
    auto split = merge.getArgs()[0].getDefiningOp<gpu::LaunchOp>();
    if (!split || split.getNumResults() != 2 ||
        merge.getArgs()[0] != split.getResult(0) ||
        merge.getArgs()[1] != split.getResult(1) ||
        !split.getResult(0).hasOneUse() || !split.getResult(1).hasOneUse())
      return {};
    auto kernel = symbols.lookup<gpu::KernelOp>(split.getKernel());
    if (!kernel || !kernel.getPlan().mergesOwnSplits() ||
        kernel.getPlan().getKvSplits() < 2 ||
        split.getGeometry().getKvSplits() < 2)
      return {};
    // The kernel is rewritten in place: no other launch may run it.
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(kernel, getOperation());
    if (!uses || !llvm::hasSingleElement(*uses))
      return {};
    return split;
  }

  void fuse(gpu::LaunchOp split, gpu::LaunchOp merge, SymbolTable &symbols) {
    auto kernel = symbols.lookup<gpu::KernelOp>(split.getKernel());
    kernel.setOutputAttr(TypeAttr::get(merge.getResult(0).getType()));
    kernel.setMergeSplits(true);
    // A kernel that merges in a second launch of itself has nothing to do
    // after its stores.
    if (!kernel.getPlan().mergesInSecondLaunch())
      kernel.getBody().walk([](gpu::StoreStateOp store) {
        OpBuilder b(store);
        b.setInsertionPointAfter(store);
        gpu::MergeSplitsOp::create(b, store.getLoc());
      });
    OpBuilder b(merge);
    auto fused = gpu::LaunchOp::create(
        b, merge.getLoc(), merge.getResultTypes(), split.getKernelAttr(),
        split.getArgs(), split.getGeometry());
    merge.replaceAllUsesWith(fused.getResults());
    auto mergeKernel = symbols.lookup<gpu::MergeKernelOp>(merge.getKernel());
    merge.erase();
    split.erase();
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(mergeKernel, getOperation());
    if (uses && uses->empty())
      symbols.erase(mergeKernel);
  }
};

} // namespace
