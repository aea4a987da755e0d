//===- AttnOps.cpp - operations of the attn dialect -----------------------===//

#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/Dialect/Attn/RegionOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

/// `[score_mod {...}] [mask_mod {...}]`. The regions are isolated from
/// above, so their arguments may reuse the function's value names (a
/// region's `%q` is its query index, not the function's queries).
static ParseResult parseModifierRegions(OpAsmParser &parser, Region &scoreMod,
                                        Region &maskMod) {
  for (auto [keyword, region] :
       {std::pair<StringRef, Region *>{"score_mod", &scoreMod},
        {"mask_mod", &maskMod}})
    if (succeeded(parser.parseOptionalKeyword(keyword)) &&
        parser.parseRegion(*region, /*arguments=*/{},
                           /*enableNameShadowing=*/true))
      return failure();
  return success();
}

static void printModifierRegions(OpAsmPrinter &printer, Operation *,
                                 Region &scoreMod, Region &maskMod) {
  // The generated printer has written the space before the first.
  bool first = true;
  for (auto [keyword, region] :
       {std::pair<StringRef, Region *>{"score_mod", &scoreMod},
        {"mask_mod", &maskMod}}) {
    if (region->empty())
      continue;
    printer << (first ? "" : " ") << keyword << " ";
    printer.printRegion(*region);
    first = false;
  }
}

#define GET_OP_CLASSES
#include "attnc/Dialect/Attn/AttnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

int64_t AttentionOp::getNumKVHeads() {
  if (auto kv = dyn_cast<KVType>(getKey().getType()))
    return kv.getNumHeads();
  return 1;
}

int64_t AttentionOp::getGroupSize() {
  return getQuery().getType().getNumHeads() / getNumKVHeads();
}

double AttentionOp::getDefaultScale() {
  return 1.0 / std::sqrt(static_cast<double>(getQKHeadDim()));
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return getDefaultScale();
}

int64_t AttentionOp::getStaticKVLen() {
  if (auto kv = dyn_cast<KVType>(getKey().getType()))
    return kv.getSeqLen();
  return cast<LatentKVType>(getKey().getType()).getSeqLen();
}

Type AttentionOp::getKVElementType() {
  if (auto kv = dyn_cast<KVType>(getKey().getType()))
    return kv.getElementType();
  return cast<LatentKVType>(getKey().getType()).getElementType();
}

void AttentionOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getOutput(), "out");
  if (getLse())
    setNameFn(getLse(), "lse");
}

namespace {

namespace limits = attnc::limits;

/// Refuses attributes an attn op does not declare: a misspelled `casual`
/// must not compile as a non-causal variant. The pipeline's own `attn_gpu.*`
/// annotations are verified by the attn_gpu dialect.
LogicalResult verifyKnownAttributes(Operation *op,
                                    ArrayRef<StringRef> declared) {
  for (NamedAttribute attr : op->getDiscardableAttrs()) {
    StringRef name = attr.getName().getValue();
    if (name.starts_with("attn_gpu."))
      continue;
    InFlightDiagnostic diag = op->emitOpError("has no attribute '")
                              << name << "'";
    StringRef closest;
    unsigned best = 3; // suggest only near misses
    for (StringRef candidate : declared) {
      unsigned distance = name.edit_distance(candidate);
      if (distance < best) {
        best = distance;
        closest = candidate;
      }
    }
    if (!closest.empty())
      diag << "; did you mean '" << closest << "'?";
    else if (declared.empty())
      diag << "; it takes none";
    else
      diag << "; it takes " << llvm::join(declared, ", ");
    return diag;
  }
  return success();
}

/// The declared attributes of `Op`, without the internal segment sizes.
template <typename Op> SmallVector<StringRef> declaredAttributes() {
  SmallVector<StringRef> names;
  for (StringRef name : Op::getAttributeNames())
    if (name != "operandSegmentSizes" && name != "resultSegmentSizes")
      names.push_back(name);
  return names;
}

/// Queries and keys meet in one matrix product: they share an element type,
/// except that an fp8 cache is dequantized on load.
LogicalResult verifyElementTypes(AttentionOp op, Type queryType, Type keyType) {
  if (keyType != queryType && !isFp8(keyType))
    return op.emitOpError("key element type (")
           << keyType << ") must match the query element type (" << queryType
           << ") unless keys are fp8";
  return success();
}

LogicalResult verifyLatentOperands(AttentionOp op, LatentKVType latent) {
  QueryType query = op.getQuery().getType();
  if (op.getValue())
    return op.emitOpError("takes no value operand with a !attn.latent_kv key: "
                          "the value is the latent part of the same cache");
  if (query.getHeadDim() != latent.getHeadDim())
    return op.emitOpError("query head dim (")
           << query.getHeadDim() << ") must equal the latent cache's dim ("
           << latent.getHeadDim()
           << "): absorb the key up-projection into the queries";
  if (op.getVHeadDim() != latent.getLatentDim())
    return op.emitOpError("output head dim (")
           << op.getVHeadDim() << ") must equal the latent dim ("
           << latent.getLatentDim() << ")";
  return verifyElementTypes(op, query.getElementType(),
                            latent.getElementType());
}

LogicalResult verifyKVOperands(AttentionOp op, KVType key) {
  QueryType query = op.getQuery().getType();
  if (!op.getValue())
    return op.emitOpError("needs a value operand unless the key is a "
                          "!attn.latent_kv cache");
  auto value = cast<KVType>(op.getValue().getType());
  if (key.getNumHeads() != value.getNumHeads())
    return op.emitOpError("key heads (")
           << key.getNumHeads() << ") and value heads (" << value.getNumHeads()
           << ") must match";
  if (key.getSeqLen() != value.getSeqLen() ||
      key.getLayout() != value.getLayout() ||
      key.getPageSize() != value.getPageSize() ||
      key.getPageOrder() != value.getPageOrder())
    return op.emitOpError("keys and values must have the same sequence length "
                          "and layout");
  if (key.getElementType() != value.getElementType())
    return op.emitOpError("keys and values must share an element type");
  if (query.getNumHeads() % key.getNumHeads() != 0)
    return op.emitOpError("query heads (")
           << query.getNumHeads() << ") must be a multiple of key/value heads ("
           << key.getNumHeads() << ")";
  if (query.getHeadDim() != key.getHeadDim())
    return op.emitOpError("query head dim (")
           << query.getHeadDim() << ") must equal the key head dim ("
           << key.getHeadDim() << ")";
  if (op.getVHeadDim() != value.getHeadDim())
    return op.emitOpError("output head dim (")
           << op.getVHeadDim() << ") must equal the value head dim ("
           << value.getHeadDim() << ")";
  return verifyElementTypes(op, query.getElementType(), key.getElementType());
}

/// Segment ids are indexed like the tokens they label: `[total]` for a ragged
/// batch, `[batch, seq]` otherwise (a paged cache by logical position).
LogicalResult verifySegments(AttentionOp op, Value segments, StringRef role,
                             TokenLayout layout) {
  auto type = cast<MemRefType>(segments.getType());
  int64_t rank = layout == TokenLayout::Ragged ? 1 : 2;
  if (!type.getElementType().isInteger(32) || type.getRank() != rank)
    return op.emitOpError()
           << role << " segment ids of a " << attnc::keyword(layout)
           << " batch must be a rank-" << rank << " memref of i32, got "
           << type;
  return success();
}

/// A dequantization scale: one f32 per tensor or one per KV head.
LogicalResult verifyScale(AttentionOp op, Value scale, StringRef role) {
  int64_t heads = op.getNumKVHeads();
  if (!isKVScaleType(scale.getType(), heads))
    return op.emitOpError()
           << role << " scale must be memref<1xf32> (per tensor) or memref<"
           << heads << "xf32> (per KV head), got " << scale.getType();
  return success();
}

bool isCapturableElementType(Type type) {
  return type.isInteger(32) || type.isInteger(64) || type.isF32();
}

} // namespace

LogicalResult AttentionOp::verify() {
  if (failed(verifyKnownAttributes(*this, declaredAttributes<AttentionOp>())))
    return failure();
  QueryType query = getQuery().getType();
  OutputType output = getOutput().getType();

  if (auto latent = dyn_cast<LatentKVType>(getKey().getType())) {
    if (failed(verifyLatentOperands(*this, latent)))
      return failure();
  } else if (failed(
                 verifyKVOperands(*this, cast<KVType>(getKey().getType())))) {
    return failure();
  }

  if (output.getNumHeads() != query.getNumHeads())
    return emitOpError("output heads (")
           << output.getNumHeads() << ") must equal query heads ("
           << query.getNumHeads() << ")";
  if (output.getSeqLen() != query.getSeqLen() ||
      output.getLayout() != query.getLayout())
    return emitOpError("output must have the queries' sequence length and "
                       "layout");
  if (Value lse = getLse()) {
    auto lseType = cast<LseType>(lse.getType());
    if (lseType.getSeqLen() != query.getSeqLen() ||
        lseType.getNumHeads() != query.getNumHeads() ||
        lseType.getLayout() != query.getLayout())
      return emitOpError("log-sum-exp must have one entry per query and head, "
                         "laid out like the queries");
  }

  if (std::optional<WindowAttr> window = getWindow())
    if (getCausal() && window->getRight() != 0)
      return emitOpError("a causal window must have right extent 0, got ")
             << window->getRight();
  if (std::optional<int64_t> splits = getKvSplits()) {
    if (*splits < 2 || *splits > limits::kMaxKVSplits)
      return emitOpError("kv_splits must be in [2, ")
             << limits::kMaxKVSplits << "], got " << *splits;
    if (!getLse() || !output.getElementType().isF32())
      return emitOpError("with kv_splits produces f32 partial states and "
                         "their log-sum-exps");
  }
  if (std::optional<int64_t> sinks = getSinks();
      sinks && (*sinks < 0 || *sinks > limits::kMaxSeqLen))
    return emitOpError("sinks must be in [0, ")
           << limits::kMaxSeqLen << "], got " << *sinks;
  if (std::optional<APFloat> scale = getScale()) {
    double value = scale->convertToDouble();
    if (!std::isfinite(value) || value <= 0)
      return emitOpError("scale must be positive and finite, got ") << value;
  }
  if (std::optional<APFloat> softcap = getSoftcap()) {
    double value = softcap->convertToDouble();
    if (!std::isfinite(value) || value <= 0)
      return emitOpError("softcap must be positive and finite, got ") << value;
  }

  if (static_cast<bool>(getQuerySegments()) !=
      static_cast<bool>(getKeySegments()))
    return emitOpError("query and key segment ids must be given together");
  if (getQuerySegments()) {
    auto keyLayout = isLatent()
                         ? cast<LatentKVType>(getKey().getType()).getLayout()
                         : cast<KVType>(getKey().getType()).getLayout();
    if (failed(verifySegments(*this, getQuerySegments(), "query",
                              query.getLayout())) ||
        failed(verifySegments(*this, getKeySegments(), "key", keyLayout)))
      return failure();
  }
  if (static_cast<bool>(getKeyScale()) != static_cast<bool>(getValueScale()))
    return emitOpError("key and value scales must be given together");
  if (getKeyScale()) {
    if (!isFp8(getKVElementType()))
      return emitOpError("kv_scales dequantize an fp8 key/value cache; the "
                         "cache holds ")
             << getKVElementType();
    if (failed(verifyScale(*this, getKeyScale(), "key")) ||
        failed(verifyScale(*this, getValueScale(), "value")))
      return failure();
  }
  if (getSharedKeys()) {
    // Each names what would need a query's own position or request.
    const char *positional = getCausal()          ? "causal"
                             : getWindow()        ? "a window"
                             : getSinks()         ? "sinks"
                             : getAlibi()         ? "ALiBi"
                             : getQuerySegments() ? "segments"
                                                  : nullptr;
    if (positional)
      return emitOpError("with shared_keys cannot take ")
             << positional
             << ": a shared node's queries are many requests' rows, whose "
                "positions it does not know";
  }
  if (getCaptures().size() > size_t(limits::kMaxCaptures))
    return emitOpError("captures at most ")
           << limits::kMaxCaptures << " buffers, got " << getCaptures().size();
  for (Value capture : getCaptures()) {
    auto type = cast<MemRefType>(capture.getType());
    if (type.getRank() < 1 || type.getRank() > limits::kMaxCaptureRank ||
        !isCapturableElementType(type.getElementType()) ||
        !type.getLayout().isIdentity())
      return emitOpError("captured buffers must be memrefs of rank 1 to ")
             << limits::kMaxCaptureRank
             << " with an identity layout and i32, i64 or f32 elements, got "
             << type;
  }
  return success();
}

namespace {

/// `f32, index` rather than the diagnostic's quoted `'f32', 'index'`.
std::string formatTypes(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(types, os);
  return text;
}

/// Checks one modifier region: its block arguments (index arguments, then
/// the captures), the ops it may hold, and what it yields.
LogicalResult verifyModifierRegion(AttentionOp op, Region &region,
                                   StringRef name, ArrayRef<Type> leading,
                                   Type yielded) {
  if (region.empty())
    return success();
  Block &block = region.front();

  SmallVector<Type> expected(leading);
  llvm::append_range(expected, op.getCaptures().getTypes());
  if (block.getArgumentTypes() != TypeRange(expected))
    return op.emitOpError()
           << "'" << name << "' block arguments must be ("
           << formatTypes(expected) << "), the captures' types last, got ("
           << formatTypes(block.getArgumentTypes()) << ")";

  // Pre-order, so an op holding a region is named before what it holds.
  WalkResult walk = region.walk<WalkOrder::PreOrder>([&](Operation *nested) {
    return failed(verifyRegionOp(nested, name)) ? WalkResult::interrupt()
                                                : WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return op.emitOpError("'") << name << "' must end with attn.yield";
  if (yield.getValues().getTypes() != TypeRange(yielded))
    return yield.emitOpError("in '")
           << name << "' must yield exactly one " << yielded;
  return success();
}

/// Under shared_keys a request is a node shared by many requests: its
/// index, its queries' indices and its lengths are not any one request's.
/// The region's own index arguments other than the head must go unused.
LogicalResult verifySharedKeysRegion(AttentionOp op, Region &region,
                                     StringRef name, unsigned firstIndexArg) {
  if (region.empty())
    return success();
  static constexpr const char *kIndexNames[] = {"batch", "head",  "qi",
                                                "kvi",   "q_len", "kv_len"};
  Block &block = region.front();
  for (unsigned i = 0; i < AttentionOp::kMaskModIndexArgs; ++i) {
    if (StringRef(kIndexNames[i]) == "head")
      continue;
    if (!block.getArgument(firstIndexArg + i).use_empty())
      return op.emitOpError("with shared_keys, '")
             << name << "' may not read its " << kIndexNames[i]
             << " argument: a shared node's rows belong to many requests";
  }
  return success();
}

} // namespace

LogicalResult AttentionOp::verifyRegions() {
  Builder b(getContext());
  Type index = b.getIndexType();
  SmallVector<Type> indices(kMaskModIndexArgs, index);
  SmallVector<Type> scoreArgs{b.getF32Type()};
  llvm::append_range(scoreArgs, indices);
  if (failed(verifyModifierRegion(*this, getScoreMod(), "score_mod", scoreArgs,
                                  b.getF32Type())) ||
      failed(verifyModifierRegion(*this, getMaskMod(), "mask_mod", indices,
                                  b.getI1Type())))
    return failure();
  if (!getSharedKeys())
    return success();
  return success(
      succeeded(verifySharedKeysRegion(*this, getScoreMod(), "score_mod", 1)) &&
      succeeded(verifySharedKeysRegion(*this, getMaskMod(), "mask_mod", 0)));
}

//===----------------------------------------------------------------------===//
// MergeStatesOp
//===----------------------------------------------------------------------===//

// attn.merge_states (%o0, %l0), (%o1, %l1) attr-dict
//     : !attn.out<...>, !attn.lse<...> -> !attn.out<...>
ParseResult MergeStatesOp::parse(OpAsmParser &parser, OperationState &result) {
  SmallVector<OpAsmParser::UnresolvedOperand> outputs, lses;
  auto parseState = [&]() -> ParseResult {
    if (parser.parseLParen() || parser.parseOperand(outputs.emplace_back()) ||
        parser.parseComma() || parser.parseOperand(lses.emplace_back()) ||
        parser.parseRParen())
      return failure();
    return success();
  };
  OutputType stateType, mergedType;
  LseType lseType;
  if (parser.parseCommaSeparatedList(parseState) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(stateType) || parser.parseComma() ||
      parser.parseType(lseType) || parser.parseArrow() ||
      parser.parseType(mergedType))
    return failure();
  if (parser.resolveOperands(outputs, stateType, result.operands) ||
      parser.resolveOperands(lses, lseType, result.operands))
    return failure();
  result.addTypes({mergedType, lseType});
  return success();
}

void MergeStatesOp::print(OpAsmPrinter &printer) {
  printer << " ";
  llvm::interleaveComma(llvm::zip(getOutputs(), getLses()), printer,
                        [&](auto state) {
                          printer << "(" << std::get<0>(state) << ", "
                                  << std::get<1>(state) << ")";
                        });
  printer.printOptionalAttrDict((*this)->getAttrs());
  printer << " : " << getOutputs().front().getType() << ", "
          << getLses().front().getType() << " -> " << getOutput().getType();
}

void MergeStatesOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getOutput(), "out");
  setNameFn(getLse(), "lse");
}

LogicalResult MergeStatesOp::verify() {
  if (failed(verifyKnownAttributes(*this, declaredAttributes<MergeStatesOp>())))
    return failure();
  if (std::optional<int64_t> splits = getKvSplits()) {
    if (*splits < 2 || *splits > limits::kMaxKVSplits)
      return emitOpError("kv_splits must be in [2, ")
             << limits::kMaxKVSplits << "], got " << *splits;
    if (getOutputs().size() != 1)
      return emitOpError("merges the splits of one state, got ")
             << getOutputs().size() << " states";
  } else if (getOutputs().size() < 2 ||
             getOutputs().size() > size_t(limits::kMaxMergeStates)) {
    return emitOpError("merges 2 to ")
           << limits::kMaxMergeStates << " states, got " << getOutputs().size();
  }
  Type stateType = getOutputs().front().getType();
  Type lseType = getLses().front().getType();
  if (!llvm::all_equal(getOutputs().getTypes()))
    return emitOpError("all partial outputs must have the same type");
  if (!llvm::all_equal(getLses().getTypes()))
    return emitOpError("all partial log-sum-exps must have the same type");
  auto state = cast<OutputType>(stateType);
  auto lse = cast<LseType>(lseType);
  if (lse.getSeqLen() != state.getSeqLen() ||
      lse.getNumHeads() != state.getNumHeads() ||
      lse.getLayout() != state.getLayout())
    return emitOpError("each log-sum-exp must have one entry per query and "
                       "head of its output");
  OutputType merged = getOutput().getType();
  if (merged.getSeqLen() != state.getSeqLen() ||
      merged.getNumHeads() != state.getNumHeads() ||
      merged.getHeadDim() != state.getHeadDim() ||
      merged.getLayout() != state.getLayout())
    return emitOpError("merged output must have the partial outputs' shape "
                       "and layout; only its element type may differ");
  if (getLse().getType() != lseType)
    return emitOpError("merged log-sum-exp must have the partial ones' type");
  return success();
}

//===----------------------------------------------------------------------===//
// RepeatKVOp
//===----------------------------------------------------------------------===//

LogicalResult RepeatKVOp::verify() {
  if (failed(verifyKnownAttributes(*this, declaredAttributes<RepeatKVOp>())))
    return failure();
  int64_t group = getGroup();
  if (group < 1 || group > limits::kMaxHeads)
    return emitOpError("group must be in [1, ")
           << limits::kMaxHeads << "], got " << group;
  KVType source = getSource().getType();
  KVType result = getResult().getType();
  if (result.getNumHeads() != source.getNumHeads() * group)
    return emitOpError("result heads (")
           << result.getNumHeads() << ") must be the source heads ("
           << source.getNumHeads() << ") times the group (" << group << ")";
  if (result.getSeqLen() != source.getSeqLen() ||
      result.getHeadDim() != source.getHeadDim() ||
      result.getElementType() != source.getElementType() ||
      result.getLayout() != source.getLayout() ||
      result.getPageSize() != source.getPageSize() ||
      result.getPageOrder() != source.getPageOrder())
    return emitOpError("result must keep the source's sequence length, head "
                       "dim, element type and layout");
  return success();
}

OpFoldResult RepeatKVOp::fold(FoldAdaptor) {
  if (getGroup() == 1)
    return getSource();
  return {};
}

//===----------------------------------------------------------------------===//
// YieldOp
//===----------------------------------------------------------------------===//

LogicalResult YieldOp::verify() { return verifyKnownAttributes(*this, {}); }
