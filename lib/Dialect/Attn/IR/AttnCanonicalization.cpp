//===- AttnCanonicalization.cpp - the normal form of attn variants --------===//
//
// Equivalent spellings of one variant are rewritten into one, so that mask
// analysis and planning need to recognize each variant only once. The
// attn-canonicalize pass documents the normal form.
//
//===----------------------------------------------------------------------===//

#include "attnc/Dialect/Attn/AttnDialect.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

std::optional<double> getConstantFloat(Value value) {
  FloatAttr attr;
  if (matchPattern(value, m_Constant(&attr)))
    return attr.getValueAsDouble();
  return std::nullopt;
}

/// Matches `mulf(x, c)` or `mulf(c, x)` with a constant `c`.
std::optional<double> matchMulByConstant(Value value, Value x) {
  auto mul = value.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  if (mul.getLhs() == x)
    return getConstantFloat(mul.getRhs());
  if (mul.getRhs() == x)
    return getConstantFloat(mul.getLhs());
  return std::nullopt;
}

bool sameAsFloat(double a, double b) {
  return static_cast<float>(a) == static_cast<float>(b);
}

/// Matches `c * tanh(s / c)` (or `s * (1/c)` inside the tanh) and returns c.
std::optional<double> matchSoftcap(Value value, Value score) {
  auto mul = value.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  for (auto [tanhSide, capSide] : {std::pair(mul.getLhs(), mul.getRhs()),
                                   std::pair(mul.getRhs(), mul.getLhs())}) {
    auto tanh = tanhSide.getDefiningOp<math::TanhOp>();
    std::optional<double> cap = getConstantFloat(capSide);
    if (!tanh || !cap || *cap <= 0)
      continue;
    Value inner = tanh.getOperand();
    if (auto div = inner.getDefiningOp<arith::DivFOp>();
        div && div.getLhs() == score) {
      std::optional<double> divisor = getConstantFloat(div.getRhs());
      if (divisor && sameAsFloat(*divisor, *cap))
        return cap;
    }
    if (std::optional<double> factor = matchMulByConstant(inner, score);
        factor && sameAsFloat(*factor, 1.0 / *cap))
      return cap;
  }
  return std::nullopt;
}

Value getYielded(Region &region) {
  return cast<YieldOp>(region.front().getTerminator()).getValues().front();
}

/// `attention(q, repeat_kv(k, g), repeat_kv(v, g))` reads the grouped heads
/// directly: query head h of the repeated form reads source head
/// h / (q_heads / kv_heads), exactly grouped-query attention.
struct ReadRepeatedKVGrouped : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getValue())
      return failure();
    auto key = op.getKey().getDefiningOp<RepeatKVOp>();
    auto value = op.getValue().getDefiningOp<RepeatKVOp>();
    if (!key || !value || key.getGroup() != value.getGroup())
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getKeyMutable().assign(key.getSource());
      op.getValueMutable().assign(value.getSource());
    });
    return success();
  }
};

/// One spelling per mask. With static lengths, a bound that admits every key
/// is dropped: the left bound when `left >= kv_len - 1`, the right bound when
/// `right >= q_len - 1` (so `causal` is a no-op for single-token decode).
/// A right bound of 0 is spelled `causal`; a window left with no bound of
/// its own is dropped, and with it the sinks it exempted.
struct NormalizeMasks : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<WindowAttr> window = op.getWindow();
    std::optional<int64_t> left, right; // std::nullopt: unbounded
    if (window) {
      left = window->getLeft();
      right = window->getRight();
    }
    if (op.getCausal())
      right = 0;
    int64_t kvLen = op.getStaticKVLen();
    int64_t qLen = op.getQuery().getType().getSeqLen();
    if (left && !ShapedType::isDynamic(kvLen) && *left >= kvLen - 1)
      left.reset();
    if (right && !ShapedType::isDynamic(qLen) && *right >= qLen - 1)
      right.reset();

    bool causal = right == 0;
    WindowAttr newWindow = window.value_or(nullptr);
    if (!left && (!right || *right == 0))
      newWindow = nullptr;
    std::optional<int64_t> sinks = op.getSinks();
    if (sinks && (*sinks == 0 || !newWindow || !left))
      sinks.reset();

    if (causal == op.getCausal() && newWindow == window.value_or(nullptr) &&
        sinks == op.getSinks())
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.setCausal(causal);
      if (newWindow)
        op.setWindowAttr(newWindow);
      else
        op.removeWindowAttr();
      if (!sinks)
        op.removeSinksAttr();
    });
    return success();
  }
};

/// Raises a `score_mod` that is a known modifier into the attribute the
/// kernels implement directly, and drops an identity `score_mod`.
struct RaiseScoreMod : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Region &region = op.getScoreMod();
    if (region.empty())
      return failure();
    Value score = region.front().getArgument(0);
    Value result = getYielded(region);
    if (result == score) {
      rewriter.eraseBlock(&region.front());
      return success();
    }
    // Soft-cap and ALiBi apply before score_mod: a score_mod can only move
    // ahead of them into an attribute when neither is present.
    if (op.getSoftcap() || op.getAlibi())
      return failure();
    Builder b(op.getContext());
    if (std::optional<double> cap = matchSoftcap(result, score)) {
      rewriter.modifyOpInPlace(
          op, [&] { op.setSoftcapAttr(b.getF32FloatAttr(*cap)); });
      rewriter.eraseBlock(&region.front());
      return success();
    }
    if (std::optional<double> factor = matchMulByConstant(result, score);
        factor && *factor > 0) {
      double scale = op.getEffectiveScale() * *factor;
      rewriter.modifyOpInPlace(
          op, [&] { op.setScaleAttr(b.getF32FloatAttr(scale)); });
      rewriter.eraseBlock(&region.front());
      return success();
    }
    return failure();
  }
};

/// A `mask_mod` that admits every key masks nothing.
struct DropTrueMaskMod : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Region &region = op.getMaskMod();
    if (region.empty() || !matchPattern(getYielded(region), m_One()))
      return failure();
    rewriter.eraseBlock(&region.front());
    return success();
  }
};

/// The default scale is implied.
struct DropDefaultScale : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<APFloat> scale = op.getScale();
    if (!scale || !sameAsFloat(scale->convertToDouble(), op.getDefaultScale()))
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.removeScaleAttr(); });
    return success();
  }
};

/// Captures that no region reads are not bound at launch.
struct DropUnusedCaptures : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Region &scoreMod = op.getScoreMod();
    Region &maskMod = op.getMaskMod();
    auto isUsed = [](Region &region, unsigned argument) {
      return !region.empty() && !region.getArgument(argument).use_empty();
    };
    SmallVector<unsigned> unused;
    for (unsigned i = 0, e = op.getCaptures().size(); i < e; ++i)
      if (!isUsed(scoreMod, AttentionOp::kScoreModIndexArgs + i) &&
          !isUsed(maskMod, AttentionOp::kMaskModIndexArgs + i))
        unused.push_back(i);
    if (unused.empty())
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      for (unsigned i : llvm::reverse(unused)) {
        if (!scoreMod.empty())
          scoreMod.eraseArgument(AttentionOp::kScoreModIndexArgs + i);
        if (!maskMod.empty())
          maskMod.eraseArgument(AttentionOp::kMaskModIndexArgs + i);
        op.getCapturesMutable().erase(i);
      }
    });
    return success();
  }
};

} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ReadRepeatedKVGrouped, NormalizeMasks, RaiseScoreMod,
              DropTrueMaskMod, DropDefaultScale, DropUnusedCaptures>(context);
}
