//===- Passes.h - attnc's passes --------------------------------*- C++ -*-===//

#ifndef ATTNC_TRANSFORMS_PASSES_H
#define ATTNC_TRANSFORMS_PASSES_H

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {

/// The most steps of attn-plan's `register-relief`: the driver compiles a
/// variant whose kernel spills at most this many times more.
constexpr int64_t kMaxRegisterRelief = 2;

#define GEN_PASS_DECL
#include "attnc/Dialect/Attn/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attnc/Dialect/Attn/Passes.h.inc"

} // namespace mlir::attn

#endif // ATTNC_TRANSFORMS_PASSES_H
