//===- attn-opt.cpp - the attnc lit driver --------------------------------===//
//
// mlir-opt with the attn dialect, its passes and the upstream dialects that
// attn's regions and examples use. Like every other way into attnc, it
// refuses text that would crash MLIR's parser before parsing it, and parses
// and runs its passes on a stack sized for the nesting it lets through
// (docs/UPSTREAM.md).
//
//===----------------------------------------------------------------------===//

#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"
#include "attnc/Driver/ParserHazards.h"
#include "attnc/Driver/ParserStack.h"
#include "attnc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

/// Reports the first construct of `buffer` that would crash MLIR's parser,
/// in the diagnostics' own format; whether there was one.
static bool refuseParserHazard(const llvm::MemoryBuffer &buffer) {
  std::optional<attnc::ParserHazard> hazard =
      attnc::findParserHazard(buffer.getBuffer());
  if (!hazard)
    return false;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(buffer.getBuffer(),
                                       buffer.getBufferIdentifier()),
      llvm::SMLoc());
  sourceMgr.PrintMessage(
      llvm::SMLoc::getFromPointer(buffer.getBufferStart() + hazard->offset),
      llvm::SourceMgr::DK_Error, hazard->message);
  return true;
}

int main(int argc, char **argv) {
  DialectRegistry registry;
  registry
      .insert<attn::AttnDialect, arith::ArithDialect, math::MathDialect,
              memref::MemRefDialect, func::FuncDialect,
              attn_gpu::AttnGPUDialect, scf::SCFDialect, emitc::EmitCDialect>();
  attn::registerAttnPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  auto [inputName, outputName] = registerAndParseCLIOptions(
      argc, argv, "attnc optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // These read no input: upstream's driver prints them.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputName, outputName, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputName, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (refuseParserHazard(*input))
    return EXIT_FAILURE;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputName, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  LogicalResult result = failure();
  attnc::runOnParserStack([&] {
    result = MlirOptMain(output->os(), std::move(input), registry, config);
  });
  if (failed(result))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
