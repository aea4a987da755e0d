//===- FuzzPipeline.cpp - the compiler's front half, for fuzzing ----------===//
//
// The path `attnc compile --emit=cuda` and the JIT take before NVRTC
// (lib/Driver/Compile.cpp, compileVariant): parse and verify, print the
// parsed module back, run the whole pass pipeline to EmitC while describing
// the host program, print CUDA C++ and serialize the program as the cache
// would. Errors are expected; only a crash, a sanitizer report or a hang is
// a finding.
//
//===----------------------------------------------------------------------===//

#include "FuzzPipeline.h"
#include "FuzzOptions.h"

#include "attnc/Driver/Pipeline.h"
#include "exec/Program.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace attnc::fuzz {

Reached compileForFuzzing(const std::string &source) {
  CompileOptions options = optionsFrom(source);

  // A fresh context per input, as compileVariant makes one: no state
  // carries from one input to the next, so every reproducer stands alone.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  registerAttncDialects(context);
  DiagnosticCollector diagnostics(context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      diagnostics.parse(source, "fuzz.mlir");
  if (!module)
    return Reached::ParseError;

  // attn-opt prints what it parsed: the dialects' printers see every value
  // the verifiers let through.
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);

  Program program;
  if (mlir::failed(lowerVariant(*module, options, Stage::EmitC, &program)))
    return Reached::CompileError;
  std::string cuda;
  if (mlir::failed(printCuda(*module, cuda)))
    return Reached::CompileError;
  // The cache stores the program serialized and reads it back on a hit.
  std::string serialized = program.serialize();
  (void)Program::deserialize(serialized);
  return Reached::Cuda;
}

} // namespace attnc::fuzz
