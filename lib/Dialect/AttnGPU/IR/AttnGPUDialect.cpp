//===- AttnGPUDialect.cpp - the attn_gpu dialect --------------------------===//

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn_gpu;

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.cpp.inc"
#include "attnc/Dialect/AttnGPU/AttnGPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/AttnGPU/AttnGPUAttrs.cpp.inc"

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
