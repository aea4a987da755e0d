//===- RegionInterpreter.cpp - score_mod / mask_mod in double -------------===//
//
// Integers (index, iN) are held as int64 and floats as double; the unsigned
// operations reinterpret the int64 as uint64, as index arithmetic in C++
// (size_t) does.
//
//===----------------------------------------------------------------------===//

#include "RegionInterpreter.h"

#include "attnc/Dialect/Attn/AttnDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace attnc {

std::optional<double>
evaluateRegion(Region &region, const std::vector<double> &scalars,
               const std::vector<const HostBuffer *> &captures,
               std::string &error) {
  Block &block = region.front();
  llvm::DenseMap<Value, double> env;
  unsigned fixed = block.getNumArguments() - captures.size();
  for (unsigned i = 0; i < fixed; ++i)
    env[block.getArgument(i)] = scalars[i];
  auto u = [](double v) { return uint64_t(int64_t(v)); };
  for (Operation &op : block) {
    auto in = [&](unsigned i) { return env.lookup(op.getOperand(i)); };
    auto set = [&](double v) { env[op.getResult(0)] = v; };
    if (auto yield = dyn_cast<attn::YieldOp>(op))
      return env.lookup(yield->getOperand(0));
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      Attribute value = constant.getValue();
      if (auto f = dyn_cast<FloatAttr>(value))
        set(f.getValueAsDouble());
      else if (auto i = dyn_cast<IntegerAttr>(value))
        set(i.getType().isInteger(1) ? double(i.getValue().getBoolValue())
                                     : double(i.getValue().getSExtValue()));
      continue;
    }
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto arg = cast<BlockArgument>(load.getMemRef());
      const HostBuffer *buffer = captures[arg.getArgNumber() - fixed];
      int64_t offset = 0;
      for (auto [d, index] : llvm::enumerate(load.getIndices()))
        offset = offset * buffer->sizes[d] + int64_t(env.lookup(index));
      set(buffer->data.at(offset));
      continue;
    }
    double r = 0;
    bool known = true;
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](arith::AddFOp) { r = in(0) + in(1); })
        .Case([&](arith::SubFOp) { r = in(0) - in(1); })
        .Case([&](arith::MulFOp) { r = in(0) * in(1); })
        .Case([&](arith::DivFOp) { r = in(0) / in(1); })
        .Case([&](arith::NegFOp) { r = -in(0); })
        .Case([&](arith::MaximumFOp) { r = std::max(in(0), in(1)); })
        .Case([&](arith::MinimumFOp) { r = std::min(in(0), in(1)); })
        .Case([&](arith::MaxNumFOp) { r = std::max(in(0), in(1)); })
        .Case([&](arith::MinNumFOp) { r = std::min(in(0), in(1)); })
        .Case(
            [&](arith::AddIOp) { r = double(int64_t(in(0)) + int64_t(in(1))); })
        .Case(
            [&](arith::SubIOp) { r = double(int64_t(in(0)) - int64_t(in(1))); })
        .Case(
            [&](arith::MulIOp) { r = double(int64_t(in(0)) * int64_t(in(1))); })
        .Case([&](arith::DivSIOp) {
          r = double(int64_t(in(0)) / int64_t(in(1)));
        })
        .Case([&](arith::DivUIOp) { r = double(int64_t(u(in(0)) / u(in(1)))); })
        .Case([&](arith::RemSIOp) {
          r = double(int64_t(in(0)) % int64_t(in(1)));
        })
        .Case([&](arith::RemUIOp) { r = double(int64_t(u(in(0)) % u(in(1)))); })
        .Case([&](arith::MinSIOp) { r = std::min(in(0), in(1)); })
        .Case([&](arith::MaxSIOp) { r = std::max(in(0), in(1)); })
        .Case([&](arith::MinUIOp) { r = u(in(0)) < u(in(1)) ? in(0) : in(1); })
        .Case([&](arith::MaxUIOp) { r = u(in(0)) > u(in(1)) ? in(0) : in(1); })
        .Case(
            [&](arith::AndIOp) { r = double(int64_t(in(0)) & int64_t(in(1))); })
        .Case(
            [&](arith::OrIOp) { r = double(int64_t(in(0)) | int64_t(in(1))); })
        .Case(
            [&](arith::XOrIOp) { r = double(int64_t(in(0)) ^ int64_t(in(1))); })
        .Case([&](arith::SelectOp) { r = in(0) != 0 ? in(1) : in(2); })
        .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
              arith::ExtUIOp, arith::TruncIOp, arith::ExtFOp, arith::TruncFOp,
              arith::SIToFPOp, arith::UIToFPOp>([&](Operation *) { r = in(0); })
        .Case<arith::FPToSIOp, arith::FPToUIOp>(
            [&](Operation *) { r = std::trunc(in(0)); })
        .Case([&](arith::CmpFOp cmp) {
          double a = in(0), b = in(1);
          switch (cmp.getPredicate()) {
          case arith::CmpFPredicate::OEQ:
          case arith::CmpFPredicate::UEQ:
            r = a == b;
            break;
          case arith::CmpFPredicate::ONE:
          case arith::CmpFPredicate::UNE:
            r = a != b;
            break;
          case arith::CmpFPredicate::OLT:
          case arith::CmpFPredicate::ULT:
            r = a < b;
            break;
          case arith::CmpFPredicate::OLE:
          case arith::CmpFPredicate::ULE:
            r = a <= b;
            break;
          case arith::CmpFPredicate::OGT:
          case arith::CmpFPredicate::UGT:
            r = a > b;
            break;
          case arith::CmpFPredicate::OGE:
          case arith::CmpFPredicate::UGE:
            r = a >= b;
            break;
          case arith::CmpFPredicate::AlwaysTrue:
            r = 1;
            break;
          default:
            r = 0;
            break;
          }
        })
        .Case([&](arith::CmpIOp cmp) {
          int64_t a = int64_t(in(0)), b = int64_t(in(1));
          uint64_t ua = uint64_t(a), ub = uint64_t(b);
          switch (cmp.getPredicate()) {
          case arith::CmpIPredicate::eq:
            r = a == b;
            break;
          case arith::CmpIPredicate::ne:
            r = a != b;
            break;
          case arith::CmpIPredicate::slt:
            r = a < b;
            break;
          case arith::CmpIPredicate::sle:
            r = a <= b;
            break;
          case arith::CmpIPredicate::sgt:
            r = a > b;
            break;
          case arith::CmpIPredicate::sge:
            r = a >= b;
            break;
          case arith::CmpIPredicate::ult:
            r = ua < ub;
            break;
          case arith::CmpIPredicate::ule:
            r = ua <= ub;
            break;
          case arith::CmpIPredicate::ugt:
            r = ua > ub;
            break;
          case arith::CmpIPredicate::uge:
            r = ua >= ub;
            break;
          }
        })
        .Case([&](math::TanhOp) { r = std::tanh(in(0)); })
        .Case([&](math::ExpOp) { r = std::exp(in(0)); })
        .Case([&](math::Exp2Op) { r = std::exp2(in(0)); })
        .Case([&](math::LogOp) { r = std::log(in(0)); })
        .Case([&](math::Log2Op) { r = std::log2(in(0)); })
        .Case([&](math::SqrtOp) { r = std::sqrt(in(0)); })
        .Case([&](math::AbsFOp) { r = std::fabs(in(0)); })
        .Case([&](math::PowFOp) { r = std::pow(in(0), in(1)); })
        .Case([&](math::AbsIOp) { r = std::fabs(in(0)); })
        .Default([&](Operation *) { known = false; });
    if (!known) {
      error =
          "the reference cannot evaluate " + op.getName().getStringRef().str();
      return std::nullopt;
    }
    set(r);
  }
  error = "region without attn.yield";
  return std::nullopt;
}

} // namespace attnc
