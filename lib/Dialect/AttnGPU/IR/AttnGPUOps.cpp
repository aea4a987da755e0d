//===- AttnGPUOps.cpp - attn_gpu operations -------------------------------===//

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/wgmma.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::attn_gpu;

#include "attnc/Dialect/AttnGPU/AttnGPUInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Device ops' library calls
//===----------------------------------------------------------------------===//

bool BeginOp::bindsKernelArguments() { return true; }

std::string ModifyScoresOp::getTemplateArguments() {
  return getMasked() ? "<true>" : "<false>";
}

std::string WaitScoresOp::getTemplateArguments() {
  return "<" + std::to_string(getPending()) + ">";
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

int64_t KernelOp::getSharedMemoryBytes() {
  return getPlan().getSharedMemoryBytes(
      cast<attn::QueryType>(getQuery()).getHeadDim(),
      cast<attn::OutputType>(getOutput()).getHeadDim(),
      attn::elementBytes(cast<attn::KVType>(getKey()).getElementType()));
}

int64_t mlir::attn_gpu::kvBoxRows(attn::KVType key, int64_t blockN) {
  // An fp8 cache is staged and widened by the producer on its way into the
  // 16-bit tiles wgmma reads (row_widen.h), never copied by the copy engine.
  if (attn::elementBytes(key.getElementType()) < 2)
    return 1;
  if (key.getLayout() != attnc::TokenLayout::Paged)
    return blockN;
  return std::gcd(key.getPageSize(), blockN);
}

int64_t mlir::attn_gpu::latentClusterCtas(int64_t queryHeads, attn::KVType keys,
                                          int64_t blockN) {
  bool pairsOfBlocks = queryHeads % (2 * attnc::hopper::kWgmmaM) == 0;
  return pairsOfBlocks && attnc::hopper::boxesFillAtoms(kvBoxRows(keys, blockN))
             ? 2
             : 1;
}

int64_t KernelOp::getKVBoxRows() {
  PlanAttr plan = getPlan();
  if (!plan.isWarpSpecialized())
    return 0;
  return kvBoxRows(cast<attn::KVType>(getKey()), plan.getBlockN());
}

LogicalResult KernelOp::verify() {
  // The descriptors first: everything below and every lowering reads them.
  auto query = dyn_cast<attn::QueryType>(getQuery());
  auto key = dyn_cast<attn::KVType>(getKey());
  auto value = dyn_cast<attn::KVType>(getValue());
  auto output = dyn_cast<attn::OutputType>(getOutput());
  if (!query || !key || !value || !output)
    return emitOpError("query, key, value and output must be !attn.q, "
                       "!attn.kv, !attn.kv and !attn.out");
  if (query.getNumHeads() % key.getNumHeads() != 0)
    return emitOpError("query heads (")
           << query.getNumHeads() << ") must be a multiple of key heads ("
           << key.getNumHeads() << ")";
  // What the device library's tiles hold (abi.h); attn-plan refuses other
  // dims by name, so only a hand-written kernel can get here with one.
  using namespace attnc::limits;
  if (getPlan().isLatent()) {
    int64_t qk = query.getHeadDim(), v = output.getHeadDim();
    if (key.getNumHeads() != 1 || key.getHeadDim() != qk ||
        value.getHeadDim() != v || qk % kKernelHeadDimStep != 0 ||
        qk > kMaxLatentHeadDim || v % kLatentDimStep != 0 ||
        v > kMaxLatentDim || v >= qk)
      return emitOpError("a latent kernel reads one cache head of the "
                         "queries' head dim (a multiple of ")
             << kKernelHeadDimStep << " up to " << kMaxLatentHeadDim
             << ") whose first columns, a multiple of " << kLatentDimStep
             << " up to " << kMaxLatentDim << ", are the values; got "
             << key.getNumHeads() << " heads of " << key.getHeadDim()
             << " for queries of " << qk << " and outputs of " << v;
    PlanAttr plan = getPlan();
    if (plan.getClusterCtas() > 1 &&
        plan.getClusterCtas() !=
            latentClusterCtas(query.getNumHeads(), key, plan.getBlockN()))
      return emitOpError("a latent kernel shares its loads across a cluster "
                         "(cluster_ctas = ")
             << plan.getClusterCtas()
             << ") only where a token's query heads fill pairs of 64-row "
                "blocks and the copy engine loads whole swizzle atoms of a "
                "16-bit cache; got "
             << query.getNumHeads() << " query heads and boxes of "
             << kvBoxRows(key, plan.getBlockN()) << " rows";
  } else
    for (int64_t dim : {query.getHeadDim(), output.getHeadDim()})
      if (dim % attnc::limits::kKernelHeadDimStep != 0 ||
          dim > attnc::limits::kMaxKernelHeadDim)
        return emitOpError("head dims must be multiples of ")
               << attnc::limits::kKernelHeadDimStep << " up to "
               << attnc::limits::kMaxKernelHeadDim << ", got " << dim;
  // The device keeps raw products in place of logits, which only a
  // positive scale allows; a soft-cap is a divisor.
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale) || scale <= 0)
    return emitOpError("scale must be positive and finite, got ") << scale;
  if (getSoftcap()) {
    double softcap = getSoftcap()->convertToDouble();
    if (!std::isfinite(softcap) || softcap <= 0)
      return emitOpError("softcap must be positive and finite, got ")
             << softcap;
  }
  // An fp8 cache's scales, as attn.attention's verifier admits them.
  if (getKeyScale().has_value() != getValueScale().has_value())
    return emitOpError("key and value scales must be given together");
  for (std::optional<Type> scale : {getKeyScale(), getValueScale()})
    if (scale && !attn::isKVScaleType(*scale, key.getNumHeads()))
      return emitOpError("scales must be memref<1xf32> or memref<")
             << key.getNumHeads() << "xf32>, got " << *scale;
  if (attn::isFp8(key.getElementType()) &&
      !TargetAttr::hasFp8Conversions(getTarget().getArch()))
    return emitOpError("an fp8 key/value cache needs sm_89 or newer, the "
                       "target is ")
           << getTarget().getArch();
  if (getKeyScale() && !attn::isFp8(key.getElementType()))
    return emitOpError("scales dequantize an fp8 key/value cache");
  PlanAttr plan = getPlan();
  // The warp-specialized plan's shape is checked by PlanAttr::verify.
  bool mmaSync = !plan.isWarpSpecialized();
  if (mmaSync && plan.getBlockM() != plan.getRowsPerWarp() * plan.getWarpsM())
    return emitOpError("block_m must be ")
           << plan.getRowsPerWarp() << " rows per M warp, got "
           << plan.getBlockM() << " for " << plan.getWarpsM() << " warps";
  if (plan.getBlockN() % (16 * plan.getWarpsN()) != 0)
    return emitOpError("block_n must give each N warp a multiple of 16 keys");
  if (plan.getStages() < 2)
    return emitOpError("the K/V pipeline needs at least 2 stages");
  if (getSharedMemoryBytes() > getTarget().getSmem())
    return emitOpError("needs ")
           << getSharedMemoryBytes() << " bytes of shared memory, the target "
           << "allows " << getTarget().getSmem();
  if (getMergeSplits() && (plan.getKvSplits() < 2 || !plan.mergesOwnSplits()))
    return emitOpError("merge_splits needs a split-KV plan of the mma.sync "
                       "or latent schedules, got ")
           << plan;
  if (getPlan().isWarpSpecialized()) {
    // wgmma and setmaxnreg exist only in sm_90a; TMA tiles are 16-bit here.
    // The latent producer widens an fp8 cache into them (row_widen.h).
    if (getTarget().getArch() != "sm_90a")
      return emitOpError("a warp_specialized plan needs sm_90a, the target is ")
             << getTarget().getArch();
    bool widened = plan.isLatent() && attn::isFp8(key.getElementType());
    if (key.getElementType() != query.getElementType() && !widened)
      return emitOpError("a warp_specialized plan reads keys of the queries' "
                         "element type (a latent plan fp8 ones too), got ")
             << key.getElementType();
    if (widened && plan.getBlockN() % kWidenedRowsPerPass != 0)
      return emitOpError("a latent plan over an fp8 cache widens ")
             << kWidenedRowsPerPass << " rows a pass: its KV tile must be a "
             << "multiple of them, got " << plan.getBlockN() << " keys";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MergeSplitsOp
//===----------------------------------------------------------------------===//

LogicalResult MergeSplitsOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (!kernel || !kernel.getMergeSplits() ||
      kernel.getPlan().mergesInSecondLaunch())
    return emitOpError("needs a kernel with merge_splits that merges in its "
                       "own launch (the mma.sync schedules)");
  return success();
}

//===----------------------------------------------------------------------===//
// MaskScoresOp
//===----------------------------------------------------------------------===//

LogicalResult MaskScoresOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (!kernel ||
      kernel.getPlan().getSchedule() != attnc::Schedule::WarpSpecialized)
    return emitOpError("needs a warp_specialized kernel (the other schedules "
                       "mask in `modify_scores {masked}`)");
  return success();
}

//===----------------------------------------------------------------------===//
// LaunchOp
//===----------------------------------------------------------------------===//

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *kernel =
      symbolTable.lookupNearestSymbolFrom(*this, getKernelAttr());
  // After attn-gpu-to-emitc the kernel is a function of the device file.
  if (!kernel)
    if (auto module = (*this)->getParentOfType<ModuleOp>())
      for (auto file : module.getOps<emitc::FileOp>())
        if ((kernel = symbolTable.lookupSymbolIn(file, getKernelAttr())))
          break;
  if (!kernel || !isa<KernelOp, MergeKernelOp, emitc::FuncOp>(kernel))
    return emitOpError("'") << getKernel() << "' is not an attn_gpu kernel";
  return success();
}

#define GET_OP_CLASSES
#include "attnc/Dialect/AttnGPU/AttnGPUOps.cpp.inc"
