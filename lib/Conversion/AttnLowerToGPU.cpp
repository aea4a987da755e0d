//===- AttnLowerToGPU.cpp - attn ops to attn_gpu kernels and launches -----===//

#include "attnc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLOWERTOGPU
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
namespace gpu = mlir::attn_gpu;

namespace {

/// The CTA's KV tiles in visiting order, `[begin, end)`.
struct TileRange {
  Value begin, end;
};

TileRange buildTileRange(OpBuilder &b, Location loc) {
  return {gpu::TilesBeginOp::create(b, loc, b.getIndexType()),
          gpu::TilesEndOp::create(b, loc, b.getIndexType())};
}

UnitAttr unitIf(OpBuilder &b, bool set) {
  return set ? b.getUnitAttr() : UnitAttr();
}

/// The type of an optional operand, or no attribute.
TypeAttr typeIf(Value value) {
  return value ? TypeAttr::get(value.getType()) : TypeAttr();
}

/// `partial()` on the tiles the mask analysis says need the per-element
/// mask and `full()` (if any) on the others: a branch on `tile_is_partial`
/// where only some tiles do.
void buildByPartiality(OpBuilder &b, Location loc, gpu::MaskAnalysisAttr masks,
                       Value tile, llvm::function_ref<void()> partial,
                       llvm::function_ref<void()> full) {
  switch (masks.getPartial()) {
  case gpu::PartialTiles::Never:
    if (full)
      full();
    return;
  case gpu::PartialTiles::Always:
    partial();
    return;
  case gpu::PartialTiles::Edges: {
    auto isPartial = gpu::TileIsPartialOp::create(b, loc, b.getI1Type(), tile);
    auto ifPartial =
        scf::IfOp::create(b, loc, isPartial, /*withElse=*/bool(full));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifPartial.thenBlock());
    partial();
    if (full) {
      b.setInsertionPointToStart(ifPartial.elseBlock());
      full();
    }
    return;
  }
  }
}

/// Modifiers, then the masks on the tiles the mask analysis says need them,
/// in one op per tile.
void buildModifyScores(OpBuilder &b, Location loc, gpu::MaskAnalysisAttr masks,
                       Value tile) {
  buildByPartiality(
      b, loc, masks, tile,
      [&] { gpu::ModifyScoresOp::create(b, loc, tile, /*masked=*/true); },
      [&] { gpu::ModifyScoresOp::create(b, loc, tile, /*masked=*/false); });
}

/// The warp-specialized consumers' form of buildModifyScores: the modifiers
/// on every tile, then the masks apart (`mask_scores`), so that the
/// modifiers are built once rather than in each arm of the partial branch.
void buildModifyThenMaskScores(OpBuilder &b, Location loc,
                               gpu::MaskAnalysisAttr masks, Value tile) {
  gpu::ModifyScoresOp::create(b, loc, tile, /*masked=*/false);
  buildByPartiality(
      b, loc, masks, tile, [&] { gpu::MaskScoresOp::create(b, loc, tile); },
      nullptr);
}

/// `for k in [0, work_items): if (begin_item k) body()`, at the insertion
/// point, which it leaves after the loop.
void buildForEachItem(OpBuilder &b, Location loc,
                      llvm::function_ref<void()> body) {
  auto count = gpu::WorkItemsOp::create(b, loc, b.getIndexType());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, zero, count, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  auto live =
      gpu::BeginItemOp::create(b, loc, b.getI1Type(), loop.getInductionVar());
  auto ifLive = scf::IfOp::create(b, loc, live, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifLive.thenBlock());
  body();
}

/// The tile loop of a consumer's work item: tile t's scores are issued,
/// then tile t-1's P.V, and t's softmax runs while that P.V does. ptxas
/// serializes every wgmma of a kernel where a wgmma or its wait sits behind
/// a condition it does not see as the loop's own exit test, so the first
/// scores and the last P.V are outside the loop. The loop exits in the
/// middle (an scf.while): each pass does a tile's modifiers, masks and
/// softmax and then, unless it was the last tile, issues the next tile's
/// scores and this tile's P.V, so the softmax is built once, and the
/// modifiers too, the masks apart. The issues are on the path back to the
/// loop's head, behind the exit test itself; the same issues behind an `if`
/// of their own inside an scf.for serialize every wgmma (C7515). With
/// `lean_tile_loop`, the form that holds fewer registers: the first tile's
/// softmax built apart, before an scf.for whose passes issue first, and
/// the masks in the modifiers' pass (buildModifyScores).
void buildTileLoop(OpBuilder &b, Location loc, gpu::PlanAttr plan,
                   gpu::MaskAnalysisAttr masks, Value first, Value end,
                   Value one) {
  // A consumer's turn at the tensor cores: tile `tile`'s scores and, with
  // `valuesTile`, that tile's P.V; it then waits for the scores alone.
  auto takeTurn = [&](Value tile, Value valuesTile) {
    gpu::AwaitTurnOp::create(b, loc);
    gpu::IssueScoresOp::create(b, loc, tile);
    if (valuesTile)
      gpu::IssueValuesOp::create(b, loc, valuesTile);
    gpu::PassTurnOp::create(b, loc);
    gpu::WaitScoresOp::create(b, loc, /*pending=*/valuesTile ? 1 : 0);
  };
  bool lean = plan.getLeanTileLoop();
  auto modifyMaskAndSoftmax = [&](Value tile) {
    if (lean)
      buildModifyScores(b, loc, masks, tile);
    else
      buildModifyThenMaskScores(b, loc, masks, tile);
    gpu::SoftmaxUpdateOp::create(b, loc);
  };
  takeTurn(first, Value());
  if (lean) {
    modifyMaskAndSoftmax(first);
    Value second = arith::AddIOp::create(b, loc, first, one);
    auto loop = scf::ForOp::create(b, loc, second, end, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value tile = loop.getInductionVar();
    takeTurn(tile, arith::SubIOp::create(b, loc, tile, one));
    modifyMaskAndSoftmax(tile);
    return;
  }
  Type index = b.getIndexType();
  auto loop = scf::WhileOp::create(b, loc, TypeRange{index}, first);
  OpBuilder::InsertionGuard guard(b);
  Block *before = b.createBlock(&loop.getBefore(), {}, {index}, {loc});
  modifyMaskAndSoftmax(before->getArgument(0));
  Value next = arith::AddIOp::create(b, loc, before->getArgument(0), one);
  auto more =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next, end);
  scf::ConditionOp::create(b, loc, more, next);
  Block *after = b.createBlock(&loop.getAfter(), {}, {index}, {loc});
  Value issued = after->getArgument(0);
  takeTurn(issued, arith::SubIOp::create(b, loc, issued, one));
  scf::YieldOp::create(b, loc, issued);
}

/// One work item of a consumer: its rows, the tile loop, the last P.V.
/// Consumers issue in turns, which run on from one item to the next
/// (`end_turns` follows the loop). With two query tiles a consumer
/// (`q_buffers = 2`), the epilogue stages the output through the item's
/// own query tile, so the tile goes back to the producer after
/// `store_state` rather than after the last scores: the next item's
/// queries are already in the other one.
void buildConsumerItem(OpBuilder &b, Location loc, gpu::PlanAttr plan,
                       gpu::MaskAnalysisAttr masks) {
  gpu::BeginRowsOp::create(b, loc);
  auto [first, end] = buildTileRange(b, loc);
  auto any =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, first, end);
  auto ifAny = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifAny.thenBlock());
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    buildTileLoop(b, loc, plan, masks, first, end, one);
    gpu::AwaitTurnOp::create(b, loc);
    gpu::IssueValuesOp::create(b, loc, arith::SubIOp::create(b, loc, end, one));
    gpu::PassTurnOp::create(b, loc);
  }
  if (plan.getQueryBuffers() > 1) {
    gpu::StoreStateOp::create(b, loc);
    gpu::ReleaseQueryOp::create(b, loc);
    return;
  }
  gpu::ReleaseQueryOp::create(b, loc);
  gpu::StoreStateOp::create(b, loc);
}

/// A loop over the item's tiles in visiting order (`tile_range`), the
/// latent consumers' programs: `body` builds one tile's ops.
void buildForEachTile(OpBuilder &b, Location loc,
                      llvm::function_ref<void(Value tile)> body) {
  auto [begin, end] = buildTileRange(b, loc);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, begin, end, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

/// One work item of a latent plan's scorer: each tile's scores, softmax and
/// P, then its half of the tile's P.V, waited for before the next tile's
/// scores. With two stages of whole cache rows, a tile held across the next
/// one's scores (the prefill's order) would leave none to prefetch into:
/// waiting here releases the stage a tile's scores and softmax before the
/// producer's copy into it is needed.
void buildScorerItem(OpBuilder &b, Location loc, gpu::MaskAnalysisAttr masks) {
  gpu::BeginRowsOp::create(b, loc);
  buildForEachTile(b, loc, [&](Value tile) {
    gpu::IssueScoresOp::create(b, loc, tile);
    gpu::WaitScoresOp::create(b, loc, /*pending=*/0);
    buildModifyScores(b, loc, masks, tile);
    gpu::SoftmaxUpdateOp::create(b, loc);
    gpu::IssueValuesOp::create(b, loc, tile);
    gpu::WaitValuesOp::create(b, loc);
  });
  gpu::ReleaseQueryOp::create(b, loc);
  gpu::StoreStateOp::create(b, loc);
}

/// One work item of a latent plan's value consumer: for each tile, once
/// the scorer has written its P, O += P.V on its half of the columns.
void buildValueConsumerItem(OpBuilder &b, Location loc) {
  gpu::BeginRowsOp::create(b, loc);
  buildForEachTile(b, loc, [&](Value tile) {
    gpu::AwaitProbabilitiesOp::create(b, loc, tile);
    gpu::IssueValuesOp::create(b, loc, tile);
    gpu::WaitValuesOp::create(b, loc);
  });
  gpu::StoreStateOp::create(b, loc);
}

/// The consumers of a plan: FlashAttention-3's take turns; a latent plan's
/// are a scorer and a value consumer, two programs.
void buildConsumers(OpBuilder &b, Location loc, gpu::PlanAttr plan,
                    gpu::MaskAnalysisAttr masks) {
  gpu::BeginConsumerOp::create(b, loc);
  if (!plan.isLatent()) {
    buildForEachItem(b, loc, [&] { buildConsumerItem(b, loc, plan, masks); });
    gpu::EndTurnsOp::create(b, loc);
    return;
  }
  auto scorer = gpu::IsScorerOp::create(b, loc, b.getI1Type());
  auto roles = scf::IfOp::create(b, loc, scorer, /*withElseRegion=*/true);
  b.setInsertionPointToStart(roles.thenBlock());
  buildForEachItem(b, loc, [&] { buildScorerItem(b, loc, masks); });
  b.setInsertionPointToStart(roles.elseBlock());
  buildForEachItem(b, loc, [&] { buildValueConsumerItem(b, loc); });
}

/// The warp-specialized CTA, persistent over its work items: the producer
/// streams each item's tiles, the consumers compute them.
void buildWarpSpecializedBody(OpBuilder &b, Location loc, gpu::PlanAttr plan,
                              gpu::MaskAnalysisAttr masks) {
  auto producer = gpu::IsProducerOp::create(b, loc, b.getI1Type());
  auto roles = scf::IfOp::create(b, loc, producer, /*withElseRegion=*/true);
  b.setInsertionPointToStart(roles.thenBlock());
  auto issuer = gpu::BeginProducerOp::create(b, loc, b.getI1Type());
  auto ifIssuer = scf::IfOp::create(b, loc, issuer, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifIssuer.thenBlock());
  buildForEachItem(b, loc, [&] { gpu::ProduceTilesOp::create(b, loc); });
  b.setInsertionPointToStart(roles.elseBlock());
  buildConsumers(b, loc, plan, masks);
}

/// Builds the body of one attention kernel: the per-CTA program that the
/// device tile library executes step by step.
void buildAttentionBody(OpBuilder &b, Location loc, gpu::PlanAttr plan,
                        gpu::MaskAnalysisAttr masks, Type kvType) {
  auto live = gpu::BeginOp::create(b, loc, b.getI1Type());
  auto ifLive = scf::IfOp::create(b, loc, live, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifLive.thenBlock());
  if (plan.isWarpSpecialized())
    return buildWarpSpecializedBody(b, loc, plan, masks);
  gpu::LoadQueryOp::create(b, loc);
  TileRange range = buildTileRange(b, loc);
  // Pipeline prologue: the first stages-1 tiles are in flight before the
  // loop; each iteration then waits for one tile and requests another.
  for (int64_t s = 0; s + 1 < plan.getStages(); ++s) {
    Value tile = range.begin;
    if (s > 0)
      tile = arith::AddIOp::create(b, loc, tile,
                                   arith::ConstantIndexOp::create(b, loc, s));
    gpu::PrefetchTileOp::create(b, loc, tile, TypeAttr::get(kvType));
  }
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value ahead = arith::ConstantIndexOp::create(b, loc, plan.getStages() - 1);
  auto loop = scf::ForOp::create(b, loc, range.begin, range.end, one);
  b.setInsertionPointToStart(loop.getBody());
  Value tile = loop.getInductionVar();
  gpu::WaitTileOp::create(b, loc, tile);
  Value next = arith::AddIOp::create(b, loc, tile, ahead);
  gpu::PrefetchTileOp::create(b, loc, next, TypeAttr::get(kvType));
  gpu::ScoreMmaOp::create(b, loc, tile);
  buildModifyScores(b, loc, masks, tile);
  gpu::SoftmaxUpdateOp::create(b, loc);
  gpu::ValueMmaOp::create(b, loc, tile);
  b.setInsertionPointAfter(loop);
  gpu::StoreStateOp::create(b, loc);
}

struct AttnLowerToGPUPass
    : public attn::impl::AttnLowerToGPUBase<AttnLowerToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = module->getAttrOfType<gpu::TargetAttr>(
        attn_gpu::AttnGPUDialect::kTargetAnnotation);
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<AttentionOp, MergeStatesOp>(op))
        ops.push_back(op);
    });
    if (!ops.empty() && !target) {
      module.emitError("no attn_gpu.target; run attn-plan first");
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    for (Operation *op : ops) {
      LogicalResult result =
          isa<AttentionOp>(op)
              ? lowerAttention(cast<AttentionOp>(op), target, symbols)
              : lowerMerge(cast<MergeStatesOp>(op), symbols);
      if (failed(result))
        return signalPassFailure();
    }
  }

  LogicalResult lowerAttention(AttentionOp op, gpu::TargetAttr target,
                               SymbolTable &symbols) {
    auto plan = op->getAttrOfType<gpu::PlanAttr>(
        attn_gpu::AttnGPUDialect::kPlanAnnotation);
    auto masks = op->getAttrOfType<gpu::MaskAnalysisAttr>(
        attn_gpu::AttnGPUDialect::kMasksAnnotation);
    if (!plan || !masks)
      return op.emitOpError("is not planned; run attn-plan and "
                            "attn-analyze-masks first");
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(getOperation().getBody());
    // A latent cache is described to the kernel as the key and value heads
    // it reads (the values are the keys' leading columns).
    Type key = op.getKey().getType(), value = key;
    if (auto latent = dyn_cast<LatentKVType>(key)) {
      key = latent.asKeys();
      value = latent.asValues();
    } else if (op.getValue()) {
      value = op.getValue().getType();
    }
    SmallVector<Type> captureTypes(op.getCaptures().getTypes());
    FloatAttr softcap = op.getSoftcapAttr();
    auto kernel = gpu::KernelOp::create(
        b, loc, b.getStringAttr("attention"), target, plan, masks,
        TypeAttr::get(op.getQuery().getType()), TypeAttr::get(key),
        TypeAttr::get(value), TypeAttr::get(op.getOutput().getType()),
        unitIf(b, op.getLse() != nullptr), op.getCausalAttr(),
        op.getWindowAttr(), b.getF32FloatAttr(op.getEffectiveScale()), softcap,
        op.getAlibiAttr(), unitIf(b, op.getQuerySegments() != nullptr),
        /*merge_splits=*/nullptr, typeIf(op.getKeyScale()),
        typeIf(op.getValueScale()), b.getTypeArrayAttr(captureTypes));
    symbols.insert(kernel);
    kernel.getScoreMod().takeBody(op.getScoreMod());
    kernel.getMaskMod().takeBody(op.getMaskMod());
    kernel.walk([&](YieldOp yield) {
      OpBuilder at(yield);
      gpu::YieldOp::create(at, yield.getLoc(), yield->getOperand(0));
      yield.erase();
    });
    Block *body = b.createBlock(&kernel.getBody());
    b.setInsertionPointToStart(body);
    buildAttentionBody(b, loc, plan, masks, key);

    int64_t splits = op.getKvSplits().value_or(1);
    auto geometry = gpu::LaunchAttr::get(ctx, plan.getThreads(),
                                         kernel.getSharedMemoryBytes(),
                                         plan.getBlockM(), splits);
    replaceWithLaunch(op, kernel.getSymName(), geometry);
    return success();
  }

  LogicalResult lowerMerge(MergeStatesOp op, SymbolTable &symbols) {
    MLIRContext *ctx = op.getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(getOperation().getBody());
    OutputType in = cast<OutputType>(op.getOutputs().front().getType());
    OutputType out = op.getOutput().getType();
    auto kernel = gpu::MergeKernelOp::create(
        b, op.getLoc(), b.getStringAttr("merge"),
        TypeAttr::get(in.getElementType()), TypeAttr::get(out.getElementType()),
        b.getI64IntegerAttr(out.getHeadDim()));
    symbols.insert(kernel);
    int64_t splits = op.getKvSplits().value_or(op.getOutputs().size());
    auto geometry = gpu::LaunchAttr::get(ctx, 128, 0, 4, splits);
    replaceWithLaunch(op, kernel.getSymName(), geometry);
    return success();
  }

  void replaceWithLaunch(Operation *op, StringRef kernel,
                         gpu::LaunchAttr geometry) {
    OpBuilder b(op);
    auto launch =
        gpu::LaunchOp::create(b, op->getLoc(), op->getResultTypes(),
                              FlatSymbolRefAttr::get(b.getContext(), kernel),
                              op->getOperands(), geometry);
    op->replaceAllUsesWith(launch.getResults());
    op->erase();
  }
};

} // namespace
