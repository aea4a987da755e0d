//===- CompileCommand.cpp - attnc compile ---------------------------------===//

#include "Commands.h"

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"
#include "attnc/Driver/Compile.h"
#include "attnc/Transforms/Passes.h"
#include "jit/Nvrtc.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>

namespace attnc {

bool readSource(const std::string &path, std::string &source) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buffer) {
    std::cerr << "attnc: cannot read " << path << ": "
              << buffer.getError().message() << "\n";
    return false;
  }
  source = (*buffer)->getBuffer().str();
  return true;
}

void printFailure(const Status &status) {
  std::string text = status.message();
  bool diagnostics = (status.code() == ErrorCode::ParseError ||
                      status.code() == ErrorCode::CompileError) &&
                     text.find(": error: ") != std::string::npos;
  if (!diagnostics)
    text = "attnc: " + status.toString();
  if (text.empty() || text.back() != '\n')
    text += '\n';
  std::cerr << text;
}

void showCompileProgress(CompileOptions &options) {
  options.progress = [](const std::string &line) {
    std::cerr << "attnc: " << line << "\n";
  };
}

CLI::Option *addArchOption(CLI::App &command, std::string &arch) {
  std::string supported;
  for (llvm::StringRef name : mlir::attn_gpu::TargetAttr::getSupportedArchs())
    supported += (supported.empty() ? "" : ", ") + name.str();
  return command.add_option("--arch", arch, "GPU architecture: " + supported)
      ->capture_default_str()
      ->check(CLI::Validator(
          [supported](std::string &value) -> std::string {
            if (mlir::attn_gpu::TargetAttr::isSupportedArch(value))
              return "";
            return "unsupported GPU architecture '" + value +
                   "'; attnc compiles for " + supported;
          },
          "ARCH"));
}

void addTuningOptions(CLI::App &command, CompileOptions &options) {
  command
      .add_option("--prefill-warps", options.prefillWarps,
                  "tuning: warps of a prefill CTA, 16 query rows each "
                  "(0: the planner's; on sm_90a it puts a shared_keys "
                  "attention on the mma.sync prefill CTA)")
      ->check(CLI::Range(0, 8));
  command
      .add_option("--decode-stages", options.decodeStages,
                  "tuning: pipeline stages of a decode or shared_keys CTA "
                  "(0: the planner's)")
      ->check(CLI::Range(0, 8));
  command
      .add_option("--consumers", options.consumers,
                  "tuning: consumer warpgroups of an sm_90a prefill CTA, 64 "
                  "query rows each (0: the planner's)")
      ->check(CLI::Range(0, 3));
  command
      .add_option("--query-buffers", options.queryBuffers,
                  "tuning: query tiles per consumer of an sm_90a prefill "
                  "CTA, 1 or 2 (0: the planner's)")
      ->check(CLI::Range(0, 2));
  command
      .add_option("--cluster-ctas", options.clusterCtas,
                  "tuning: 2 runs a 128-head latent kernel over a cache the "
                  "copy engine loads in clusters of two CTAs that share "
                  "their loads (1: none)")
      ->check(CLI::Range(1, 2));
  command
      .add_option("--register-relief", options.registerRelief,
                  "steps of register room the plan leaves beyond its "
                  "measured needs (0-2); a compile through NVRTC (a cubin, "
                  "PTX, --time) takes more while ptxas reports local "
                  "memory, --emit=cuda and the IR stages show this one's "
                  "plan")
      ->check(CLI::Range(int64_t(0), mlir::attn::kMaxRegisterRelief));
}

namespace {
struct CompileArgs {
  std::string file, arch = "sm_90a", emit = "cuda", output = "-", cacheDir;
  bool time = false, printIRAfterAll = false, noCache = false;
  bool printOpOnDiagnostic = false;
  CompileOptions tuning; // attn-plan's knobs (addTuningOptions)
};

bool writeOutput(const std::string &path, const std::string &data) {
  if (path == "-") {
    std::cout << data;
    return true;
  }
  std::ofstream out(path, std::ios::binary);
  out << data;
  if (!out) {
    std::cerr << "attnc: cannot write " << path << "\n";
    return false;
  }
  return true;
}

int runCompile(const CompileArgs &args) {
  std::string source;
  if (!readSource(args.file, source))
    return 1;
  CompileOptions options = args.tuning;
  options.arch = args.arch;
  options.printIRAfterAll = args.printIRAfterAll;
  options.printOpOnDiagnostic = args.printOpOnDiagnostic;
  showCompileProgress(options);
  if (args.emit == "attn" || args.emit == "gpu" || args.emit == "emitc" ||
      (args.emit == "cuda" && !args.time)) {
    // IR stages need no NVRTC: print the module after the asked-for stage.
    mlir::MLIRContext context;
    registerAttncDialects(context, options.printOpOnDiagnostic);
    auto start = std::chrono::steady_clock::now();
    DiagnosticCollector diagnostics(context);
    auto fail = [&] {
      std::cerr << diagnostics.text();
      return 1;
    };
    mlir::OwningOpRef<mlir::ModuleOp> module =
        diagnostics.parse(source, args.file);
    if (!module)
      return fail();
    Stage stage = args.emit == "attn"  ? Stage::Attn
                  : args.emit == "gpu" ? Stage::Gpu
                                       : Stage::EmitC;
    if (mlir::failed(lowerVariant(*module, options, stage)))
      return fail();
    std::string text;
    if (args.emit == "cuda") {
      if (mlir::failed(printCuda(*module, text)))
        return fail();
    } else {
      llvm::raw_string_ostream os(text);
      module->print(os);
    }
    if (args.time)
      std::cerr << "frontend: "
                << std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count()
                << " ms\n";
    return writeOutput(args.output, text) ? 0 : 1;
  }
  auto start = std::chrono::steady_clock::now();
  StatusOr<CompiledVariant> compiled = compileVariant(
      source, args.file, options, args.noCache ? "-" : args.cacheDir);
  double totalMs = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  if (!compiled.ok()) {
    printFailure(compiled.status());
    return 1;
  }
  // Not an error (the cubin is right), but every later compile of the
  // variant will pay for NVRTC again until the cache is fixed.
  if (!compiled->cacheWrite.ok())
    std::cerr << "attnc: warning: compiled, but not cached: "
              << compiled->cacheWrite.message() << "\n";
  if (args.time) {
    if (compiled->fromCache && compiled->frontendMs == 0) {
      std::cerr << "cache hit: " << totalMs
                << " ms (frontend 0 ms, nvrtc 0 ms)\n";
    } else if (compiled->fromCache) {
      // Another variant's CUDA was the same: its cubin served this one.
      std::cerr << "frontend (MLIR passes, C++ emission): "
                << compiled->frontendMs
                << " ms\nnvrtc + ptxas: 0 ms\ntotal: " << totalMs << " ms\n";
    } else {
      std::cerr << "frontend (MLIR passes, C++ emission): "
                << compiled->frontendMs
                << " ms\nnvrtc + ptxas: " << compiled->nvrtcMs << " ms";
      // What a cold compile goes to: the two halves move apart with the
      // kernel's size (docs/PERFORMANCE.md).
      if (compiled->ptxasMs > 0)
        std::cerr << " (NVRTC's front end and NVVM "
                  << std::max(0.0, compiled->nvrtcMs - compiled->ptxasMs)
                  << " ms, ptxas " << compiled->ptxasMs << " ms)";
      std::cerr << "\ntotal: " << totalMs << " ms\n";
    }
    if (compiled->registerRelief > options.registerRelief)
      std::cerr << "register relief: " << compiled->registerRelief
                << " (a plan with less room spilled)\n";
    // Where the kernel came from: compiled by NVRTC here, or this
    // process's memory, the disk cache or the prebuilt kernel library.
    std::cerr << "cubin: " << toString(compiled->cubinSource) << "\n";
  }
  if (args.emit == "cubin") {
    if (!compiled->ptxasLog.empty())
      std::cerr << compiled->ptxasLog;
    return writeOutput(args.output, compiled->cubin) ? 0 : 1;
  }
  if (args.emit == "ptx") {
    StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
    StatusOr<jit::CompiledCode> ptx =
        nvrtc.ok() ? (*nvrtc)->compile(compiled->cuda, args.arch, true,
                                       /*driverCache=*/!args.noCache)
                   : StatusOr<jit::CompiledCode>(nvrtc.status());
    if (!ptx.ok()) {
      printFailure(ptx.status());
      return 1;
    }
    return writeOutput(args.output, ptx->image) ? 0 : 1;
  }
  return writeOutput(args.output, compiled->cuda) ? 0 : 1;
}
} // namespace

void addCompileCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App *cmd = app.add_subcommand(
      "compile", "Compile a variant to attn IR, attn_gpu IR, EmitC, CUDA C++, "
                 "PTX or a cubin");
  cmd->add_option("file", args->file, "the variant (.mlir), - for stdin")
      ->required();
  addArchOption(*cmd, args->arch);
  cmd->add_option("--emit", args->emit, "attn|gpu|emitc|cuda|ptx|cubin")
      ->capture_default_str()
      ->check(CLI::IsMember({"attn", "gpu", "emitc", "cuda", "ptx", "cubin"}));
  cmd->add_option("-o", args->output, "output file (- for stdout)");
  addTuningOptions(*cmd, args->tuning);
  cmd->add_flag("--time", args->time,
                "print the time of the frontend and of NVRTC (compiles "
                "through the cache)");
  cmd->add_flag("--print-ir-after-all", args->printIRAfterAll,
                "print the IR after every pass");
  cmd->add_flag("--mlir-print-op-on-diagnostic", args->printOpOnDiagnostic,
                "debug: attach the operation's IR to each diagnostic");
  cmd->add_option("--cache-dir", args->cacheDir,
                  "kernel cache (default $XDG_CACHE_HOME/attnc)");
  cmd->add_flag("--no-cache", args->noCache,
                "neither read nor write the cache, nor the CUDA driver's "
                "compute cache NVRTC uses (a cold compile)");
  cmd->footer("Examples:\n"
              "  attnc compile examples/gqa_paged_decode.mlir --emit=gpu\n"
              "  attnc compile examples/softcap.mlir --emit=cubin -o k.cubin\n"
              "  attnc compile examples/alibi.mlir --emit=cuda --time");
  cmd->callback([args, &exitCode] { exitCode = runCompile(*args); });
}

} // namespace attnc
