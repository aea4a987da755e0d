//===- AttnGPUToEmitC.cpp - attn_gpu kernels to EmitC ---------------------===//
//
// Device code goes into one `emitc.file "attnc_device"`: for each kernel a
// configuration struct the tile library is instantiated with, a __device__
// function per modifier region, and the __global__ entry point whose body
// calls one library function per attn_gpu op.
//
//===----------------------------------------------------------------------===//

#include "RegionToEmitC.h"
#include "attnc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPUTOEMITC
#include "attnc/Dialect/Attn/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
namespace gpu = mlir::attn_gpu;

namespace {

constexpr StringLiteral kDeviceFileId = "attnc_device";
/// The name of the kernel's CTA object, whose members the device ops call.
constexpr StringLiteral kCtaObject = "cta";

std::string cppElementType(Type type) {
  if (type.isBF16())
    return "attnc::bf16";
  if (type.isF16())
    return "attnc::f16";
  if (isa<Float8E4M3FNType>(type))
    return "attnc::f8e4m3";
  if (isa<Float8E5M2Type>(type))
    return "attnc::f8e5m2";
  if (type.isF32())
    return "float";
  if (type.isInteger(32))
    return "attnc::i32";
  if (type.isInteger(64))
    return "attnc::i64";
  return "";
}

std::string floatLiteral(double value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.9g", value);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s + "f";
}

class KernelEmitter {
public:
  KernelEmitter(gpu::KernelOp kernel, emitc::FileOp file)
      : kernel(kernel), file(file), b(kernel.getContext()) {}

  LogicalResult emit() {
    b.setInsertionPointToEnd(&file.getBodyRegion().front());
    name = kernel.getSymName().str();
    if (!kernel.getScoreMod().empty() &&
        failed(emitRegionFunction(kernel.getScoreMod(), "_score_mod",
                                  b.getF32Type(),
                                  /*leadingScore=*/true)))
      return failure();
    if (!kernel.getMaskMod().empty() &&
        failed(emitRegionFunction(kernel.getMaskMod(), "_mask_mod",
                                  b.getI1Type(),
                                  /*leadingScore=*/false)))
      return failure();
    emitc::VerbatimOp::create(b, kernel.getLoc(), configStruct());
    return emitEntryPoint();
  }

private:
  /// The compile-time configuration of the tile library for this kernel:
  /// every decision the compiler made, which the device uses as given.
  std::string configStruct() {
    auto q = cast<QueryType>(kernel.getQuery());
    auto out = cast<OutputType>(kernel.getOutput());
    auto kv = cast<KVType>(kernel.getKey());
    gpu::PlanAttr plan = kernel.getPlan();
    gpu::MaskAnalysisAttr masks = kernel.getMasks();
    auto window = dyn_cast_or_null<WindowAttr>(kernel.getWindowAttr());
    bool paged = kv.getLayout() == TokenLayout::Paged;
    std::string s;
    llvm::raw_string_ostream os(s);
    auto member = [&](StringRef type, StringRef field, auto value) {
      os << "  static constexpr " << type << " " << field << " = " << value
         << ";\n";
    };
    auto flag = [&](StringRef field, bool value) {
      member("bool", field, value ? "true" : "false");
    };
    os << "struct " << name << "_config {\n";
    os << "  using Elem = " << cppElementType(q.getElementType()) << ";\n";
    os << "  using Out = " << cppElementType(out.getElementType()) << ";\n";
    os << "  using KVElem = " << cppElementType(kv.getElementType()) << ";\n";
    member("int", "kHeadDimQK", q.getHeadDim());
    member("int", "kHeadDimV", out.getHeadDim());
    member("int", "kNumQHeads", q.getNumHeads());
    member("int", "kNumKVHeads", kv.getNumHeads());
    member("int", "kGroup", q.getNumHeads() / kv.getNumHeads());
    member("int", "kBlockM", plan.getBlockM());
    member("int", "kWarpsM", plan.getWarpsM());
    member("int", "kWarpsN", plan.getWarpsN());
    member("int", "kBlockN", plan.getBlockN());
    member("int", "kStages", plan.getStages());
    // The most KV splits a launch may take: with one, the device compiles no
    // split-KV path.
    member("int", "kKVSplits", plan.getKvSplits());
    member("int", "kQueryBuffers", plan.getQueryBuffers());
    member("int", "kClusterCtas", plan.getClusterCtas());
    flag("kClaimItems", plan.claimsItems());
    member("int", "kKVBoxRows", kernel.getKVBoxRows());
    member("int", "kSmemBytes", kernel.getSharedMemoryBytes());
    member("attnc::TokenLayout", "kQLayout", attnc::spelling(q.getLayout()));
    member("attnc::TokenLayout", "kKVLayout", attnc::spelling(kv.getLayout()));
    member("int", "kPageSize", paged ? kv.getPageSize() : 0);
    member("attnc::PageOrder", "kPageOrder",
           attnc::spelling(paged ? kv.getPageOrder() : PageOrder::NHD));
    flag("kCausal", kernel.getCausal());
    // Which of the variant's numbers apply; the numbers themselves are
    // launch values (attnc::VariantValues, LaunchSpec::values), so that
    // variants differing only in them emit the same source.
    flag("kHasWindowLeft", window && window.getLeft() >= 0);
    flag("kHasWindowRight", window && window.getRight() >= 0);
    flag("kHasSinks", masks.getSinks() > 0);
    flag("kHasSoftcap", kernel.getSoftcap().has_value());
    // A soft-capped kernel compiles its scale and soft-cap in: its held
    // tanh loop ran 2-4 % slower reading them at launch (P4, H200,
    // 2026-11-29), which issue 49 does not allow. 0: launch values.
    bool compiledScores = kernel.getSoftcap().has_value();
    member("float", "kCompiledScale",
           floatLiteral(compiledScores ? kernel.getScale().convertToDouble()
                                       : 0.0));
    member("float", "kCompiledSoftcap",
           floatLiteral(compiledScores ? kernel.getSoftcap()->convertToDouble()
                                       : 0.0));
    // attn-analyze-masks' classification of the KV tiles.
    flag("kLowerBound", masks.getLowerBound());
    flag("kUpperBound", masks.getUpperBound());
    member("attnc::PartialTiles", "kPartialTiles",
           attnc::spelling(masks.getPartial()));
    flag("kAlibi", kernel.getAlibi());
    flag("kScoreMod", !kernel.getScoreMod().empty());
    flag("kMaskMod", !kernel.getMaskMod().empty());
    flag("kSegments", kernel.getSegments());
    // An fp8 cache's scales: one per tensor, or one per KV head.
    auto perHead = [](std::optional<Type> scale) {
      return scale && cast<MemRefType>(*scale).getDimSize(0) > 1;
    };
    flag("kKVScales", kernel.getKeyScale().has_value());
    flag("kKScalePerHead", perHead(kernel.getKeyScale()));
    flag("kVScalePerHead", perHead(kernel.getValueScale()));
    flag("kHasLse", kernel.getHasLse());
    flag("kMergeSplits", kernel.getMergeSplits());
    flag("kQInRegs", plan.getQueryInRegisters());
    os << "  static __device__ __forceinline__ float scoreMod(float s, int b, "
          "int h, int i, int j, int qLen, int kvLen, const attnc::AttnParams "
          "&p) {\n    return ";
    // The device scores the padding rows and keys of a request's last tiles
    // too, and masks them afterwards; the region sees only the request's
    // positions, so that its capture loads stay inside the buffers.
    if (kernel.getScoreMod().empty())
      os << "s;\n";
    else
      os << "i < qLen && j < kvLen ? " << name
         << "_score_mod(s, b, h, i, j, qLen, kvLen, &p) : s;\n";
    os << "  }\n";
    os << "  static __device__ __forceinline__ bool maskMod(int b, int h, int "
          "i, int j, int qLen, int kvLen, const attnc::AttnParams &p) {\n"
          "    return ";
    if (kernel.getMaskMod().empty())
      os << "true;\n";
    else
      os << name << "_mask_mod(b, h, i, j, qLen, kvLen, &p);\n";
    os << "  }\n};";
    return s;
  }

  /// Clones a modifier region into a func.func over (score?, batch, head,
  /// qi, kvi, q_len, kv_len, params) whose capture loads read the launch's
  /// views, then converts it to an emitc.func.
  LogicalResult emitRegionFunction(Region &region, StringRef suffix,
                                   Type resultType, bool leadingScore) {
    MLIRContext *ctx = b.getContext();
    Location loc = kernel.getLoc();
    Type params = emitc::PointerType::get(
        emitc::OpaqueType::get(ctx, "const attnc::AttnParams"));
    SmallVector<Type> argTypes;
    if (leadingScore)
      argTypes.push_back(b.getF32Type());
    argTypes.append(AttentionOp::kMaskModIndexArgs, b.getIndexType());
    argTypes.push_back(params);
    auto func =
        func::FuncOp::create(b, loc, name + suffix.str(),
                             FunctionType::get(ctx, argTypes, {resultType}));
    Block *entry = func.addEntryBlock();
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    Block &source = region.front();
    unsigned fixedArgs = argTypes.size() - 1;
    IRMapping mapping;
    for (unsigned i = 0; i < fixedArgs; ++i)
      mapping.map(source.getArgument(i), entry->getArgument(i));
    Value paramsArg = entry->getArgument(fixedArgs);
    for (Operation &op : source) {
      if (auto load = dyn_cast<memref::LoadOp>(op)) {
        auto arg = dyn_cast<BlockArgument>(load.getMemRef());
        if (!arg || arg.getOwner() != &source)
          return load.emitOpError("reads a buffer that is not a capture");
        unsigned capture = arg.getArgNumber() - fixedArgs;
        std::string element = cppElementType(load.getType());
        if (element.empty())
          return load.emitOpError("reads captures of an element type the C++ "
                                  "emitter does not support");
        SmallVector<Value> operands{paramsArg};
        SmallVector<Attribute> args{b.getIndexAttr(0),
                                    b.getI32IntegerAttr(capture)};
        for (Value index : load.getIndices()) {
          args.push_back(b.getIndexAttr(operands.size()));
          operands.push_back(mapping.lookup(index));
        }
        auto call = emitc::CallOpaqueOp::create(
            body, load.getLoc(), TypeRange{load.getType()},
            "attnc::loadCapture<" + element + ">", operands,
            b.getArrayAttr(args));
        mapping.map(load.getResult(), call.getResult(0));
        continue;
      }
      if (auto yield = dyn_cast<gpu::YieldOp>(op)) {
        func::ReturnOp::create(body, yield.getLoc(),
                               mapping.lookup(yield->getOperand(0)));
        continue;
      }
      body.clone(op, mapping);
    }

    // The verifier admits only ops that lower: a failure here is a bug.
    if (failed(convertRegionFunction(func)))
      return kernel.emitOpError("has a ")
             << suffix.drop_front() << " region the C++ emitter cannot "
             << "express (an op RegionOps.h admits without an EmitC lowering)";
    auto emitted = cast<emitc::FuncOp>(file.lookupSymbol(name + suffix.str()));
    emitted.setSpecifiersAttr(
        b.getStrArrayAttr({"static __device__ __forceinline__"}));
    b.setInsertionPointToEnd(&file.getBodyRegion().front());
    return success();
  }

  LogicalResult emitEntryPoint() {
    MLIRContext *ctx = b.getContext();
    Location loc = kernel.getLoc();
    // TMA reads the tensor maps where the launch put them: the parameter
    // struct stays in parameter space.
    bool warpSpecialized = kernel.getPlan().isWarpSpecialized();
    Type params = emitc::OpaqueType::get(
        ctx, warpSpecialized ? "const __grid_constant__ attnc::TmaAttnParams"
                             : "const attnc::AttnParams");
    auto func = emitc::FuncOp::create(b, loc, name,
                                      FunctionType::get(ctx, {params}, {}));
    std::string specifier;
    llvm::raw_string_ostream(specifier)
        << "extern \"C\" __global__ __launch_bounds__("
        << kernel.getPlan().getThreads() << ", 1)";
    // A cluster's shape is the kernel's own, so a plain launch of an even
    // grid forms the clusters (Executor rounds the grid).
    if (int64_t cluster = kernel.getPlan().getClusterCtas(); cluster > 1)
      llvm::raw_string_ostream(specifier)
          << " __cluster_dims__(" << cluster << ", 1, 1)";
    func.setSpecifiersAttr(b.getStrArrayAttr({specifier}));
    Block *entry = func.addEntryBlock();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    emitc::VerbatimOp::create(
        b, loc, "extern __shared__ __align__(16) char attnc_smem[];");
    // The CTA object has a name of its own, so that each device op becomes
    // a call of one of its members (CtaCallOpInterface).
    emitc::VerbatimOp::create(b, loc,
                              (Twine(kernel.getPlan().traits().ctaClass) + "<" +
                               name + "_config> " + kCtaObject + ";")
                                  .str());
    paramsArg = entry->getArgument(0);
    for (Operation &op : kernel.getBody().front())
      if (failed(emitOp(op)))
        return failure();
    emitc::ReturnOp::create(b, loc, Value());
    return success();
  }

  /// A variable of `type` declared without a value (`T v;`).
  Value declare(Location loc, Type type) {
    return emitc::VariableOp::create(
        b, loc, emitc::LValueType::get(type),
        emitc::OpaqueAttr::get(b.getContext(), ""));
  }

  /// A device op as `cta.<library call><template arguments>(<args>)`: the
  /// kernel's parameters and shared memory first if the op binds them,
  /// then its operands; its result, an index or a flag, as an int or bool.
  LogicalResult emitCtaCall(gpu::CtaCallOpInterface call) {
    Operation *op = call.getOperation();
    SmallVector<Type> results;
    for (Type type : op->getResultTypes())
      results.push_back(type.isIndex() ? b.getI32Type() : type);
    if (results.size() > 1)
      return op->emitOpError("has no EmitC lowering: a CTA call has at most "
                             "one result");
    SmallVector<Value> operands;
    SmallVector<Attribute> args;
    if (call.bindsKernelArguments()) {
      operands.push_back(paramsArg);
      args = {b.getIndexAttr(0),
              emitc::OpaqueAttr::get(b.getContext(), "attnc_smem")};
    }
    for (Value operand : op->getOperands()) {
      if (!args.empty())
        args.push_back(b.getIndexAttr(operands.size()));
      operands.push_back(values.lookup(operand));
    }
    std::string callee = (Twine(kCtaObject) + "." + call.getLibraryCall() +
                          call.getTemplateArguments())
                             .str();
    auto emitted = emitc::CallOpaqueOp::create(
        b, op->getLoc(), results, callee, operands,
        args.empty() ? ArrayAttr() : b.getArrayAttr(args));
    for (auto [result, value] :
         llvm::zip(op->getResults(), emitted.getResults()))
      values.map(result, value);
    return success();
  }

  /// Emits `block` at the insertion point, a region of an emitc.if or
  /// emitc.for, which then ends with emitc.yield.
  LogicalResult emitBlock(Block &block) {
    for (Operation &op : block)
      if (failed(emitOp(op)))
        return failure();
    Block *emitted = b.getInsertionBlock();
    if (emitted->empty() || !emitted->back().hasTrait<OpTrait::IsTerminator>())
      emitc::YieldOp::create(b, block.getParentOp()->getLoc());
    return success();
  }

  LogicalResult emitOp(Operation &op) {
    Location loc = op.getLoc();
    Type i32 = b.getI32Type(), i1 = b.getI1Type();
    auto tile = [&](Value v) { return values.lookup(v); };
    return TypeSwitch<Operation *, LogicalResult>(&op)
        .Case([&](gpu::CtaCallOpInterface call) { return emitCtaCall(call); })
        .Case([&](arith::CmpIOp cmp) -> LogicalResult {
          if (cmp.getPredicate() != arith::CmpIPredicate::slt)
            return cmp.emitOpError("has no EmitC lowering inside an "
                                   "attn_gpu.kernel but slt");
          values.map(cmp.getResult(),
                     emitc::CmpOp::create(b, loc, i1, emitc::CmpPredicate::lt,
                                          tile(cmp.getLhs()),
                                          tile(cmp.getRhs())));
          return success();
        })
        .Case([&](arith::ConstantIndexOp constant) {
          values.map(constant.getResult(),
                     emitc::ConstantOp::create(
                         b, loc, i32, b.getI32IntegerAttr(constant.value())));
          return success();
        })
        .Case([&](arith::AddIOp add) {
          values.map(add.getResult(),
                     emitc::AddOp::create(b, loc, i32, tile(add.getLhs()),
                                          tile(add.getRhs())));
          return success();
        })
        .Case([&](arith::SubIOp sub) {
          values.map(sub.getResult(),
                     emitc::SubOp::create(b, loc, i32, tile(sub.getLhs()),
                                          tile(sub.getRhs())));
          return success();
        })
        .Case([&](scf::IfOp ifOp) {
          auto emitted = emitc::IfOp::create(b, loc, tile(ifOp.getCondition()),
                                             !ifOp.getElseRegion().empty());
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&emitted.getThenRegion().front());
          if (failed(emitBlock(*ifOp.thenBlock())))
            return failure();
          if (!ifOp.getElseRegion().empty()) {
            b.setInsertionPointToStart(&emitted.getElseRegion().front());
            if (failed(emitBlock(*ifOp.elseBlock())))
              return failure();
          }
          return success();
        })
        .Case([&](scf::ForOp forOp) {
          auto emitted = emitc::ForOp::create(
              b, loc, tile(forOp.getLowerBound()), tile(forOp.getUpperBound()),
              tile(forOp.getStep()));
          values.map(forOp.getInductionVar(), emitted.getInductionVar());
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(emitted.getBody());
          return emitBlock(*forOp.getBody());
        })
        .Case([&](scf::WhileOp whileOp) { return emitWhile(whileOp); })
        .Case([&](scf::YieldOp) { return success(); })
        .Default([&](Operation *other) {
          return other->emitOpError("has no EmitC lowering inside an "
                                    "attn_gpu.kernel");
        });
  }

  /// A loop that exits in the middle, as `do { before; if (more) { after } }
  /// while (more);`: its carried values live in variables, assigned from
  /// the inits and from the after region's yield. A tile loop that does its
  /// softmax before it issues the next tile's products takes this form;
  /// ptxas keeps the wgmma pipeline of this control flow (a `for` with the
  /// issues behind an `if` serializes every wgmma).
  LogicalResult emitWhile(scf::WhileOp whileOp) {
    Location loc = whileOp.getLoc();
    if (!whileOp->use_empty())
      return whileOp.emitOpError("has no EmitC lowering inside an "
                                 "attn_gpu.kernel when its results are used");
    // Tile indices are what the kernels carry: the variables are int32_t.
    if (!llvm::all_of(whileOp.getInits().getTypes(),
                      [](Type type) { return type.isIndex(); }) ||
        !llvm::all_of(whileOp.getConditionOp().getArgs().getTypes(),
                      [](Type type) { return type.isIndex(); }))
      return whileOp.emitOpError("has no EmitC lowering inside an "
                                 "attn_gpu.kernel but for index values");
    Type i32 = b.getI32Type(), i1 = b.getI1Type();
    SmallVector<Value> carried;
    for (Value init : whileOp.getInits()) {
      carried.push_back(declare(loc, i32));
      emitc::AssignOp::create(b, loc, carried.back(), values.lookup(init));
    }
    Value more = declare(loc, i1);
    auto loop = emitc::DoOp::create(b, loc);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&loop.getBodyRegion().emplaceBlock());
    for (auto [arg, var] : llvm::zip(whileOp.getBeforeArguments(), carried))
      values.map(arg, emitc::LoadOp::create(b, loc, i32, var));
    for (Operation &op : whileOp.getBeforeBody()->without_terminator())
      if (failed(emitOp(op)))
        return failure();
    scf::ConditionOp condition = whileOp.getConditionOp();
    Value proceed = values.lookup(condition.getCondition());
    emitc::AssignOp::create(b, loc, more, proceed);
    auto ifMore = emitc::IfOp::create(b, loc, proceed, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard thenGuard(b);
      b.setInsertionPointToStart(&ifMore.getThenRegion().front());
      for (auto [arg, forwarded] :
           llvm::zip(whileOp.getAfterArguments(), condition.getArgs()))
        values.map(arg, values.lookup(forwarded));
      for (Operation &op : whileOp.getAfterBody()->without_terminator())
        if (failed(emitOp(op)))
          return failure();
      for (auto [var, next] :
           llvm::zip(carried, whileOp.getYieldOp().getResults()))
        emitc::AssignOp::create(b, loc, var, values.lookup(next));
      emitc::YieldOp::create(b, loc);
    }
    b.setInsertionPointToStart(&loop.getConditionRegion().emplaceBlock());
    auto test = emitc::ExpressionOp::create(b, loc, i1, ValueRange{more});
    {
      OpBuilder::InsertionGuard testGuard(b);
      Block &body = test.getRegion().emplaceBlock();
      Value lvalue = body.addArgument(more.getType(), loc);
      b.setInsertionPointToStart(&body);
      emitc::YieldOp::create(b, loc, emitc::LoadOp::create(b, loc, i1, lvalue));
    }
    emitc::YieldOp::create(b, loc, test.getResult());
    return success();
  }

  gpu::KernelOp kernel;
  emitc::FileOp file;
  OpBuilder b;
  std::string name;
  Value paramsArg;
  IRMapping values;
};

LogicalResult emitMergeKernel(gpu::MergeKernelOp merge, emitc::FileOp file) {
  MLIRContext *ctx = merge.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(&file.getBodyRegion().front());
  Location loc = merge.getLoc();
  Type params = emitc::OpaqueType::get(ctx, "const attnc::MergeParams");
  auto func = emitc::FuncOp::create(b, loc, merge.getSymName(),
                                    FunctionType::get(ctx, {params}, {}));
  func.setSpecifiersAttr(
      b.getStrArrayAttr({"extern \"C\" __global__ __launch_bounds__(128)"}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  std::string callee = "attnc::mergeStates<" +
                       cppElementType(merge.getInput()) + ", " +
                       cppElementType(merge.getOutput()) + ", " +
                       std::to_string(merge.getVDim()) + ">";
  emitc::CallOpaqueOp::create(b, loc, TypeRange{}, callee,
                              ValueRange{entry->getArgument(0)});
  emitc::ReturnOp::create(b, loc, Value());
  return success();
}

struct AttnGPUToEmitCPass
    : public attn::impl::AttnGPUToEmitCBase<AttnGPUToEmitCPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> kernels;
    module.walk([&](Operation *op) {
      if (isa<gpu::KernelOp, gpu::MergeKernelOp>(op))
        kernels.push_back(op);
    });
    if (kernels.empty())
      return;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto file = emitc::FileOp::create(b, module.getLoc(), kDeviceFileId);
    if (file.getBodyRegion().empty())
      file.getBodyRegion().emplaceBlock();
    b.setInsertionPointToStart(&file.getBodyRegion().front());
    // Each schedule's header only: NVRTC parses every header included, and
    // a cold compile pays for it (the mma.sync schedules' headers were a
    // sixth of a Hopper prefill's compile).
    auto anyPlan = [&](auto predicate) {
      return llvm::any_of(kernels, [&](Operation *op) {
        auto kernel = dyn_cast<gpu::KernelOp>(op);
        return kernel && predicate(kernel.getPlan());
      });
    };
    // Each present schedule's device header, once, in the table's order.
    llvm::SmallSetVector<StringRef, 4> headers;
    for (const attnc::ScheduleTraits &row : attnc::kScheduleTraits)
      if (anyPlan([&](gpu::PlanAttr plan) { return &plan.traits() == &row; }))
        headers.insert(row.header);
    for (StringRef header : headers)
      emitc::IncludeOp::create(b, module.getLoc(), header);
    if (llvm::any_of(kernels, llvm::IsaPred<gpu::MergeKernelOp>))
      emitc::IncludeOp::create(b, module.getLoc(), "attnc/device/merge.h");
    for (Operation *op : kernels) {
      LogicalResult result =
          isa<gpu::KernelOp>(op)
              ? KernelEmitter(cast<gpu::KernelOp>(op), file).emit()
              : emitMergeKernel(cast<gpu::MergeKernelOp>(op), file);
      if (failed(result))
        return signalPassFailure();
    }
    for (Operation *op : kernels)
      op->erase();
  }
};

} // namespace
