//===- RegionOps.cpp - what score_mod / mask_mod regions may hold ---------===//

#include "attnc/Dialect/Attn/RegionOps.h"

#include "attnc/Dialect/Attn/AttnDialect.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::attn;

ArrayRef<RegionMathFunction> mlir::attn::regionMathFunctions() {
  // NVRTC declares every one of these without an include.
  static constexpr RegionMathFunction kFunctions[] = {
      {"math.absf", "fabsf", 1},         {"math.acos", "acosf", 1},
      {"math.acosh", "acoshf", 1},       {"math.asin", "asinf", 1},
      {"math.asinh", "asinhf", 1},       {"math.atan", "atanf", 1},
      {"math.atan2", "atan2f", 2},       {"math.atanh", "atanhf", 1},
      {"math.cbrt", "cbrtf", 1},         {"math.ceil", "ceilf", 1},
      {"math.copysign", "copysignf", 2}, {"math.cos", "cosf", 1},
      {"math.cosh", "coshf", 1},         {"math.erf", "erff", 1},
      {"math.erfc", "erfcf", 1},         {"math.exp", "expf", 1},
      {"math.exp2", "exp2f", 1},         {"math.expm1", "expm1f", 1},
      {"math.floor", "floorf", 1},       {"math.fma", "fmaf", 3},
      {"math.log", "logf", 1},           {"math.log10", "log10f", 1},
      {"math.log1p", "log1pf", 1},       {"math.log2", "log2f", 1},
      {"math.powf", "powf", 2},          {"math.round", "roundf", 1},
      {"math.roundeven", "rintf", 1},    {"math.rsqrt", "rsqrtf", 1},
      {"math.sin", "sinf", 1},           {"math.sinh", "sinhf", 1},
      {"math.sqrt", "sqrtf", 1},         {"math.tan", "tanf", 1},
      {"math.tanh", "tanhf", 1},         {"math.trunc", "truncf", 1},
  };
  return kFunctions;
}

ArrayRef<StringLiteral> mlir::attn::regionScalarOps() {
  static constexpr StringLiteral kOps[] = {
      // Floating point.
      "arith.constant", "arith.addf", "arith.subf", "arith.mulf", "arith.divf",
      "arith.remf", "arith.negf", "arith.maximumf", "arith.minimumf",
      "arith.maxnumf", "arith.minnumf",
      // Integers and index.
      "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
      "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.ceildivui",
      "arith.floordivsi", "arith.minsi", "arith.maxsi", "arith.minui",
      "arith.maxui", "arith.andi", "arith.ori", "arith.xori", "arith.shli",
      "arith.shrsi", "arith.shrui", "math.absi",
      // Comparisons and choice.
      "arith.cmpf", "arith.cmpi", "arith.select",
      // Casts between the region's scalar types.
      "arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
      "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi",
      "arith.fptoui"};
  return kOps;
}

bool mlir::attn::isRegionScalarType(Type type) {
  return type.isF32() || type.isIndex() || type.isSignlessInteger(1) ||
         type.isSignlessInteger(32) || type.isSignlessInteger(64);
}

namespace {

bool isListed(StringRef name) {
  return llvm::is_contained(regionScalarOps(), name) ||
         llvm::any_of(regionMathFunctions(), [&](const RegionMathFunction &f) {
           return f.op == name;
         });
}

/// Ops that treat i1 as a boolean, which C++ lowers as bool: logic, choice,
/// constants, zero extension and truncation to the low bit. Everything else
/// would read i1 as a signed number (true is -1 in arith, 1 in C++).
bool takesBooleans(Operation *op) {
  return isa<arith::ConstantOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp,
             arith::SelectOp, arith::CmpFOp, arith::ExtUIOp, arith::UIToFPOp,
             arith::IndexCastUIOp, arith::TruncIOp>(op);
}

} // namespace

LogicalResult mlir::attn::verifyRegionOp(Operation *op, StringRef region) {
  if (isa<YieldOp>(op))
    return success();
  bool load = isa<memref::LoadOp>(op);
  if (!load && !isListed(op->getName().getStringRef()))
    return op->emitOpError("is not allowed in '")
           << region
           << "': regions hold the arith and math ops listed in "
              "docs/regions.md, and memref.load on captures";
  SmallVector<Type> types(op->getResultTypes());
  // A load's memref operand is a capture; its indices are index values.
  llvm::append_range(
      types, load ? TypeRange(cast<memref::LoadOp>(op).getIndices().getTypes())
                  : TypeRange(op->getOperandTypes()));
  for (Type type : types)
    if (!isRegionScalarType(type))
      return op->emitOpError("in '")
             << region << "' computes on " << type
             << ": regions compute on f32, i1, i32, i64 and index scalars";
  auto isBool = [](Type type) { return type.isSignlessInteger(1); };
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    // Unsigned order is C++'s order of bool (false < true); signed is not.
    arith::CmpIPredicate predicate = cmp.getPredicate();
    if (isBool(cmp.getLhs().getType()) &&
        (predicate == arith::CmpIPredicate::slt ||
         predicate == arith::CmpIPredicate::sle ||
         predicate == arith::CmpIPredicate::sgt ||
         predicate == arith::CmpIPredicate::sge))
      return op->emitOpError("in '")
             << region
             << "' orders i1 values as signed numbers: compare booleans with "
                "eq, ne or an unsigned predicate";
    return success();
  }
  if (!takesBooleans(op) && llvm::any_of(types, isBool))
    return op->emitOpError("in '")
           << region
           << "' reads i1 as a number: booleans take andi, ori, xori, "
              "select, cmpi (eq, ne, unsigned), extui, uitofp, index_castui "
              "and trunci";
  return success();
}
