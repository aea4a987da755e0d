//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//
//
// Entry point for users of the attn dialect: the dialect, its enums,
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

#include "attnc/Dialect/Attn/AttnDialect.h.inc"
#include "attnc/Dialect/Attn/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/Attn/AttnAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "attnc/Dialect/Attn/AttnTypes.h.inc"

#define GET_OP_CLASSES
#include "attnc/Dialect/Attn/AttnOps.h.inc"

#endif // ATTNC_DIALECT_ATTN_ATTNDIALECT_H
