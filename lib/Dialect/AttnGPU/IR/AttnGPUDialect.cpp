//===- AttnGPUDialect.cpp - the attn_gpu dialect --------------------------===//

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn_gpu;

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.cpp.inc"
#include "attnc/Dialect/AttnGPU/AttnGPUEnums.cpp.inc"

FailureOr<PartialTiles> mlir::attn_gpu::parsePartialTiles(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  PartialTiles partial;
  if (parser.parseKeyword(&keyword))
    return failure();
  if (!attnc::parseKeyword(keyword.data(), keyword.size(), partial))
    return parser.emitError(loc, "expected 'never', 'edges' or 'always', got '")
           << keyword << "'";
  return partial;
}

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/AttnGPU/AttnGPUAttrs.cpp.inc"

int64_t PlanAttr::getSharedMemoryBytes(int64_t qkDim, int64_t vDim) const {
  // The emitter passes this size to the device as C::kSmemBytes, where
  // Shape<C> static_asserts that its tiles fill exactly this much: the
  // query tile and `stages` K/V tiles in 16-bit elements during the loop,
  // then the f32 output tile and per-warp row statistics in the epilogue.
  int64_t loop =
      2 * (getBlockM() * qkDim + getStages() * getBlockN() * (qkDim + vDim));
  int64_t epilogue = 4 * (getBlockM() * vDim + 3 * getWarpsN() * getBlockM());
  return std::max(loop, epilogue);
}

void AttnGPUDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "attnc/Dialect/AttnGPU/AttnGPUOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attnc/Dialect/AttnGPU/AttnGPUAttrs.cpp.inc"
      >();
}
