//===- attn-opt.cpp - the attnc lit driver --------------------------------===//
//
// mlir-opt with the attn dialect, its passes and the upstream dialects that
// attn's regions and examples use.
//
//===----------------------------------------------------------------------===//

#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"
#include "attnc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::func::FuncDialect, mlir::attn_gpu::AttnGPUDialect,
                  mlir::scf::SCFDialect, mlir::emitc::EmitCDialect>();
  mlir::attn::registerAttnPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attnc optimizer driver\n", registry));
}
