//===- Passes.h - passes over the attn dialect ------------------*- C++ -*-===//

#ifndef ATTNC_TRANSFORMS_PASSES_H
#define ATTNC_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::attn {

#define GEN_PASS_DECL
#include "attnc/Dialect/Attn/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attnc/Dialect/Attn/Passes.h.inc"

} // namespace mlir::attn

#endif // ATTNC_TRANSFORMS_PASSES_H
