//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//
//
// Entry point for users of the attn dialect: the dialect, its
// attributes, types and operations.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DIALECT_ATTN_ATTNDIALECT_H
#define ATTNC_DIALECT_ATTN_ATTNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "attnc/device/abi.h"

#include "attnc/Dialect/Attn/AttnDialect.h.inc"

namespace mlir::attn {
// The dialect's types carry the layouts every layer shares (abi.h).
using ::attnc::PageOrder;
using ::attnc::TokenLayout;
} // namespace mlir::attn

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/Attn/AttnAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "attnc/Dialect/Attn/AttnTypes.h.inc"

#define GET_OP_CLASSES
#include "attnc/Dialect/Attn/AttnOps.h.inc"

#endif // ATTNC_DIALECT_ATTN_ATTNDIALECT_H
