//===- Pipeline.cpp - parse a variant and run attnc's pass pipeline -----===//

#include "attnc/Driver/Pipeline.h"
#include "exec/Program.h"

#include "attnc/Driver/ParserHazards.h"
#include "attnc/Driver/ParserStack.h"

#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"
#include "attnc/Transforms/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/Cpp/CppEmitter.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace attnc {

void registerAttncDialects(MLIRContext &context, bool printOpOnDiagnostic) {
  DialectRegistry registry;
  registry.insert<attn::AttnDialect, attn_gpu::AttnGPUDialect,
                  arith::ArithDialect, math::MathDialect, memref::MemRefDialect,
                  func::FuncDialect, scf::SCFDialect, emitc::EmitCDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(printOpOnDiagnostic);
}

DiagnosticCollector::DiagnosticCollector(MLIRContext &context)
    : context_(context), handler_(sourceMgr_, &context, stream_) {}

/// Adds `source` to `sourceMgr` as `fileName` (the diagnostics handler
/// finds it by that name to quote it) and reports the first construct that
/// would crash MLIR's parser, if any. The copy, null on failure.
static const llvm::MemoryBuffer *addSafeBuffer(llvm::SourceMgr &sourceMgr,
                                               MLIRContext &context,
                                               const std::string &source,
                                               const std::string &fileName) {
  unsigned buffer = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, fileName), llvm::SMLoc());
  const llvm::MemoryBuffer *copy = sourceMgr.getMemoryBuffer(buffer);
  std::optional<ParserHazard> hazard = findParserHazard(source);
  if (!hazard)
    return copy;
  auto [line, column] = sourceMgr.getLineAndColumn(
      llvm::SMLoc::getFromPointer(copy->getBufferStart() + hazard->offset),
      buffer);
  emitError(FileLineColLoc::get(&context, fileName, line, column))
      << hazard->message;
  return nullptr;
}

OwningOpRef<ModuleOp> DiagnosticCollector::parse(const std::string &source,
                                                 const std::string &fileName) {
  const llvm::MemoryBuffer *copy =
      addSafeBuffer(sourceMgr_, context_, source, fileName);
  if (!copy)
    return nullptr;
  // This buffer, not the source manager's first (a type parsed before).
  OwningOpRef<ModuleOp> module;
  runOnParserStack([&] {
    module = parseSourceString<ModuleOp>(copy->getBuffer(),
                                         ParserConfig(&context_), fileName);
  });
  return module;
}

Type DiagnosticCollector::parseType(const std::string &source,
                                    const std::string &fileName) {
  if (!addSafeBuffer(sourceMgr_, context_, source, fileName))
    return nullptr;
  // mlir::parseType names its locations after the text itself: point them
  // at our copy of it, named fileName, which the diagnostics then quote.
  bool renaming = false; // the text may be its own name
  ScopedDiagnosticHandler rename(&context_, [&](Diagnostic &diagnostic) {
    auto loc = dyn_cast<FileLineColLoc>(diagnostic.getLocation());
    if (renaming || !loc || loc.getFilename() != source)
      return failure(); // not ours: on to the collector
    renaming = true;
    emitError(FileLineColLoc::get(&context_, fileName, loc.getLine(),
                                  loc.getColumn()))
        << diagnostic.str();
    renaming = false;
    return success();
  });
  // Without numRead, mlir::parseType fails unless it consumes everything.
  Type type;
  runOnParserStack([&] { type = mlir::parseType(source, &context_); });
  return type;
}

/// The first discardable attribute of `module` that nothing reads, if any:
/// anything the user wrote must change the kernel or be refused.
static LogicalResult refuseUnreadAttributes(ModuleOp module) {
  WalkResult result = module.walk([&](Operation *op) {
    for (NamedAttribute attr : op->getDiscardableAttrs()) {
      if (op == module.getOperation() &&
          attr.getName() == attn_gpu::AttnGPUDialect::kTargetAnnotation)
        continue;
      op->emitError() << "attribute '" << attr.getName().getValue() << "' on '"
                      << op->getName()
                      << "' would be ignored: attnc reads no such attribute "
                         "there";
      return WalkResult::interrupt();
    }
    if (auto func = dyn_cast<func::FuncOp>(op);
        func && (func.getArgAttrs() || func.getResAttrs())) {
      func.emitError() << "argument and result attributes of '"
                       << func.getSymName()
                       << "' would be ignored: attnc reads none";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult requireCompilableModule(ModuleOp module) {
  if (failed(refuseUnreadAttributes(module)))
    return failure();
  bool found = false;
  module.walk([&](Operation *op) {
    if (isa<attn::AttentionOp, attn::MergeStatesOp>(op)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (found)
    return success();
  // An implicit module has no location of its own: point at its first op.
  Location loc = module.getBody()->empty() ? module.getLoc()
                                           : module.getBody()->front().getLoc();
  return emitError(loc, "nothing to compile: the module has no "
                        "attn.attention or attn.merge_states");
}

namespace {

FailureOr<DType> dtypeOf(Type type, Location loc) {
  if (type.isBF16())
    return DType::BF16;
  if (type.isF16())
    return DType::F16;
  if (type.isF32())
    return DType::F32;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isInteger(64))
    return DType::I64;
  if (isa<Float8E4M3FNType>(type))
    return DType::F8E4M3;
  if (isa<Float8E5M2Type>(type))
    return DType::F8E5M2;
  return emitError(loc) << "no GPU buffers of type " << type << " yet";
}

FailureOr<ValueSpec> describeValue(Type type, Location loc) {
  ValueSpec spec;
  auto setHeads = [&](auto t, ValueSpec::Kind kind) -> LogicalResult {
    spec.kind = kind;
    spec.seqLen = ShapedType::isDynamic(t.getSeqLen()) ? -1 : t.getSeqLen();
    spec.heads = t.getNumHeads();
    spec.dim = t.getHeadDim();
    spec.layout = t.getLayout();
    FailureOr<DType> dtype = dtypeOf(t.getElementType(), loc);
    if (failed(dtype))
      return failure();
    spec.dtype = *dtype;
    return success();
  };
  if (auto q = dyn_cast<attn::QueryType>(type)) {
    if (failed(setHeads(q, ValueSpec::Kind::Query)))
      return failure();
  } else if (auto latent = dyn_cast<attn::LatentKVType>(type)) {
    // One cache operand; the kernel reads its values from the key rows.
    return describeValue(latent.asKeys(), loc);
  } else if (auto kv = dyn_cast<attn::KVType>(type)) {
    if (failed(setHeads(kv, ValueSpec::Kind::KV)))
      return failure();
    spec.pageSize =
        kv.getLayout() == attn::TokenLayout::Paged ? kv.getPageSize() : 0;
    spec.pageOrder = kv.getPageOrder();
  } else if (auto out = dyn_cast<attn::OutputType>(type)) {
    if (failed(setHeads(out, ValueSpec::Kind::Output)))
      return failure();
  } else if (auto lse = dyn_cast<attn::LseType>(type)) {
    spec.kind = ValueSpec::Kind::Lse;
    spec.seqLen = ShapedType::isDynamic(lse.getSeqLen()) ? -1 : lse.getSeqLen();
    spec.heads = lse.getNumHeads();
    spec.dim = 1;
    spec.dtype = DType::F32;
    spec.layout = lse.getLayout();
  } else if (auto memref = dyn_cast<MemRefType>(type)) {
    spec.kind = ValueSpec::Kind::Buffer;
    FailureOr<DType> dtype = dtypeOf(memref.getElementType(), loc);
    if (failed(dtype))
      return failure();
    spec.dtype = *dtype;
    for (int64_t size : memref.getShape())
      spec.shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
  } else {
    return emitError(loc) << "the GPU pipeline cannot pass a " << type;
  }
  return spec;
}

/// Reads the host side of a module lowered to attn_gpu: one function whose
/// body is launches.
/// The numbers of an attention kernel that its launches pass (params.h):
/// the device reads only those its config says apply.
VariantValues variantValues(attn_gpu::KernelOp kernel) {
  VariantValues values = LaunchSpec().values;
  if (auto window =
          dyn_cast_or_null<attn::WindowAttr>(kernel.getWindowAttr())) {
    values.window_left = window.getLeft();
    values.window_right = window.getRight();
  }
  values.sinks = kernel.getMasks().getSinks();
  values.scale = float(kernel.getScale().convertToDouble());
  if (kernel.getSoftcap())
    values.softcap = float(kernel.getSoftcap()->convertToDouble());
  return withScoreFactors(values);
}

LogicalResult describeProgram(ModuleOp module, Program &program) {
  auto funcs = module.getOps<func::FuncOp>();
  if (funcs.empty())
    return module.emitError("no func.func to compile");
  func::FuncOp func = *funcs.begin();
  llvm::DenseMap<Value, int> ids;
  auto idOf = [&](Value v) -> FailureOr<int> {
    auto it = ids.find(v);
    if (it != ids.end())
      return it->second;
    FailureOr<ValueSpec> spec = describeValue(v.getType(), v.getLoc());
    if (failed(spec))
      return failure();
    ids[v] = int(program.values.size());
    program.values.push_back(*spec);
    return ids[v];
  };
  for (BlockArgument arg : func.getArguments()) {
    FailureOr<int> id = idOf(arg);
    if (failed(id))
      return failure();
    program.inputs.push_back(*id);
  }
  SymbolTable symbols(module);
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        FailureOr<int> id = idOf(v);
        if (failed(id))
          return failure();
        program.outputs.push_back(*id);
      }
      continue;
    }
    auto launch = dyn_cast<attn_gpu::LaunchOp>(op);
    if (!launch)
      return op.emitOpError("cannot run on the GPU: only attn operations "
                            "can be compiled");
    LaunchSpec spec;
    spec.kernel = launch.getKernel().str();
    attn_gpu::LaunchAttr geometry = launch.getGeometry();
    spec.threads = geometry.getThreads();
    spec.smem = geometry.getSmem();
    spec.blockM = geometry.getBlockM();
    spec.kvSplits = geometry.getKvSplits();
    Operation *kernel = symbols.lookup(spec.kernel);
    if (auto attention = dyn_cast_or_null<attn_gpu::KernelOp>(kernel)) {
      spec.kind = LaunchSpec::Kind::Attention;
      auto q = cast<attn::QueryType>(attention.getQuery());
      auto kv = cast<attn::KVType>(attention.getKey());
      spec.group = q.getNumHeads() / kv.getNumHeads();
      spec.kvHeads = kv.getNumHeads();
      attn_gpu::PlanAttr plan = attention.getPlan();
      spec.schedule = plan.getSchedule();
      spec.packedHeads = plan.getPackedHeads(spec.group);
      spec.blockN = plan.getBlockN();
      if (plan.getConsumers()) {
        spec.qBoxRows = plan.getQueryBoxRows();
        spec.kvBoxRows = attention.getKVBoxRows();
      }
      spec.claimsItems = plan.claimsItems();
      spec.clusterCtas = plan.getClusterCtas();
      spec.hasLse = attention.getHasLse();
      spec.segments = attention.getSegments();
      spec.kvScales = attention.getKeyScale().has_value();
      spec.mergesSplits = attention.getMergeSplits();
      spec.mergesInSecondLaunch =
          spec.mergesSplits && plan.mergesInSecondLaunch();
      spec.overlapsPreviousLaunch = plan.overlapsPreviousLaunch();
      spec.splitResults = spec.kvSplits > 1 && !spec.mergesSplits;
      spec.values = variantValues(attention);
    } else {
      spec.kind = LaunchSpec::Kind::Merge;
    }
    for (Value arg : launch.getArgs()) {
      FailureOr<int> id = idOf(arg);
      if (failed(id))
        return failure();
      spec.args.push_back(*id);
    }
    for (Value result : launch.getResults()) {
      FailureOr<int> id = idOf(result);
      if (failed(id))
        return failure();
      spec.results.push_back(*id);
    }
    program.launches.push_back(spec);
  }
  return success();
}

} // namespace

LogicalResult lowerVariant(ModuleOp module, const CompileOptions &options,
                           Stage stage, Program *program) {
  if (failed(requireCompilableModule(module)))
    return failure();
  MLIRContext *context = module.getContext();
  PassManager pm(context);
  if (options.printIRAfterAll) {
    context->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  }
  pm.addPass(attn::createAttnCanonicalize());
  if (stage != Stage::Attn) {
    pm.addPass(attn::createAttnPlan(options));
    pm.addPass(attn::createAttnAnalyzeMasks());
    pm.addPass(attn::createAttnSplitKV());
    pm.addPass(attn::createAttnLowerToGPU());
    pm.addPass(attn::createAttnFuseSplitMerge());
  }
  if (failed(pm.run(module)))
    return failure();
  if (stage == Stage::Attn)
    return success();
  if (program && failed(describeProgram(module, *program)))
    return failure();
  if (stage == Stage::Gpu)
    return success();
  PassManager emit(context);
  if (options.printIRAfterAll)
    emit.enableIRPrinting([](Pass *, Operation *) { return false; },
                          [](Pass *, Operation *) { return true; }, true,
                          false);
  emit.addPass(attn::createAttnGPUToEmitC());
  return emit.run(module);
}

LogicalResult printCuda(ModuleOp module, std::string &cuda) {
  llvm::raw_string_ostream os(cuda);
  os << "// Generated by attnc from the variant's EmitC; compiled by NVRTC.\n";
  for (auto file : module.getOps<emitc::FileOp>())
    if (failed(emitc::translateToCpp(file, os, /*declareVariablesAtTop=*/false,
                                     file.getId())))
      return failure();
  return success();
}

} // namespace attnc
