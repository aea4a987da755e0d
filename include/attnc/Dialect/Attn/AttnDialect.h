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

namespace mlir::attn {
/// Whether `type` is an fp8 element type of KV caches.
inline bool isFp8(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}
/// Whether `type` is a dequantization scale of an fp8 cache with `kvHeads`
/// KV heads: memref<1xf32> (per tensor) or memref<kvHeads x f32> (per head).
inline bool isKVScaleType(Type type, int64_t kvHeads) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref.getElementType().isF32() && memref.getRank() == 1 &&
         memref.hasStaticShape() && memref.getLayout().isIdentity() &&
         (memref.getDimSize(0) == 1 || memref.getDimSize(0) == kvHeads);
}
/// Bytes of one stored element of `type` (a key/value element type).
inline int64_t elementBytes(Type type) {
  return type.getIntOrFloatBitWidth() / 8;
}
} // namespace mlir::attn

#endif // ATTNC_DIALECT_ATTN_ATTNDIALECT_H
