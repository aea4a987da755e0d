//===- attnc.cpp - the attnc command line ---------------------------------===//

#include "Commands.h"

int main(int argc, char **argv) {
  CLI::App app{"attnc: a compiler for attention kernels, and its serving "
               "runtime"};
  app.require_subcommand(1);
  app.footer("Examples:\n"
             "  attnc compile examples/gqa_paged_decode.mlir --emit=cuda\n"
             "  attnc run examples/causal_ragged_prefill.mlir --shape "
             "batch=2,q=512,kv=512 --check\n"
             "  attnc cache list\n"
             "  attnc sim --workload branching --cache-tokens 8192\n"
             "  attnc sim --all --json\n"
             "  attnc sim --trace requests.jsonl --policy lpm");
  int exitCode = 0;
  attnc::addSimCommand(app, exitCode);
  attnc::addCompileCommand(app, exitCode);
  attnc::addRunCommand(app, exitCode);
  attnc::addCacheCommand(app, exitCode);
  CLI11_PARSE(app, argc, argv);
  return exitCode;
}
