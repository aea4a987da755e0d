//===- FuzzPipeline.cpp - the compiler's front half as a fuzz target ------===//
//
// Feeds any bytes through the path `attnc compile --emit=cuda` and the JIT
// take before NVRTC (lib/Driver/Compile.cpp, compileVariant): parse and
// verify, print the parsed module back, run the whole pass pipeline to
// EmitC while describing the host program, print CUDA C++ and serialize the
// program as the cache would. Errors are expected; only a crash, a
// sanitizer report or a hang is a finding.
//
// The input may carry compile options in a line the parser ignores,
//   // fuzz: arch=sm_80 warps=4 stages=3 sms=8
// so the fuzzer explores the planner's knobs too, within the ranges a user
// can reach through the CLI and the API (FuzzOptions.h).
//
//===----------------------------------------------------------------------===//

#include "FuzzOptions.h"

#include "attnc/Driver/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(reinterpret_cast<const char *>(data), size);
  attnc::CompileOptions options = attnc::fuzz::optionsFrom(source);

  // A fresh context per input, as compileVariant makes one: no state
  // carries from one input to the next, so every reproducer stands alone.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  attnc::registerAttncDialects(context);
  attnc::DiagnosticCollector diagnostics(context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      diagnostics.parse(source, "fuzz.mlir");
  if (!module)
    return 0;

  // attn-opt prints what it parsed: the dialects' printers see every value
  // the verifiers let through.
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);

  attnc::Program program;
  if (mlir::failed(
          attnc::lowerVariant(*module, options, attnc::Stage::EmitC, &program)))
    return 0;
  std::string cuda;
  if (mlir::failed(attnc::printCuda(*module, cuda)))
    return 0;
  // The cache stores the program serialized and reads it back on a hit.
  std::string serialized = program.serialize();
  (void)attnc::Program::deserialize(serialized);
  return 0;
}
