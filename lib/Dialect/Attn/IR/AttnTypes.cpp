//===- AttnTypes.cpp - operand descriptors of attn ops --------------------===//
//
// The head-tensor types (queries, keys/values, outputs) share one textual
// form, `<SEQ x HEADS x DIM x ELT [, LAYOUT]>`, and one set of checks; each
// type adds only which element types and layouts it accepts.
//
//===----------------------------------------------------------------------===//

#include "attnc/Dialect/Attn/AttnDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#define GET_TYPEDEF_CLASSES
#include "attnc/Dialect/Attn/AttnTypes.cpp.inc"

void AttnDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "attnc/Dialect/Attn/AttnTypes.cpp.inc"
      >();
}

namespace {

using EmitErrorFn = function_ref<InFlightDiagnostic()>;

struct LayoutSpec {
  TokenLayout layout = TokenLayout::Dense;
  int64_t pageSize = 0;
  PageOrder pageOrder = PageOrder::NHD;
};

/// Parses `dense`, `ragged` or `paged<PAGE, nhd|hnd>`.
ParseResult parseLayout(AsmParser &parser, LayoutSpec &spec) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  if (!attnc::parseKeyword(keyword.data(), keyword.size(), spec.layout))
    return parser.emitError(loc, "expected a layout: 'dense', 'ragged' or "
                                 "'paged<page_size, nhd|hnd>', got '")
           << keyword << "'";
  if (spec.layout != TokenLayout::Paged)
    return success();
  if (parser.parseLess() || parser.parseInteger(spec.pageSize) ||
      parser.parseComma())
    return failure();
  loc = parser.getCurrentLocation();
  StringRef order;
  if (parser.parseKeyword(&order))
    return failure();
  if (!attnc::parseKeyword(order.data(), order.size(), spec.pageOrder))
    return parser.emitError(loc, "expected a page order 'nhd' or 'hnd', got '")
           << order << "'";
  return parser.parseGreater();
}

/// Parses `[, LAYOUT] >`.
ParseResult parseOptionalLayoutAndClose(AsmParser &parser, LayoutSpec &spec) {
  if (succeeded(parser.parseOptionalComma()) && parseLayout(parser, spec))
    return failure();
  return parser.parseGreater();
}

void printLayout(AsmPrinter &printer, TokenLayout layout, int64_t pageSize,
                 PageOrder pageOrder) {
  if (layout == TokenLayout::Dense)
    return;
  printer << ", " << attnc::keyword(layout);
  if (layout == TokenLayout::Paged)
    printer << "<" << pageSize << ", " << attnc::keyword(pageOrder) << ">";
}

void printSeqLen(AsmPrinter &printer, int64_t seqLen) {
  if (ShapedType::isDynamic(seqLen))
    printer << "?";
  else
    printer << seqLen;
}

/// Parses `< SEQ x HEADS x DIM x ELT [, LAYOUT] >` into `dims` (three) and
/// `elementType`.
ParseResult parseHeadTensor(AsmParser &parser, SmallVectorImpl<int64_t> &dims,
                            Type &elementType, LayoutSpec &spec) {
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(dims, /*allowDynamic=*/true,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return failure();
  if (dims.size() != 3)
    return parser.emitError(loc, "expected SEQxHEADSxDIMxELEMENT, got ")
           << dims.size() << " dimensions";
  return parseOptionalLayoutAndClose(parser, spec);
}

template <typename T> Type parseHeadTensorType(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> dims;
  Type elementType;
  LayoutSpec spec;
  if (parseHeadTensor(parser, dims, elementType, spec))
    return {};
  return parser.getChecked<T>(loc, parser.getContext(), dims[0], dims[1],
                              dims[2], elementType, spec.layout, spec.pageSize,
                              spec.pageOrder);
}

template <typename T> void printHeadTensor(AsmPrinter &printer, T type) {
  printer << "<";
  printSeqLen(printer, type.getSeqLen());
  printer << "x" << type.getNumHeads() << "x" << type.getHeadDim() << "x"
          << type.getElementType();
  printLayout(printer, type.getLayout(), type.getPageSize(),
              type.getPageOrder());
  printer << ">";
}

namespace limits = attnc::limits;

LogicalResult verifySeqLen(EmitErrorFn emitError, int64_t seqLen) {
  if (!ShapedType::isDynamic(seqLen) &&
      (seqLen <= 0 || seqLen > limits::kMaxSeqLen))
    return emitError() << "sequence length must be in [1, "
                       << limits::kMaxSeqLen << "] or '?', got " << seqLen;
  return success();
}

LogicalResult verifyHeadCount(EmitErrorFn emitError, StringRef role,
                              int64_t numHeads) {
  if (numHeads <= 0 || numHeads > limits::kMaxHeads)
    return emitError() << role << " head count must be in [1, "
                       << limits::kMaxHeads << "], got " << numHeads;
  return success();
}

LogicalResult verifyLayout(EmitErrorFn emitError, StringRef role,
                           TokenLayout layout, int64_t pageSize,
                           bool allowPaged) {
  if (layout == TokenLayout::Paged && !allowPaged)
    return emitError() << role
                       << " cannot be paged: only keys and values live in a "
                          "paged cache";
  if (layout == TokenLayout::Paged &&
      (pageSize < limits::kMinPageSize || pageSize > limits::kMaxPageSize))
    return emitError() << "page size must be between " << limits::kMinPageSize
                       << " and " << limits::kMaxPageSize << ", got "
                       << pageSize;
  if (layout != TokenLayout::Paged && pageSize != 0)
    return emitError() << "a page size is only meaningful for a paged layout";
  return success();
}

LogicalResult verifyHeadDim(EmitErrorFn emitError, StringRef role,
                            int64_t headDim) {
  // Multiples of 8 keep every head row 16-byte aligned in bf16/f16, which
  // the vectorized loads of the generated kernels rely on.
  if (headDim <= 0 || headDim % 8 != 0 || headDim > limits::kMaxHeadDim)
    return emitError() << role << " head dim must be a multiple of 8 in [8, "
                       << limits::kMaxHeadDim << "], got " << headDim;
  return success();
}

LogicalResult verifyHeadTensor(EmitErrorFn emitError, StringRef role,
                               int64_t seqLen, int64_t numHeads,
                               int64_t headDim, TokenLayout layout,
                               int64_t pageSize, bool allowPaged) {
  if (failed(verifySeqLen(emitError, seqLen)))
    return failure();
  if (failed(verifyHeadCount(emitError, role, numHeads)) ||
      failed(verifyHeadDim(emitError, role, headDim)))
    return failure();
  return verifyLayout(emitError, role, layout, pageSize, allowPaged);
}

bool isKVElementType(Type type) {
  return type.isBF16() || type.isF16() || isa<Float8E4M3FNType>(type) ||
         isa<Float8E5M2Type>(type);
}

LogicalResult verifyKVElementType(EmitErrorFn emitError, Type type) {
  if (!isKVElementType(type))
    return emitError() << "key/value element type must be bf16, f16, "
                          "f8E4M3FN or f8E5M2, got "
                       << type;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// QueryType
//===----------------------------------------------------------------------===//

Type QueryType::parse(AsmParser &parser) {
  return parseHeadTensorType<QueryType>(parser);
}

void QueryType::print(AsmPrinter &printer) const {
  printHeadTensor(printer, *this);
}

LogicalResult QueryType::verify(EmitErrorFn emitError, int64_t seqLen,
                                int64_t numHeads, int64_t headDim,
                                Type elementType, TokenLayout layout,
                                int64_t pageSize, PageOrder) {
  if (failed(verifyHeadTensor(emitError, "query", seqLen, numHeads, headDim,
                              layout, pageSize, /*allowPaged=*/false)))
    return failure();
  if (!elementType.isBF16() && !elementType.isF16())
    return emitError() << "query element type must be bf16 or f16, got "
                       << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// KVType
//===----------------------------------------------------------------------===//

Type KVType::parse(AsmParser &parser) {
  return parseHeadTensorType<KVType>(parser);
}

void KVType::print(AsmPrinter &printer) const {
  printHeadTensor(printer, *this);
}

LogicalResult KVType::verify(EmitErrorFn emitError, int64_t seqLen,
                             int64_t numHeads, int64_t headDim,
                             Type elementType, TokenLayout layout,
                             int64_t pageSize, PageOrder) {
  if (failed(verifyHeadTensor(emitError, "key/value", seqLen, numHeads, headDim,
                              layout, pageSize, /*allowPaged=*/true)))
    return failure();
  return verifyKVElementType(emitError, elementType);
}

//===----------------------------------------------------------------------===//
// OutputType
//===----------------------------------------------------------------------===//

Type OutputType::parse(AsmParser &parser) {
  return parseHeadTensorType<OutputType>(parser);
}

void OutputType::print(AsmPrinter &printer) const {
  printHeadTensor(printer, *this);
}

LogicalResult OutputType::verify(EmitErrorFn emitError, int64_t seqLen,
                                 int64_t numHeads, int64_t headDim,
                                 Type elementType, TokenLayout layout,
                                 int64_t pageSize, PageOrder) {
  if (failed(verifyHeadTensor(emitError, "output", seqLen, numHeads, headDim,
                              layout, pageSize, /*allowPaged=*/false)))
    return failure();
  if (!elementType.isBF16() && !elementType.isF16() && !elementType.isF32())
    return emitError() << "output element type must be bf16, f16 or f32, got "
                       << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// LseType
//===----------------------------------------------------------------------===//

Type LseType::parse(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> dims;
  LayoutSpec spec;
  if (parser.parseLess() ||
      parser.parseDimensionList(dims, /*allowDynamic=*/true,
                                /*withTrailingX=*/false))
    return {};
  if (dims.size() != 2) {
    parser.emitError(loc, "expected SEQxHEADS, got ")
        << dims.size() << " dimensions";
    return {};
  }
  if (parseOptionalLayoutAndClose(parser, spec))
    return {};
  if (spec.layout == TokenLayout::Paged) {
    parser.emitError(loc, "log-sum-exp cannot be paged");
    return {};
  }
  return parser.getChecked<LseType>(loc, parser.getContext(), dims[0], dims[1],
                                    spec.layout);
}

void LseType::print(AsmPrinter &printer) const {
  printer << "<";
  printSeqLen(printer, getSeqLen());
  printer << "x" << getNumHeads();
  printLayout(printer, getLayout(), 0, PageOrder::NHD);
  printer << ">";
}

LogicalResult LseType::verify(EmitErrorFn emitError, int64_t seqLen,
                              int64_t numHeads, TokenLayout layout) {
  if (failed(verifySeqLen(emitError, seqLen)))
    return failure();
  if (failed(verifyHeadCount(emitError, "log-sum-exp", numHeads)))
    return failure();
  return verifyLayout(emitError, "log-sum-exp", layout, 0,
                      /*allowPaged=*/false);
}

//===----------------------------------------------------------------------===//
// LatentKVType
//===----------------------------------------------------------------------===//

Type LatentKVType::parse(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> dims;
  Type elementType;
  int64_t ropeDim = 0;
  LayoutSpec spec;
  if (parser.parseLess() ||
      parser.parseDimensionList(dims, /*allowDynamic=*/true,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return {};
  if (dims.size() != 2) {
    parser.emitError(loc, "expected SEQxDIMxELEMENT, got ")
        << dims.size() << " dimensions";
    return {};
  }
  if (parser.parseComma() || parser.parseKeyword("rope") ||
      parser.parseEqual() || parser.parseInteger(ropeDim) ||
      parseOptionalLayoutAndClose(parser, spec))
    return {};
  return parser.getChecked<LatentKVType>(
      loc, parser.getContext(), dims[0], dims[1], ropeDim, elementType,
      spec.layout, spec.pageSize, spec.pageOrder);
}

void LatentKVType::print(AsmPrinter &printer) const {
  printer << "<";
  printSeqLen(printer, getSeqLen());
  printer << "x" << getHeadDim() << "x" << getElementType()
          << ", rope = " << getRopeDim();
  printLayout(printer, getLayout(), getPageSize(), getPageOrder());
  printer << ">";
}

LogicalResult LatentKVType::verify(EmitErrorFn emitError, int64_t seqLen,
                                   int64_t headDim, int64_t ropeDim,
                                   Type elementType, TokenLayout layout,
                                   int64_t pageSize, PageOrder) {
  if (failed(verifySeqLen(emitError, seqLen)) ||
      failed(verifyHeadDim(emitError, "latent", headDim)) ||
      failed(verifyLayout(emitError, "latent cache", layout, pageSize,
                          /*allowPaged=*/true)))
    return failure();
  if (ropeDim < 0 || ropeDim % 8 != 0 || ropeDim >= headDim)
    return emitError() << "rope dims must be a non-negative multiple of 8 "
                          "smaller than the cache's dim ("
                       << headDim << "), got " << ropeDim;
  return verifyKVElementType(emitError, elementType);
}
