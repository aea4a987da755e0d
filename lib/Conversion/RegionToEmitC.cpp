//===- RegionToEmitC.cpp - modifier region bodies to EmitC ----------------===//
//
// Covers every op RegionOps.h admits: the integer divisions that round
// toward an infinity and math.absi are first rewritten into arith ops; the
// math functions become calls of the CUDA functions RegionOps.h names; the
// rest goes through the upstream arith conversion, with patterns for what
// it lacks (min/max, divui, remui on index, remf) or gets wrong (signed
// division of index, which it performs on the unsigned size_t).
//
//===----------------------------------------------------------------------===//

#include "RegionToEmitC.h"

#include "attnc/Dialect/Attn/RegionOps.h"

#include "mlir/Conversion/ArithToEmitC/ArithToEmitC.h"
#include "mlir/Conversion/FuncToEmitC/FuncToEmitC.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/EmitC/Transforms/TypeConversions.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

//===----------------------------------------------------------------------===//
// Rewrites into arith ops
//===----------------------------------------------------------------------===//

Value constant(PatternRewriter &rewriter, Location loc, Type type,
               int64_t value) {
  return arith::ConstantOp::create(rewriter, loc, type,
                                   rewriter.getIntegerAttr(type, value));
}

Value compare(PatternRewriter &rewriter, Location loc,
              arith::CmpIPredicate predicate, Value a, Value b) {
  return arith::CmpIOp::create(rewriter, loc, predicate, a, b);
}

/// The truncating quotient, moved by one (`Step` is addi or subi) where the
/// remainder is non-zero and its sign against the divisor's says C++ rounded
/// the wrong way: floor moves down when the signs differ, ceil up when they
/// agree.
template <typename Op, typename Step, arith::CmpIPredicate SignsMatch>
struct ExpandSignedDivision : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = op.getLhs(), b = op.getRhs();
    Type type = a.getType();
    Value zero = constant(rewriter, loc, type, 0);
    Value q = arith::DivSIOp::create(rewriter, loc, a, b);
    Value r = arith::RemSIOp::create(rewriter, loc, a, b);
    Value inexact = compare(rewriter, loc, arith::CmpIPredicate::ne, r, zero);
    Value rNegative =
        compare(rewriter, loc, arith::CmpIPredicate::slt, r, zero);
    Value bNegative =
        compare(rewriter, loc, arith::CmpIPredicate::slt, b, zero);
    Value signs = compare(rewriter, loc, SignsMatch, rNegative, bNegative);
    Value move = arith::AndIOp::create(rewriter, loc, inexact, signs);
    Value moved =
        Step::create(rewriter, loc, q, constant(rewriter, loc, type, 1));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, move, moved, q);
    return success();
  }
};
using ExpandFloorDivSI =
    ExpandSignedDivision<arith::FloorDivSIOp, arith::SubIOp,
                         arith::CmpIPredicate::ne>;
using ExpandCeilDivSI = ExpandSignedDivision<arith::CeilDivSIOp, arith::AddIOp,
                                             arith::CmpIPredicate::eq>;

/// The quotient, plus one where the division is inexact.
struct ExpandCeilDivUI : OpRewritePattern<arith::CeilDivUIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::CeilDivUIOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type type = op.getType();
    Value q = arith::DivUIOp::create(rewriter, loc, op.getLhs(), op.getRhs());
    Value r = arith::RemUIOp::create(rewriter, loc, op.getLhs(), op.getRhs());
    Value inexact = compare(rewriter, loc, arith::CmpIPredicate::ne, r,
                            constant(rewriter, loc, type, 0));
    Value up = arith::AddIOp::create(rewriter, loc, q,
                                     constant(rewriter, loc, type, 1));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, inexact, up, q);
    return success();
  }
};

struct ExpandAbsI : OpRewritePattern<math::AbsIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::AbsIOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getOperand();
    Value zero = constant(rewriter, loc, x.getType(), 0);
    Value negative = compare(rewriter, loc, arith::CmpIPredicate::slt, x, zero);
    Value negated = arith::SubIOp::create(rewriter, loc, zero, x);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, negative, negated, x);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Conversions to EmitC
//===----------------------------------------------------------------------===//

/// An op computed by a CUDA function of the same operands.
struct CallFunction : public ConversionPattern {
  CallFunction(const TypeConverter &converter, StringRef opName,
               StringRef callee, MLIRContext *ctx)
      : ConversionPattern(converter, opName, /*benefit=*/1, ctx),
        callee(callee.str()) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<emitc::CallOpaqueOp>(op, op->getResultTypes(),
                                                     callee, operands);
    return success();
  }
  std::string callee;
};

/// Converts the operands of the emitc.call_opaque capture loads once their
/// index operands change type.
struct ConvertCallOpaqueOperands
    : public OpConversionPattern<emitc::CallOpaqueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(emitc::CallOpaqueOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<emitc::CallOpaqueOp>(
        op, op.getResultTypes(), op.getCallee(), adaptor.getOperands(),
        op.getArgsAttr(), op.getTemplateArgsAttr());
    return success();
  }
};

/// Casts `value` to `type` unless it has it.
Value castTo(ConversionPatternRewriter &rewriter, Location loc, Type type,
             Value value) {
  if (value.getType() == type)
    return value;
  return emitc::CastOp::create(rewriter, loc, type, value);
}

/// A binary op computed in `operandType` (the signedness the op asks for)
/// and cast back to the converted result type.
template <typename Op, typename EmitOp>
LogicalResult rewriteIn(Op op, Type operandType, Value lhs, Value rhs,
                        ConversionPatternRewriter &rewriter) {
  Location loc = op.getLoc();
  Type type = lhs.getType();
  Value r = EmitOp::create(rewriter, loc, operandType,
                           castTo(rewriter, loc, operandType, lhs),
                           castTo(rewriter, loc, operandType, rhs));
  rewriter.replaceOp(op, castTo(rewriter, loc, type, r));
  return success();
}

/// divsi and remsi on index, which upstream computes on the unsigned size_t:
/// a negative relative position would divide as a huge number.
template <typename Op, typename EmitOp>
struct SignedIndexDivision : public OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<emitc::SizeTType>(adaptor.getLhs().getType()))
      return failure();
    return rewriteIn<Op, EmitOp>(op, emitc::PtrDiffTType::get(op.getContext()),
                                 adaptor.getLhs(), adaptor.getRhs(), rewriter);
  }
};

/// divui and remui: upstream lacks divui and remui on index, and EmitC's iN
/// is signed, so both compute on uiN or size_t.
template <typename Op, typename EmitOp>
struct UnsignedDivision : public OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = adaptor.getLhs().getType();
    if (auto integer = dyn_cast<IntegerType>(type))
      type = IntegerType::get(op.getContext(), integer.getWidth(),
                              IntegerType::Unsigned);
    return rewriteIn<Op, EmitOp>(op, type, adaptor.getLhs(), adaptor.getRhs(),
                                 rewriter);
  }
};

/// arith's min and max ops, which the upstream conversion lacks, as a
/// comparison and a conditional in the operands' signedness.
template <typename Op, emitc::CmpPredicate Predicate, bool Unsigned>
struct MinMaxToConditional : public OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    Type type = lhs.getType();
    Type compareType = type;
    // size_t (from index) is unsigned and iN is signed in EmitC: compare in
    // the signedness the op asks for.
    if (isa<emitc::SizeTType>(type) && !Unsigned)
      compareType = emitc::PtrDiffTType::get(op.getContext());
    else if (auto integer = dyn_cast<IntegerType>(type); integer && Unsigned)
      compareType = IntegerType::get(op.getContext(), integer.getWidth(),
                                     IntegerType::Unsigned);
    Value pick =
        emitc::CmpOp::create(rewriter, loc, rewriter.getI1Type(), Predicate,
                             castTo(rewriter, loc, compareType, lhs),
                             castTo(rewriter, loc, compareType, rhs));
    rewriter.replaceOpWithNewOp<emitc::ConditionalOp>(op, type, pick, lhs, rhs);
    return success();
  }
};

/// A bitwise op or shift on index values, which ArithToEmitC lowers on
/// integers only, computed on i64 (an index holds 64 bits on the GPU):
/// traced mods read packed masks by a key's word and bit, `kv_idx >> 5`
/// and `kv_idx & 31`. A logical right shift reads its operands unsigned.
template <typename Op, bool Unsigned = false>
struct IndexBitwiseOnI64 : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isIndex())
      return failure();
    Location loc = op.getLoc();
    Type i64 = rewriter.getI64Type();
    auto widen = [&](Value value) -> Value {
      if (Unsigned)
        return arith::IndexCastUIOp::create(rewriter, loc, i64, value);
      return arith::IndexCastOp::create(rewriter, loc, i64, value);
    };
    Value result =
        Op::create(rewriter, loc, widen(op.getLhs()), widen(op.getRhs()));
    if (Unsigned)
      rewriter.replaceOpWithNewOp<arith::IndexCastUIOp>(op, op.getType(),
                                                        result);
    else
      rewriter.replaceOpWithNewOp<arith::IndexCastOp>(op, op.getType(), result);
    return success();
  }
};

} // namespace

LogicalResult mlir::attn::convertRegionFunction(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  RewritePatternSet expansions(ctx);
  expansions
      .add<ExpandFloorDivSI, ExpandCeilDivSI, ExpandCeilDivUI, ExpandAbsI,
           IndexBitwiseOnI64<arith::AndIOp>, IndexBitwiseOnI64<arith::OrIOp>,
           IndexBitwiseOnI64<arith::XOrIOp>, IndexBitwiseOnI64<arith::ShLIOp>,
           IndexBitwiseOnI64<arith::ShRSIOp>,
           IndexBitwiseOnI64<arith::ShRUIOp, /*Unsigned=*/true>>(ctx);
  if (failed(applyPatternsGreedily(func, std::move(expansions))))
    return failure();

  TypeConverter converter;
  converter.addConversion([](Type type) { return type; });
  populateEmitCSizeTTypeConversions(converter);
  RewritePatternSet patterns(ctx);
  populateArithToEmitCPatterns(converter, patterns);
  populateFuncToEmitCPatterns(converter, patterns);
  for (const RegionMathFunction &function : regionMathFunctions())
    patterns.add<CallFunction>(converter, function.op, function.cuda, ctx);
  patterns.add<CallFunction>(converter, arith::RemFOp::getOperationName(),
                             "fmodf", ctx);
  patterns.add<SignedIndexDivision<arith::DivSIOp, emitc::DivOp>,
               SignedIndexDivision<arith::RemSIOp, emitc::RemOp>,
               UnsignedDivision<arith::DivUIOp, emitc::DivOp>,
               UnsignedDivision<arith::RemUIOp, emitc::RemOp>>(converter, ctx,
                                                               /*benefit=*/2);
  patterns.add<
      ConvertCallOpaqueOperands,
      MinMaxToConditional<arith::MinUIOp, emitc::CmpPredicate::lt, true>,
      MinMaxToConditional<arith::MaxUIOp, emitc::CmpPredicate::gt, true>,
      MinMaxToConditional<arith::MinSIOp, emitc::CmpPredicate::lt, false>,
      MinMaxToConditional<arith::MaxSIOp, emitc::CmpPredicate::gt, false>,
      MinMaxToConditional<arith::MinimumFOp, emitc::CmpPredicate::lt, false>,
      MinMaxToConditional<arith::MaximumFOp, emitc::CmpPredicate::gt, false>,
      MinMaxToConditional<arith::MinNumFOp, emitc::CmpPredicate::lt, false>,
      MinMaxToConditional<arith::MaxNumFOp, emitc::CmpPredicate::gt, false>>(
      converter, ctx);
  ConversionTarget target(*ctx);
  target.addLegalDialect<emitc::EmitCDialect>();
  target.addIllegalDialect<arith::ArithDialect, math::MathDialect,
                           func::FuncDialect>();
  target.addDynamicallyLegalOp<emitc::CallOpaqueOp>(
      [&](emitc::CallOpaqueOp op) { return converter.isLegal(op); });
  return applyPartialConversion(func.getOperation(), target,
                                std::move(patterns));
}
