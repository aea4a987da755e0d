//===- AttnDialect.cpp - the attn dialect ---------------------------------===//

#include "attnc/Dialect/Attn/AttnDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "attnc/Dialect/Attn/AttnDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/Attn/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attnc/Dialect/Attn/AttnOps.cpp.inc"
      >();
  registerTypes();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attnc/Dialect/Attn/AttnAttrs.cpp.inc"
      >();
}

LogicalResult WindowAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t left, int64_t right) {
  if (left < 0 || right < 0 || left > attnc::limits::kMaxSeqLen ||
      right > attnc::limits::kMaxSeqLen)
    return emitError() << "window extents must be in [0, "
                       << attnc::limits::kMaxSeqLen << "], got <" << left
                       << ", " << right << ">";
  return success();
}

/// The error for a discardable `attn.*` attribute: attn's variant
/// attributes are inherent to attn.attention, and nothing reads them
/// anywhere else.
static LogicalResult refuseAnnotation(Operation *op, NamedAttribute attr,
                                      const Twine &where) {
  return op->emitError() << "'" << attr.getName().getValue() << "' on " << where
                         << " would be ignored: attn annotates no other "
                            "operation; write variant attributes on "
                            "attn.attention (e.g. {"
                         << attr.getName().getValue().drop_front(
                                AttnDialect::getDialectNamespace().size() + 1)
                         << "})";
}

LogicalResult AttnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  return refuseAnnotation(op, attr, "'" + op->getName().getStringRef() + "'");
}

/// "argument 0 of 'func.func'", and the like.
static std::string valueOf(Operation *op, StringRef kind, unsigned index) {
  return (kind + " " + Twine(index) + " of '" + op->getName().getStringRef() +
          "'")
      .str();
}

LogicalResult AttnDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned argument,
                                                    NamedAttribute attr) {
  return refuseAnnotation(op, attr, valueOf(op, "argument", argument));
}

LogicalResult AttnDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                       unsigned result,
                                                       NamedAttribute attr) {
  return refuseAnnotation(op, attr, valueOf(op, "result", result));
}
