//===- RegionOps.h - what score_mod / mask_mod regions may hold -*- C++ -*-===//
//
// The one list of ops a modifier region may use. The verifier admits exactly
// these, the EmitC lowering covers them (the math functions by this table)
// and the reference interpreter evaluates them; tests check both against
// this list, so an op cannot be admitted without lowering and running.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DIALECT_ATTN_REGIONOPS_H
#define ATTNC_DIALECT_ATTN_REGIONOPS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::attn {

/// A math op on f32 and the CUDA single-precision function it lowers to.
struct RegionMathFunction {
  llvm::StringLiteral op;
  llvm::StringLiteral cuda;
  unsigned arity;
};

/// The math ops regions may use on f32, each with its CUDA function.
llvm::ArrayRef<RegionMathFunction> regionMathFunctions();

/// The other ops regions may use besides attn.yield and memref.load on
/// captures: arith ops, and math.absi.
llvm::ArrayRef<llvm::StringLiteral> regionScalarOps();

/// The scalar types regions compute on: f32, i1, i32, i64 and index.
bool isRegionScalarType(Type type);

/// Checks that `op` may appear in the region named `region` (its name is
/// listed, it computes on region scalars, and it uses i1 as a boolean), and
/// emits an error on `op` saying why not.
LogicalResult verifyRegionOp(Operation *op, llvm::StringRef region);

} // namespace mlir::attn

#endif // ATTNC_DIALECT_ATTN_REGIONOPS_H
