//===- AttnGPUDialect.cpp - the attn_gpu dialect --------------------------===//

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/shared_storage.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn_gpu;

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.cpp.inc"

FailureOr<PartialTiles> mlir::attn_gpu::parsePartialTiles(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  PartialTiles partial;
  if (parser.parseKeyword(&keyword))
    return failure();
  if (!attnc::parseKeyword(keyword.data(), keyword.size(), partial))
    return parser.emitError(loc, "expected 'never', 'edges' or 'always', got '")
           << keyword << "'";
  return partial;
}

FailureOr<attnc::Schedule> mlir::attn_gpu::parseSchedule(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  attnc::Schedule schedule;
  if (parser.parseKeyword(&keyword))
    return failure();
  if (!attnc::parseKeyword(keyword.data(), keyword.size(), schedule)) {
    InFlightDiagnostic error = parser.emitError(loc, "expected a schedule (");
    for (int32_t i = 0; i < attnc::kNumSchedules; ++i)
      error << (i ? ", " : "") << "'" << attnc::kScheduleKeywords[i] << "'";
    return error << "), got '" << keyword << "'";
  }
  return schedule;
}

/// A plan's optional trailing fields, each `, name = value` and printed
/// only where it differs from its default: `q_buffers` (1),
/// `static_order` (false), `cluster_ctas` (1) and `lean_tile_loop` (false),
/// in any order.
static LogicalResult parsePlanOptions(AsmParser &parser, int64_t &queryBuffers,
                                      bool &staticOrder, int64_t &clusterCtas,
                                      bool &leanTileLoop) {
  queryBuffers = 1;
  staticOrder = false;
  clusterCtas = 1;
  leanTileLoop = false;
  llvm::SmallSet<StringRef, 4> seen;
  while (succeeded(parser.parseOptionalComma())) {
    SMLoc loc = parser.getCurrentLocation();
    StringRef name;
    if (parser.parseKeyword(&name) || parser.parseEqual())
      return failure();
    if ((name == "q_buffers" || name == "static_order" ||
         name == "cluster_ctas" || name == "lean_tile_loop") &&
        !seen.insert(name).second)
      return parser.emitError(loc, "plan field '") << name << "' given twice";
    if (name == "q_buffers" || name == "cluster_ctas") {
      int64_t value;
      if (parser.parseInteger(value))
        return failure();
      (name == "q_buffers" ? queryBuffers : clusterCtas) = value;
    } else if (name == "static_order" || name == "lean_tile_loop") {
      StringRef value;
      if (parser.parseKeyword(&value))
        return failure();
      if (value != "true" && value != "false")
        return parser.emitError(loc)
               << name << " is true or false, got '" << value << "'";
      (name == "static_order" ? staticOrder : leanTileLoop) = value == "true";
    } else {
      return parser.emitError(loc, "expected 'q_buffers', 'static_order', "
                                   "'cluster_ctas' or 'lean_tile_loop', got '")
             << name << "'";
    }
  }
  return success();
}

static void printPlanOptions(AsmPrinter &printer, int64_t queryBuffers,
                             bool staticOrder, int64_t clusterCtas,
                             bool leanTileLoop) {
  if (queryBuffers != 1)
    printer << ", q_buffers = " << queryBuffers;
  if (staticOrder)
    printer << ", static_order = true";
  if (clusterCtas != 1)
    printer << ", cluster_ctas = " << clusterCtas;
  if (leanTileLoop)
    printer << ", lean_tile_loop = true";
}

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/AttnGPU/AttnGPUAttrs.cpp.inc"

namespace limits = attnc::limits;

/// Every architecture the device library's schedules are written and tested
/// for; sm_90a is Hopper's arch-specific target (wgmma, setmaxnreg).
static constexpr llvm::StringLiteral kSupportedArchs[] = {
    "sm_80", "sm_86", "sm_87", "sm_89", "sm_90a"};

ArrayRef<llvm::StringLiteral> TargetAttr::getSupportedArchs() {
  return kSupportedArchs;
}

bool TargetAttr::isSupportedArch(StringRef arch) {
  return llvm::is_contained(kSupportedArchs, arch);
}

bool TargetAttr::hasFp8Conversions(StringRef arch) {
  unsigned version = 0;
  return arch.consume_front("sm_") &&
         !arch.take_while(llvm::isDigit).getAsInteger(10, version) &&
         version >= 89;
}

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef arch, int64_t sms, int64_t smem) {
  if (!isSupportedArch(arch)) {
    InFlightDiagnostic diag = emitError() << "unsupported GPU architecture '"
                                          << arch << "'; attnc compiles for ";
    llvm::interleaveComma(kSupportedArchs, diag);
    return diag;
  }
  // Real GPUs have at most a few hundred SMs and 228 KiB per CTA; the
  // bounds only keep the planner's arithmetic far from overflow.
  if (sms < 1 || sms > 4096)
    return emitError() << "sms must be in [1, 4096], got " << sms;
  if (smem < 1 || smem > (int64_t(1) << 24))
    return emitError() << "smem must be in [1, 16777216] bytes, got " << smem;
  return success();
}

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               Schedule schedule, int64_t blockM,
                               int64_t blockN, int64_t warpsM, int64_t warpsN,
                               int64_t stages, int64_t kvSplits, bool,
                               int64_t queryBuffers, bool staticOrder,
                               int64_t clusterCtas, bool leanTileLoop) {
  // Each factor is bounded before the product, which must not overflow.
  int64_t maxWarps = limits::kMaxThreadsPerCta / 32;
  if (warpsM < 1 || warpsN < 1 || warpsM > maxWarps || warpsN > maxWarps ||
      warpsM * warpsN > maxWarps)
    return emitError() << "warps must be at least 1 x 1 and at most "
                       << limits::kMaxThreadsPerCta / 32 << " in all, got "
                       << warpsM << " x " << warpsN;
  if (blockM < 1 || blockM > 1024 || blockN < 1 || blockN > 1024)
    return emitError() << "block must be in [1, 1024] x [1, 1024], got "
                       << blockM << " x " << blockN;
  if (stages < 1 || stages > 16)
    return emitError() << "stages must be in [1, 16], got " << stages;
  if (kvSplits < 1 || kvSplits > limits::kMaxKVSplits)
    return emitError() << "kv_splits must be in [1, " << limits::kMaxKVSplits
                       << "], got " << kvSplits;
  if (schedule == attnc::Schedule::TransposedDecode &&
      (warpsM != 1 || blockM != limits::kTransposedDecodeRows))
    return emitError() << "a transposed_decode plan has 1 x N warps and "
                       << limits::kTransposedDecodeRows
                       << "-row blocks (a token's GQA group), got " << warpsM
                       << " x " << warpsN << " warps and " << blockM << " rows";
  if (schedule == attnc::Schedule::Latent) {
    if (warpsM != 12 || warpsN != 1 || blockM != attnc::hopper::kWgmmaM)
      return emitError() << "a latent plan has 12 x 1 warps and 64-row "
                            "blocks, got "
                         << warpsM << " x " << warpsN << " warps and " << blockM
                         << " rows";
    if (blockN % attnc::hopper::kAtomRows != 0 || blockN % 16 != 0 ||
        blockN > 256 || stages < 2)
      return emitError() << "a latent plan's KV tile must be a multiple of "
                            "16 keys up to 256, in at least 2 stages, got "
                         << blockN << " keys in " << stages;
  }
  if (schedule == attnc::Schedule::WarpSpecialized) {
    // A producer warpgroup, then consumer warpgroups of 64 rows each; the
    // wgmma products step over 16 keys and the ring needs two stages.
    if (warpsN != 1 || warpsM % 4 != 0 || warpsM < 8)
      return emitError() << "a warp_specialized plan has 4 x (1 + consumers) "
                            "x 1 warps, at least 8 x 1, got "
                         << warpsM << " x " << warpsN;
    int64_t rows = attnc::hopper::kWgmmaM * (warpsM / 4 - 1);
    if (blockM != rows)
      return emitError() << "a warp_specialized plan's block has "
                         << attnc::hopper::kWgmmaM
                         << " rows per consumer warpgroup (" << rows
                         << "), got " << blockM;
    if (blockN % 16 != 0 || blockN > 256)
      return emitError() << "a warp_specialized plan's KV tile must be a "
                            "multiple of 16 keys up to 256, got "
                         << blockN;
    if (stages < 2)
      return emitError() << "a warp_specialized plan needs at least 2 "
                            "stages, got "
                         << stages;
  }
  if (queryBuffers < 1 || queryBuffers > 2)
    return emitError() << "q_buffers must be 1 or 2, got " << queryBuffers;
  const attnc::ScheduleTraits &row = attnc::traits(schedule);
  bool tunesTileLoop = row.has(attnc::schedule_feature::TunesTileLoop);
  if (queryBuffers > 1 && !tunesTileLoop)
    return emitError() << "a " << attnc::keyword(schedule)
                       << " plan has one query tile per consumer, got "
                          "q_buffers = "
                       << queryBuffers;
  if (staticOrder && !tunesTileLoop)
    return emitError() << "a " << attnc::keyword(schedule)
                       << " plan does not choose how its CTAs share the work "
                          "items (static_order)";
  if (leanTileLoop && !tunesTileLoop)
    return emitError() << "a " << attnc::keyword(schedule)
                       << " plan does not choose the shape of its consumers' "
                          "tile loop (lean_tile_loop)";
  if (clusterCtas != 1 && clusterCtas != 2)
    return emitError() << "cluster_ctas must be 1 or 2, got " << clusterCtas;
  if (clusterCtas > 1 &&
      !row.has(attnc::schedule_feature::SharesLoadsInCluster))
    return emitError() << "a " << attnc::keyword(schedule)
                       << " plan does not share its loads across a cluster "
                          "(cluster_ctas = "
                       << clusterCtas << ")";
  return success();
}

LogicalResult
MaskAnalysisAttr::verify(function_ref<InFlightDiagnostic()> emitError, bool,
                         bool, int64_t sinks, PartialTiles) {
  if (sinks < 0 || sinks > limits::kMaxSeqLen)
    return emitError() << "sinks must be in [0, " << limits::kMaxSeqLen
                       << "], got " << sinks;
  return success();
}

LogicalResult LaunchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t threads, int64_t smem, int64_t blockM,
                                 int64_t kvSplits) {
  if (threads < 1 || threads > limits::kMaxThreadsPerCta)
    return emitError() << "threads must be in [1, " << limits::kMaxThreadsPerCta
                       << "], got " << threads;
  if (smem < 0 || smem > (int64_t(1) << 24))
    return emitError() << "smem must be in [0, 16777216] bytes, got " << smem;
  if (blockM < 1 || kvSplits < 1 || kvSplits > limits::kMaxKVSplits)
    return emitError() << "block_m must be positive and kv_splits in [1, "
                       << limits::kMaxKVSplits << "], got " << blockM << " and "
                       << kvSplits;
  return success();
}

int64_t PlanAttr::getSharedMemoryBytes(int64_t qkDim, int64_t vDim,
                                       int64_t kvBytes) const {
  // The schedule's CTA class's layout (attnc/device/shared_storage.h), the
  // one the device's Shape structs take their offsets from.
  attnc::StorageShape shape;
  shape.blockM = getBlockM();
  shape.blockN = getBlockN();
  shape.qkDim = qkDim;
  shape.vDim = vDim;
  shape.kvBytes = kvBytes;
  shape.stages = getStages();
  shape.warpsN = getWarpsN();
  shape.consumers = getConsumers();
  shape.queryBuffers = getQueryBuffers();
  return attnc::sharedStorageBytes(traits().storage, shape);
}

LogicalResult AttnGPUDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto expect = [&](bool rightType, StringRef what) -> LogicalResult {
    if (rightType)
      return success();
    return op->emitError() << "'" << name << "' must be " << what << ", got "
                           << attr.getValue();
  };
  if (name == kTargetAnnotation)
    return expect(isa<TargetAttr>(attr.getValue()) && isa<ModuleOp>(op),
                  "an #attn_gpu.target on the module");
  if (name == kPlanAnnotation)
    return expect(isa<PlanAttr>(attr.getValue()) && isa<attn::AttentionOp>(op),
                  "an #attn_gpu.plan on an attn.attention");
  if (name == kMasksAnnotation)
    return expect(isa<MaskAnalysisAttr>(attr.getValue()) &&
                      isa<attn::AttentionOp>(op),
                  "an #attn_gpu.masks on an attn.attention");
  return op->emitError() << "unknown annotation '" << name << "': attn_gpu "
                         << "annotates with " << kTargetAnnotation << ", "
                         << kPlanAnnotation << " and " << kMasksAnnotation;
}

void AttnGPUDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attnc/Dialect/AttnGPU/AttnGPUOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attnc/Dialect/AttnGPU/AttnGPUAttrs.cpp.inc"
      >();
}
