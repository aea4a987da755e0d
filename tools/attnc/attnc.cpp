//===- attnc.cpp - the attnc command line ---------------------------------===//

#include "Commands.h"

#include "jit/Nvrtc.h"

#include "llvm/Config/llvm-config.h"

int main(int argc, char **argv) {
  CLI::App app{"attnc: a compiler for attention kernels, and its serving "
               "runtime"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    std::string nvrtc = "not found";
    if (attnc::StatusOr<attnc::jit::Nvrtc *> found = attnc::jit::Nvrtc::get();
        found.ok())
      nvrtc = (*found)->version();
    return "attnc " ATTNC_VERSION " (MLIR " +
           std::to_string(LLVM_VERSION_MAJOR) + ", NVRTC " + nvrtc + ")";
  });
  app.footer("Examples:\n"
             "  attnc compile examples/gqa_paged_decode.mlir --emit=cuda\n"
             "  attnc run examples/causal_ragged_prefill.mlir --shape "
             "batch=2,q=512,kv=512 --check\n"
             "  attnc cache list\n"
             "  attnc library build --out attnc-kernels.bin\n"
             "  attnc sim --workload branching --cache-tokens 8192\n"
             "  attnc sim --all --json\n"
             "  attnc sim --trace requests.jsonl --policy lpm");
  int exitCode = 0;
  attnc::addSimCommand(app, exitCode);
  attnc::addCompileCommand(app, exitCode);
  attnc::addRunCommand(app, exitCode);
  attnc::addCacheCommand(app, exitCode);
  attnc::addLibraryCommand(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // --help and --version exit 0; every bad flag or value exits 2, like
    // the subcommands' own checks.
    return app.exit(error) == 0 ? 0 : 2;
  }
  return exitCode;
}
