//===- AttnPlan.cpp - choose target, schedule and tiles -------------------===//

#include "attnc/Transforms/Passes.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/wgmma.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPLAN
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using attn_gpu::PlanAttr;
using attnc::Schedule;

namespace {

/// Names the query/key or value head dim the kernels cannot take, with
/// what they take, or returns an empty string.
std::string unsupportedHeadDims(AttentionOp op) {
  using namespace attnc::limits;
  int64_t qk = op.getQKHeadDim(), v = op.getVHeadDim();
  auto supported = [](int64_t d) {
    return d % kKernelHeadDimStep == 0 && d >= kKernelHeadDimStep &&
           d <= kMaxKernelHeadDim;
  };
  if (supported(qk) && supported(v))
    return "";
  return "head dim " + std::to_string(qk) + "/" + std::to_string(v) +
         " (query/key and value head dims must each be a multiple of " +
         std::to_string(kKernelHeadDimStep) + " from " +
         std::to_string(kKernelHeadDimStep) + " to " +
         std::to_string(kMaxKernelHeadDim) +
         ", e.g. 64, 96, 128, 192/128 or 256)";
}

/// How much per-score work a variant adds to the scale: two for each region
/// (arbitrary code whose loads of captured buffers stay in flight), one for
/// each declarative modifier or mask the kernel evaluates per score. The
/// kernel unrolls it over every score a thread holds, beside the output
/// accumulators, so it decides what else fits in the registers.
int64_t scoreWork(AttentionOp op) {
  return 2 * !op.getScoreMod().empty() + 2 * !op.getMaskMod().empty() +
         bool(op.getSoftcap()) + op.getAlibi() +
         (op.getWindow() || op.getSinks().value_or(0) > 0) +
         bool(op.getQuerySegments());
}

/// Bytes of one stored key or value element.
int64_t kvElementBytes(AttentionOp op) {
  return elementBytes(op.getKVElementType());
}

std::string typeName(Type type) {
  std::string name;
  llvm::raw_string_ostream(name) << type;
  return name;
}

/// Names the first feature of a multi-head latent attention that its
/// kernel (hopper/latent.h) cannot compile for `arch`, or returns "".
std::string unsupportedLatentFeature(AttentionOp op, LatentKVType latent,
                                     StringRef arch) {
  using namespace attnc::limits;
  if (arch != "sm_90a")
    return "multi-head latent attention on " + arch.str() +
           " (its kernel is sm_90a's wgmma)";
  // Every element type the attn verifier admits compiles: bf16 or f16
  // queries over a cache of their type or an fp8 one (widened in place).
  int64_t dim = latent.getHeadDim(), values = latent.getLatentDim();
  if (dim % kKernelHeadDimStep != 0 || dim > kMaxLatentHeadDim ||
      values % kLatentDimStep != 0 || values > kMaxLatentDim)
    return "a latent cache of " + std::to_string(values) + " latent and " +
           std::to_string(latent.getRopeDim()) +
           " rope dims (the latent dims must be a multiple of " +
           std::to_string(kLatentDimStep) + " up to " +
           std::to_string(kMaxLatentDim) + ", all dims a multiple of " +
           std::to_string(kKernelHeadDimStep) + " up to " +
           std::to_string(kMaxLatentHeadDim) + ", e.g. 512 + 64)";
  if (op.getAlibi())
    return "ALiBi with a latent cache";
  if (op.getQuerySegments())
    return "document segments with a latent cache";
  return "";
}

/// Names the first feature of `op` that the kernel reading its cache (a
/// latent one, or keys and values) cannot compile for `arch`, or "".
std::string unsupportedCacheFeature(AttentionOp op, StringRef arch) {
  if (auto latent = dyn_cast<LatentKVType>(op.getKey().getType()))
    return unsupportedLatentFeature(op, latent, arch);
  auto key = cast<KVType>(op.getKey().getType());
  Type element = key.getElementType();
  Type query = op.getQuery().getType().getElementType();
  if (!query.isBF16() && !query.isF16())
    return "queries of another element type than bf16 or f16";
  if (isFp8(element)) {
    if (!attn_gpu::TargetAttr::hasFp8Conversions(arch))
      return "an fp8 key/value cache on " + arch.str() +
             " (fp8 conversions need sm_89 or newer)";
  } else if (query != element) {
    return "queries of another element type than the keys";
  }
  if (std::string dims = unsupportedHeadDims(op); !dims.empty())
    return dims;
  if (op.getQuerySegments() && key.getLayout() == TokenLayout::Paged)
    return "document segments with a paged cache";
  return "";
}

/// Names the first feature of `op` that the GPU pipeline cannot compile
/// for `arch`, or returns an empty string: what its cache's kernel cannot
/// read, then what no kernel writes.
std::string unsupportedFeature(AttentionOp op, StringRef arch) {
  if (std::string why = unsupportedCacheFeature(op, arch); !why.empty())
    return why;
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
    // A target the module names is one the user asked for: compiling for
    // another would ignore it.
    if (auto asked = module->getAttrOfType<attn_gpu::TargetAttr>(
            attn_gpu::AttnGPUDialect::kTargetAnnotation);
        asked && asked != target) {
      module.emitError() << "the module asks for " << asked
                         << ", but this compile is for " << target
                         << ": remove the module's "
                         << attn_gpu::AttnGPUDialect::kTargetAnnotation
                         << " or compile for its target (attn-plan's arch, "
                            "sms and smem options; attnc compile --arch)";
      return signalPassFailure();
    }
    module->setAttr(attn_gpu::AttnGPUDialect::kTargetAnnotation, target);
    WalkResult result = module.walk([&](AttentionOp op) {
      std::string feature = unsupportedFeature(op, arch);
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
    return success(succeeded(outside("max-splits", maxSplits, 1,
                                     attnc::limits::kMaxKVSplits)) &&
                   succeeded(outside("prefill-warps", prefillWarps, 0, 8)) &&
                   succeeded(outside("decode-stages", decodeStages, 0, 8)) &&
                   succeeded(outside("consumers", consumers, 0, 3)) &&
                   succeeded(outside("query-buffers", queryBuffers, 0, 2)) &&
                   succeeded(outside("cluster-ctas", clusterCtas, 1, 2)) &&
                   succeeded(outside("register-relief", registerRelief, 0,
                                     kMaxRegisterRelief)));
  }

  /// Whether three consumers' 160 registers each hold their work: their
  /// tiles of kThreeConsumerKeys at head dims up to 64 without heavy score
  /// work, beside a producer that issues bulk copies. A producer that
  /// gathers pages (attn_gpu::kvBoxRows: boxes that are not whole swizzle
  /// atoms) keeps 56 registers and leaves them 152. Measured with ptxas on
  /// sm_90a: no spills for masks, soft-cap, ALiBi, sinks, segments or one
  /// region alone at head dim 64 (a region with narrower tiles:
  /// kCrowdedConsumerKeys); 48 bytes gathering pages of 1 or 3 slots, 58
  /// with ALiBi, soft-cap and a window together, 144-208 at head dim 96.
  static constexpr int64_t kThreeConsumerKeys = 128;
  static bool threeConsumersFit(AttentionOp op, bool heavy) {
    bool gathers = !attnc::hopper::boxesFillAtoms(int(attn_gpu::kvBoxRows(
        cast<KVType>(op.getKey().getType()), kThreeConsumerKeys)));
    return std::max(op.getQKHeadDim(), op.getVHeadDim()) <= 64 && !heavy &&
           !gathers;
  }

  /// Three consumers beside a region: the schedule's tightest registers
  /// (160 a consumer thread, beside the region's captures and per-score
  /// work). There the consumers take kCrowdedConsumerKeys-key tiles: with
  /// kThreeConsumerKeys they spilled (examples/custom_score_mod.mlir: 342
  /// bytes in the compact tile loop, 434 claiming items), and the plan had
  /// to keep them in a static share of the items (`static_order`) and the
  /// peeled loop with the masks in the modifiers (`lean_tile_loop`),
  /// whose code was 3.5 times the size (a 4-second cold compile on the GPU
  /// machine). With the narrower tiles they spill nothing in the plan's
  /// usual form, and forced beside heavy score work (window, sinks and
  /// soft-cap with a region) 22 bytes, against 390 before. Measured on an
  /// H100 against the 128-key lean form: custom_score_mod 1.3 % slower on
  /// 4 x 4096, 1.7 % faster on 16 x 512, its compile 0.3x
  /// (docs/PERFORMANCE.md). attn-plan no longer chooses either field.
  static constexpr int64_t kCrowdedConsumerKeys = 96;
  /// Whether the variant has a `score_mod` or `mask_mod` region.
  static bool hasRegion(AttentionOp op) {
    return !op.getScoreMod().empty() || !op.getMaskMod().empty();
  }

  /// Hopper prefill (FlashAttention-3's schedule): consumer warpgroups of
  /// 64 rows. A consumer holds its output (vDim / 2 registers a thread),
  /// the scores of one KV tile (blockN / 2) and their probabilities in 16
  /// bits (blockN / 4) within what setmaxnreg gives it (prefill.h): 232
  /// registers each for two consumers (224 where the producer gathers
  /// pages), 160 for three. Up to head dim 64 the products are short beside
  /// each tile's fixed costs (row maxima, rescaling, barriers): three
  /// consumers hide one's softmax behind two others' products, with
  /// 128-key tiles (as FlashAttention-3 picks; P7a 10 % faster than two
  /// with 192, docs/PERFORMANCE.md), where they fit; otherwise two with
  /// 192-key tiles. Past 64, two consumers and 128 keys up to head
  /// dim 128, 80 above 192 (at head dim 256, 80 keys ran 4 % faster than
  /// 64), 96 between. Two stages of K and V fit the 227 KiB of shared
  /// memory at every head dim (at 256 with 80-key tiles: 225 KiB).
  PlanAttr warpSpecialized(AttentionOp op, int64_t splits = 1) {
    int64_t dims = std::max(op.getQKHeadDim(), op.getVHeadDim());
    // Per-score work of three or more (regions with masks or modifiers)
    // spills wider tiles on sm_90a (measured: 100 bytes at head dim 64 with
    // 192-key tiles, 56 at 128 with 128, 8 at 192/128 with 96, 72 at 240
    // with 64).
    // Document segments weigh one more here: the consumers hold a tile's
    // column ids (a quarter of its keys) in registers (measured: 52 bytes
    // spilled with a window at head dim 192 and 96-key tiles).
    bool heavy =
        registerRelief > 0 || scoreWork(op) + bool(op.getQuerySegments()) >= 3;
    // A region alone, beside two consumers' 192-key tiles at head dim 64,
    // spills too (custom_score_mod: 330 bytes, 430 where the producer
    // gathers pages of one slot; none with 128), where the declarative
    // modifiers and masks of the same weight spill nothing.
    bool region = hasRegion(op);
    int64_t count = consumers > 0                  ? consumers
                    : threeConsumersFit(op, heavy) ? 3
                                                   : 2;
    int64_t threeConsumerKeys =
        region ? kCrowdedConsumerKeys : kThreeConsumerKeys;
    int64_t blockN = dims <= 64    ? (count == 3        ? threeConsumerKeys
                                      : heavy || region ? 128
                                                        : 192)
                     : dims <= 128 ? (heavy ? 96 : 128)
                     : dims <= 192 ? (heavy ? 64 : 96)
                                   : (heavy ? 32 : 80);
    // The second step of relief: a narrower tile than heavy work takes,
    // among the widths the schedule runs anyway (its scores and
    // probabilities hold blockN * 3 / 4 registers a thread).
    if (registerRelief > 1)
      blockN = blockN > 96 ? 96 : blockN > 64 ? 64 : 32;
    auto plan = [&](int64_t stages, int64_t queryBuffers) {
      return PlanAttr::get(&getContext(), attnc::Schedule::WarpSpecialized,
                           attnc::hopper::kWgmmaM * count, blockN,
                           4 * (count + 1), 1, stages, splits,
                           /*queryInRegisters=*/false, queryBuffers,
                           /*staticOrder=*/false, /*clusterCtas=*/1,
                           /*leanTileLoop=*/false);
    };
    auto fits = [&](PlanAttr candidate) {
      return candidate.getSharedMemoryBytes(op.getQKHeadDim(), op.getVHeadDim(),
                                            kvElementBytes(op)) <= smem;
    };
    // Two query tiles per consumer come first: short items (many short
    // requests) wait for their queries and for their output's scattered
    // stores, and the second tile serves both (16 x 512 prefill 17 %
    // faster, long rows 1-2 %). Heavy score work past head dim 192 keeps
    // one: the second's bookkeeping spilled its consumers at 240 and 256.
    // A third stage where it still fits lets the producer run a tile
    // further ahead of the consumers (two stages instead of three cost
    // long rows 1-2 %, docs/PERFORMANCE.md); its ring arithmetic (modulo
    // 3) spills heavy score work at head dim 128.
    int64_t most = queryBuffers > 0                              ? queryBuffers
                   : (heavy && dims > 192) || registerRelief > 1 ? 1
                                                                 : 2;
    int64_t fewest = queryBuffers > 0 ? queryBuffers : 1;
    for (int64_t buffers = most; buffers >= fewest; --buffers) {
      if (!heavy && fits(plan(3, buffers)))
        return plan(3, buffers);
      if (fits(plan(2, buffers)))
        return plan(2, buffers);
    }
    // Nothing fits: the fewest query tiles in two stages, which
    // choosePlan refuses by its shared memory (a forced second query tile
    // included).
    return plan(2, fewest);
  }

  /// Multi-head latent attention (hopper/latent.h): 64 packed (token,
  /// head) rows and 64-key tiles, as many stages as fit (a tile is a whole
  /// cache row per key: 72 KiB at 576 dims, so two there); split-KV keeps
  /// the SMs busy when requests times row blocks are few.
  PlanAttr latentPlan(AttentionOp op) {
    constexpr int64_t kKeys = 64;
    // Where a token's rows fill pairs of blocks (128 heads and more), a
    // pair's CTAs can share each tile's loads, but only on request: in the
    // twelfth session's measurements the clusters' coupled stages gave back
    // most of the L2 traffic they save (docs/PERFORMANCE.md).
    int64_t clusterCtas =
        this->clusterCtas > 1
            ? attn_gpu::latentClusterCtas(
                  op.getQuery().getType().getNumHeads(),
                  cast<LatentKVType>(op.getKey().getType()).asKeys(), kKeys)
            : 1;
    auto plan = [&](int64_t stages) {
      return PlanAttr::get(
          &getContext(), attnc::Schedule::Latent, attnc::hopper::kWgmmaM, kKeys,
          12, 1, stages, maxSplits, /*queryInRegisters=*/false,
          /*queryBuffers=*/1, /*staticOrder=*/false, clusterCtas,
          /*leanTileLoop=*/false);
    };
    int64_t stages = 2;
    while (stages < 4 &&
           plan(stages + 1)
                   .getSharedMemoryBytes(op.getQKHeadDim(), op.getVHeadDim()) <=
               smem)
      ++stages;
    return plan(stages);
  }

  /// The mma.sync schedule whose warps each hold 16 packed (token, head)
  /// rows and share every K/V tile, its keys split `splits` ways at most,
  /// through `stages` pipeline stages.
  PlanAttr rowTilePlan(AttentionOp op, int64_t splits, int64_t stages) {
    int64_t qkDim = op.getQKHeadDim(), vDim = op.getVHeadDim();
    // Past head dim 128 the output accumulators need the registers: half
    // the KV tile, and queries reread from shared memory. Per-score work
    // of three or more (a region with a mask or modifier, two regions)
    // spills 64-key tiles on sm_90a from head dim 96 (a score_mod region
    // with a window at 128, both regions at 96): it halves the tile too,
    // and keeps queries in registers only up to head dim 64.
    bool heavy = registerRelief > 0 || scoreWork(op) >= 3;
    int64_t blockN = std::max(qkDim, vDim) > 128 || heavy ? 32 : 64;
    bool queryInRegisters = qkDim <= (heavy ? 64 : 128);
    // Eight warps share each K/V tile loaded into shared memory (measured
    // on P1: 5.06 ms against 5.38 ms with four; docs/PERFORMANCE.md).
    int64_t warps = prefillWarps > 0 ? prefillWarps : 8;
    return PlanAttr::get(&getContext(), attnc::Schedule::Prefill, 16 * warps,
                         blockN, warps, 1, stages, splits, queryInRegisters,
                         /*queryBuffers=*/1, /*staticOrder=*/false,
                         /*clusterCtas=*/1, /*leanTileLoop=*/false);
  }

  FailureOr<PlanAttr> choosePlan(AttentionOp op) {
    MLIRContext *ctx = &getContext();
    int64_t qkDim = op.getQKHeadDim(), vDim = op.getVHeadDim();
    int64_t kvBytes = kvElementBytes(op);
    auto fits = [&](PlanAttr plan) {
      return plan.getSharedMemoryBytes(qkDim, vDim, kvBytes) <= smem;
    };
    PlanAttr plan;
    if (op.isLatent()) {
      plan = latentPlan(op);
    } else if (op.getQuery().getType().getSeqLen() == 1) {
      // A thread keeps its query fragments (qkDim / 4 registers) beside its
      // output accumulators (vDim / 2) unless per-score work would then run
      // out of registers. Measured on sm_90a: every plain variant fits up to
      // head dim 256, while a region spills at 224 and 240, and so do the
      // declarative masks with soft-cap and ALiBi at 240.
      int64_t work = scoreWork(op);
      bool queryInRegisters =
          registerRelief == 0 &&
          (work == 0 || qkDim / 4 + vDim / 2 + 8 * work <= 160);
      // Decode has few rows per request: every warp takes a quarter of each
      // KV tile. Three stages keep enough bytes in flight and leave room for
      // two CTAs per SM (measured on an H100: 3 stages 0.40 ms, 4 stages
      // 0.45 ms, 2 stages 0.43 ms on D1; docs/PERFORMANCE.md). A group of
      // up to 8 query heads takes the transposed products, whose 8 columns
      // it fills better than 16 rows: half the products for the same keys.
      int64_t transposedRows = attnc::limits::kTransposedDecodeRows;
      bool transposed = op.getGroupSize() <= transposedRows;
      auto decode = [&](int64_t stages) {
        return transposed
                   ? PlanAttr::get(ctx, attnc::Schedule::TransposedDecode,
                                   transposedRows, 64, 1, 4, stages, maxSplits,
                                   queryInRegisters,
                                   /*queryBuffers=*/1,
                                   /*staticOrder=*/false,
                                   /*clusterCtas=*/1,
                                   /*leanTileLoop=*/false)
                   : PlanAttr::get(ctx, attnc::Schedule::Decode, 16, 64, 1, 4,
                                   stages, maxSplits, queryInRegisters,
                                   /*queryBuffers=*/1,
                                   /*staticOrder=*/false,
                                   /*clusterCtas=*/1,
                                   /*leanTileLoop=*/false);
      };
      // An fp8 stage holds half the bytes: a fourth stage keeps as many
      // in flight at two CTAs per SM, with the widened tiles beside them.
      int64_t stages = decodeStages > 0 ? decodeStages : kvBytes < 2 ? 4 : 3;
      while (stages > 2 && !fits(decode(stages)))
        --stages;
      plan = decode(stages);
    } else if (op.getSharedKeys() && StringRef(arch) == "sm_90a" &&
               kvBytes == 2 && prefillWarps == 0) {
      // A shared node's rows are a few tokens of many requests against a
      // long prefix: few row tiles, so the keys are split across CTAs to
      // fill the GPU, each split's state merged by a second launch.
      plan = warpSpecialized(op, maxSplits);
    } else if (op.getSharedKeys()) {
      // The mma.sync loop packs the GQA group into its rows and merges its
      // own splits. A third or fourth stage measured no faster on an H200
      // (C1's shared level: 0.080 ms with 2, 3 or 4; docs/PERFORMANCE.md).
      int64_t stages = decodeStages > 0 ? decodeStages : 2;
      while (stages > 2 && !fits(rowTilePlan(op, maxSplits, stages)))
        --stages;
      plan = rowTilePlan(op, maxSplits, stages);
    } else if (StringRef(arch) == "sm_90a" && kvBytes == 2) {
      // The producer's bulk copies land K/V tiles where wgmma reads them:
      // an fp8 cache, widened in between, takes the mma.sync schedule.
      plan = warpSpecialized(op);
    } else {
      plan = rowTilePlan(op, /*splits=*/1, /*stages=*/2);
    }
    if (!fits(plan))
      return op.emitOpError("needs more shared memory than the target's ")
             << int64_t(smem) << " bytes";
    return plan;
  }
};

} // namespace
