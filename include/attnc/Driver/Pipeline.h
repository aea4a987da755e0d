//===- Pipeline.h - parse a variant and run the pass pipeline ---*- C++ -*-===//
//
// The front half of the driver behind `attnc compile`, `attnc run` and the
// JIT: parse a variant, run the pass pipeline (canonicalize, plan, analyze
// masks, split KV, lower to attn_gpu, lower to EmitC), print CUDA C++ and
// describe the host launches as a Program.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DRIVER_PIPELINE_H
#define ATTNC_DRIVER_PIPELINE_H

#include "attnc/Status.h"
#include "attnc/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>

namespace attnc {

/// The host launches of a compiled variant (runtime/exec/Program.h).
struct Program;

/// How to compile: attn-plan's options (the target and the tuning knobs,
/// declared once, with their defaults, in dialects/Attn/Passes.td), then
/// what the driver itself takes. The cache key prints the planner's part
/// as the pass pipeline does, so no option can be left out of it.
struct CompileOptions : mlir::attn::AttnPlanOptions {
  bool printIRAfterAll = false;
  /// Debug: attach each diagnosed operation's IR (not part of the cache key).
  bool printOpOnDiagnostic = false;
  /// Told, a line at a time on the compiling thread, what a compile that
  /// misses both kernel caches is doing: NVRTC and ptxas take a second or
  /// more there (docs/PERFORMANCE.md), which the caller may show. It must
  /// not throw (the driver is built without exceptions). Not part of the
  /// cache key; none when empty.
  std::function<void(const std::string &line)> progress;
};

/// Stages of the pipeline, for --emit.
enum class Stage { Attn, Gpu, EmitC };

/// Registers every dialect attnc's inputs and pipeline use, and keeps IR
/// dumps out of diagnostics unless `printOpOnDiagnostic` (a debug option).
void registerAttncDialects(mlir::MLIRContext &context,
                           bool printOpOnDiagnostic = false);

/// The one way attnc reads a variant: parses (and verifies) it while
/// collecting every diagnostic of its context as text, in one format
/// ("file:line:col: error: ..." with the source line), those of passes run
/// later included, for as long as it lives. Input that would crash the
/// upstream parser is refused before the parser sees it (docs/UPSTREAM.md).
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &context);
  /// Null on failure, with the reasons in text().
  mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &source,
                                          const std::string &fileName);
  /// Parses `source` as one whole type (nothing may follow it), refusing
  /// what would crash the parser as parse() does. Null on failure. Each
  /// text parsed by one collector needs its own fileName.
  mlir::Type parseType(const std::string &source, const std::string &fileName);
  const std::string &text() { return stream_.str(); }

private:
  mlir::MLIRContext &context_;
  std::string text_;
  llvm::raw_string_ostream stream_{text_};
  llvm::SourceMgr sourceMgr_;
  mlir::SourceMgrDiagnosticHandler handler_;
};

/// Whether `module` is a variant the pipeline reads whole: it holds
/// something to compile (an attn.attention or attn.merge_states) and no
/// attribute that nothing would read (a discardable attribute other than
/// the module's attn_gpu.target, which attn-plan checks); emits the error
/// if not.
mlir::LogicalResult requireCompilableModule(mlir::ModuleOp module);

/// Runs the pipeline up to and including `stage`; on the way, describes the
/// host launches into `program` (when given) once they exist.
mlir::LogicalResult lowerVariant(mlir::ModuleOp module,
                                 const CompileOptions &options, Stage stage,
                                 Program *program = nullptr);

/// Prints the device file of a module lowered to EmitC as CUDA C++.
mlir::LogicalResult printCuda(mlir::ModuleOp module, std::string &cuda);

} // namespace attnc

#endif // ATTNC_DRIVER_PIPELINE_H
