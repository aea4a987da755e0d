//===- RegionInterpreter.cpp - score_mod / mask_mod in double -------------===//
//
// Integers (index, iN) are APInts of their type's width (64 for index), so
// wrapping, signedness and i1 behave as arith defines them; floats are
// doubles. Shifts by the width or more give 0, as the emitted C++ does.
// What arith leaves undefined (division by zero, a float out of an
// integer's range) is an error, never a made-up value.
//
//===----------------------------------------------------------------------===//

#include "attnc/Check/RegionInterpreter.h"

#include "attnc/Dialect/Attn/AttnDialect.h"

#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace attnc {
namespace {

struct Scalar {
  llvm::APInt i; // integers, i1 and index
  double f = 0;  // f32, evaluated in double
};

unsigned widthOf(Type type) {
  return type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
}

Scalar fromDouble(Type type, double value) {
  Scalar s;
  if (isa<FloatType>(type))
    s.f = value;
  else
    s.i = llvm::APInt(widthOf(type), uint64_t(int64_t(value)),
                      /*isSigned=*/true, /*implicitTrunc=*/true);
  return s;
}

/// arith's maximumf / minimumf: NaN if either operand is.
double propagatingNaN(double a, double b, double picked) {
  return std::isnan(a) || std::isnan(b) ? NAN : picked;
}

/// A float truncated toward zero to an integer of `width` bits, or nothing
/// where arith gives poison.
std::optional<llvm::APInt> toInteger(double value, unsigned width,
                                     bool isUnsigned) {
  llvm::APSInt result(width, isUnsigned);
  bool exact;
  llvm::APFloat f(value);
  if (f.convertToInteger(result, llvm::APFloat::rmTowardZero, &exact) &
      llvm::APFloat::opInvalidOp)
    return std::nullopt;
  return llvm::APInt(result);
}

/// Evaluates one op into `r`, or says why not in `error`.
bool evaluate(Operation &op, llvm::DenseMap<Value, Scalar> &env, Scalar &r,
              std::string &error) {
  auto f = [&](unsigned n) { return env[op.getOperand(n)].f; };
  auto i = [&](unsigned n) { return env[op.getOperand(n)].i; };
  Type resultType = op.getResult(0).getType();
  auto boolean = [&](bool value) { r.i = llvm::APInt(1, value); };
  bool known = true, ok = true;
  auto divide = [&](auto quotient) {
    if (i(1).isZero()) {
      error = op.getName().getStringRef().str() + " divides by zero";
      ok = false;
      return;
    }
    r.i = quotient();
  };
  const auto up = llvm::APInt::Rounding::UP;
  const auto down = llvm::APInt::Rounding::DOWN;
  auto shift = [&](auto shifted) {
    llvm::APInt amount = i(1);
    r.i = amount.uge(amount.getBitWidth())
              ? llvm::APInt::getZero(amount.getBitWidth())
              : shifted(amount.getZExtValue());
  };
  auto convert = [&](bool isUnsigned) {
    std::optional<llvm::APInt> value =
        toInteger(f(0), widthOf(resultType), isUnsigned);
    if (!value)
      error = op.getName().getStringRef().str() + " of " +
              std::to_string(f(0)) + " is out of the result's range";
    else
      r.i = *value;
    return value.has_value();
  };
  llvm::TypeSwitch<Operation *>(&op)
      .Case([&](arith::ConstantOp constant) {
        Attribute value = constant.getValue();
        if (auto fl = dyn_cast<FloatAttr>(value))
          r.f = fl.getValueAsDouble();
        else
          r.i = cast<IntegerAttr>(value).getValue();
      })
      // Floats.
      .Case([&](arith::AddFOp) { r.f = f(0) + f(1); })
      .Case([&](arith::SubFOp) { r.f = f(0) - f(1); })
      .Case([&](arith::MulFOp) { r.f = f(0) * f(1); })
      .Case([&](arith::DivFOp) { r.f = f(0) / f(1); })
      .Case([&](arith::RemFOp) { r.f = std::fmod(f(0), f(1)); })
      .Case([&](arith::NegFOp) { r.f = -f(0); })
      .Case([&](arith::MaximumFOp) {
        r.f = propagatingNaN(f(0), f(1), std::max(f(0), f(1)));
      })
      .Case([&](arith::MinimumFOp) {
        r.f = propagatingNaN(f(0), f(1), std::min(f(0), f(1)));
      })
      .Case([&](arith::MaxNumFOp) { r.f = std::fmax(f(0), f(1)); })
      .Case([&](arith::MinNumFOp) { r.f = std::fmin(f(0), f(1)); })
      // Integers.
      .Case([&](arith::AddIOp) { r.i = i(0) + i(1); })
      .Case([&](arith::SubIOp) { r.i = i(0) - i(1); })
      .Case([&](arith::MulIOp) { r.i = i(0) * i(1); })
      .Case([&](arith::DivSIOp) { divide([&] { return i(0).sdiv(i(1)); }); })
      .Case([&](arith::DivUIOp) { divide([&] { return i(0).udiv(i(1)); }); })
      .Case([&](arith::RemSIOp) { divide([&] { return i(0).srem(i(1)); }); })
      .Case([&](arith::RemUIOp) { divide([&] { return i(0).urem(i(1)); }); })
      .Case([&](arith::CeilDivSIOp) {
        divide([&] { return llvm::APIntOps::RoundingSDiv(i(0), i(1), up); });
      })
      .Case([&](arith::CeilDivUIOp) {
        divide([&] { return llvm::APIntOps::RoundingUDiv(i(0), i(1), up); });
      })
      .Case([&](arith::FloorDivSIOp) {
        divide([&] { return llvm::APIntOps::RoundingSDiv(i(0), i(1), down); });
      })
      .Case([&](arith::MinSIOp) { r.i = llvm::APIntOps::smin(i(0), i(1)); })
      .Case([&](arith::MaxSIOp) { r.i = llvm::APIntOps::smax(i(0), i(1)); })
      .Case([&](arith::MinUIOp) { r.i = llvm::APIntOps::umin(i(0), i(1)); })
      .Case([&](arith::MaxUIOp) { r.i = llvm::APIntOps::umax(i(0), i(1)); })
      .Case([&](arith::AndIOp) { r.i = i(0) & i(1); })
      .Case([&](arith::OrIOp) { r.i = i(0) | i(1); })
      .Case([&](arith::XOrIOp) { r.i = i(0) ^ i(1); })
      .Case([&](arith::ShLIOp) {
        shift([&](uint64_t n) { return i(0).shl(n); });
      })
      .Case([&](arith::ShRSIOp) {
        shift([&](uint64_t n) { return i(0).ashr(n); });
      })
      .Case([&](arith::ShRUIOp) {
        shift([&](uint64_t n) { return i(0).lshr(n); });
      })
      .Case([&](math::AbsIOp) { r.i = i(0).abs(); })
      // Comparisons and choice.
      .Case([&](arith::CmpFOp cmp) {
        boolean(arith::applyCmpPredicate(
            cmp.getPredicate(), llvm::APFloat(f(0)), llvm::APFloat(f(1))));
      })
      .Case([&](arith::CmpIOp cmp) {
        boolean(arith::applyCmpPredicate(cmp.getPredicate(), i(0), i(1)));
      })
      .Case([&](arith::SelectOp) {
        r = env[op.getOperand(i(0).getBoolValue() ? 1 : 2)];
      })
      // Casts.
      .Case<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(
          [&](Operation *) { r.i = i(0).sextOrTrunc(widthOf(resultType)); })
      .Case<arith::IndexCastUIOp, arith::ExtUIOp>(
          [&](Operation *) { r.i = i(0).zextOrTrunc(widthOf(resultType)); })
      .Case([&](arith::SIToFPOp) { r.f = double(i(0).getSExtValue()); })
      .Case([&](arith::UIToFPOp) { r.f = i(0).roundToDouble(false); })
      .Case([&](arith::FPToSIOp) { ok = convert(/*isUnsigned=*/false); })
      .Case([&](arith::FPToUIOp) { ok = convert(/*isUnsigned=*/true); })
      // Math functions.
      .Case([&](math::AbsFOp) { r.f = std::fabs(f(0)); })
      .Case([&](math::AcosOp) { r.f = std::acos(f(0)); })
      .Case([&](math::AcoshOp) { r.f = std::acosh(f(0)); })
      .Case([&](math::AsinOp) { r.f = std::asin(f(0)); })
      .Case([&](math::AsinhOp) { r.f = std::asinh(f(0)); })
      .Case([&](math::AtanOp) { r.f = std::atan(f(0)); })
      .Case([&](math::Atan2Op) { r.f = std::atan2(f(0), f(1)); })
      .Case([&](math::AtanhOp) { r.f = std::atanh(f(0)); })
      .Case([&](math::CbrtOp) { r.f = std::cbrt(f(0)); })
      .Case([&](math::CeilOp) { r.f = std::ceil(f(0)); })
      .Case([&](math::CopySignOp) { r.f = std::copysign(f(0), f(1)); })
      .Case([&](math::CosOp) { r.f = std::cos(f(0)); })
      .Case([&](math::CoshOp) { r.f = std::cosh(f(0)); })
      .Case([&](math::ErfOp) { r.f = std::erf(f(0)); })
      .Case([&](math::ErfcOp) { r.f = std::erfc(f(0)); })
      .Case([&](math::ExpOp) { r.f = std::exp(f(0)); })
      .Case([&](math::Exp2Op) { r.f = std::exp2(f(0)); })
      .Case([&](math::ExpM1Op) { r.f = std::expm1(f(0)); })
      .Case([&](math::FloorOp) { r.f = std::floor(f(0)); })
      .Case([&](math::FmaOp) { r.f = std::fma(f(0), f(1), f(2)); })
      .Case([&](math::LogOp) { r.f = std::log(f(0)); })
      .Case([&](math::Log10Op) { r.f = std::log10(f(0)); })
      .Case([&](math::Log1pOp) { r.f = std::log1p(f(0)); })
      .Case([&](math::Log2Op) { r.f = std::log2(f(0)); })
      .Case([&](math::PowFOp) { r.f = std::pow(f(0), f(1)); })
      .Case([&](math::RoundOp) { r.f = std::round(f(0)); })
      .Case([&](math::RoundEvenOp) { r.f = std::nearbyint(f(0)); })
      .Case([&](math::RsqrtOp) { r.f = 1.0 / std::sqrt(f(0)); })
      .Case([&](math::SinOp) { r.f = std::sin(f(0)); })
      .Case([&](math::SinhOp) { r.f = std::sinh(f(0)); })
      .Case([&](math::SqrtOp) { r.f = std::sqrt(f(0)); })
      .Case([&](math::TanOp) { r.f = std::tan(f(0)); })
      .Case([&](math::TanhOp) { r.f = std::tanh(f(0)); })
      .Case([&](math::TruncOp) { r.f = std::trunc(f(0)); })
      .Default([&](Operation *) { known = false; });
  if (!known)
    error =
        "the reference cannot evaluate " + op.getName().getStringRef().str();
  return known && ok;
}

} // namespace

std::optional<double>
evaluateRegion(Region &region, const std::vector<double> &scalars,
               const std::vector<const HostBuffer *> &captures,
               std::string &error) {
  Block &block = region.front();
  llvm::DenseMap<Value, Scalar> env;
  unsigned fixed = block.getNumArguments() - captures.size();
  for (unsigned n = 0; n < fixed; ++n)
    env[block.getArgument(n)] =
        fromDouble(block.getArgument(n).getType(), scalars[n]);
  for (Operation &op : block) {
    if (auto yield = dyn_cast<attn::YieldOp>(op)) {
      const Scalar &value = env[yield->getOperand(0)];
      return yield->getOperand(0).getType().isF32()
                 ? value.f
                 : double(value.i.getBoolValue());
    }
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto arg = cast<BlockArgument>(load.getMemRef());
      unsigned capture = arg.getArgNumber() - fixed;
      const HostBuffer *buffer = captures[capture];
      int64_t offset = 0;
      for (auto [d, index] : llvm::enumerate(load.getIndices())) {
        int64_t at = env[index].i.getSExtValue();
        if (at < 0 || at >= buffer->sizes[d]) {
          error = "a region reads capture " + std::to_string(capture) + " at " +
                  std::to_string(at) + " in dimension " + std::to_string(d) +
                  " of size " + std::to_string(buffer->sizes[d]);
          return std::nullopt;
        }
        offset = offset * buffer->sizes[d] + at;
      }
      env[load.getResult()] = fromDouble(load.getType(), buffer->data[offset]);
      continue;
    }
    Scalar result;
    if (!evaluate(op, env, result, error))
      return std::nullopt;
    env[op.getResult(0)] = result;
  }
  error = "region without attn.yield";
  return std::nullopt;
}

} // namespace attnc
