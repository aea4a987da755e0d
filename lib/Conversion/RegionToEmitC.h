//===- RegionToEmitC.h - modifier region bodies to EmitC --------*- C++ -*-===//

#ifndef ATTNC_LIB_CONVERSION_REGIONTOEMITC_H
#define ATTNC_LIB_CONVERSION_REGIONTOEMITC_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::attn {

/// Converts a func.func holding a score_mod or mask_mod body (the ops
/// RegionOps.h admits, and emitc.call_opaque capture loads) into an
/// emitc.func. Fails where an op has no lowering.
LogicalResult convertRegionFunction(func::FuncOp func);

} // namespace mlir::attn

#endif // ATTNC_LIB_CONVERSION_REGIONTOEMITC_H
