//===- RunCommand.cpp - attnc run -----------------------------------------===//

#include "Commands.h"

#include "attnc/Check/Checker.h"

#include "attnc/device/abi.h"

#include <charconv>
#include <iostream>

namespace attnc {

namespace {
struct RunArgs {
  std::string file, shape, cacheDir;
  bool check = false;
  int iterations = 20, splits = 0;
  int64_t gridCtas = 0;
  CompileOptions tuning; // attn-plan's knobs (addTuningOptions)
  unsigned seed = 1;
};

/// Parses "batch=4,q=128,kv=1024,fixed".
bool parseShape(const std::string &text, RunShape &shape) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    std::string item =
        text.substr(at, end == std::string::npos ? end : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (item == "fixed") {
      shape.varyLengths = false;
      continue;
    }
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return false;
    std::string key = item.substr(0, eq);
    std::string number = item.substr(eq + 1);
    int value = 0;
    auto [parsedTo, error] =
        std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc() || parsedTo != number.data() + number.size())
      return false;
    // A request count indexes the grid's z dimension; lengths are positions.
    if (value < 1 || (key == "batch" && value > 65535))
      return false;
    if (key == "batch")
      shape.batch = value;
    else if (key == "q")
      shape.qLen = value;
    else if (key == "kv")
      shape.kvLen = value;
    else
      return false;
  }
  return true;
}

int runRun(const RunArgs &args) {
  std::string source;
  if (!readSource(args.file, source))
    return 1;
  RunShape shape;
  if (!args.shape.empty() && !parseShape(args.shape, shape)) {
    std::cerr << "attnc: bad --shape '" << args.shape
              << "': expected e.g. batch=4,q=128,kv=1024[,fixed] with "
                 "batch in [1, 65535] and q, kv in [1, 2147483647]\n";
    return 2;
  }
  shape.seed = args.seed;
  shape.splits = args.splits;
  shape.gridCtas = args.gridCtas;
  shape.timingIterations = args.iterations;
  shape.compare = args.check;
  CompileOptions options = args.tuning;
  showCompileProgress(options);
  StatusOr<RunReport> report =
      runAndCheck(source, args.file, options, shape, args.cacheDir);
  if (!report.ok()) {
    printFailure(report.status());
    return report.status().code() == ErrorCode::NoDevice ? 3 : 1;
  }
  std::cout << args.file << ": " << report->layoutSummary << "\n";
  for (const std::string &line : report->outputErrors)
    std::cout << "  " << line << "\n";
  std::cout << "  time: " << report->milliseconds << " ms per run\n";
  if (args.check) {
    bool pass = report->maxError < 1e-2;
    std::cout << (pass ? "PASS" : "FAIL") << " (max relative error "
              << report->maxError << ", bound 1e-2)\n";
    return pass ? 0 : 1;
  }
  return 0;
}
} // namespace

void addRunCommand(CLI::App &app, int &exitCode) {
  auto args = std::make_shared<RunArgs>();
  CLI::App *cmd = app.add_subcommand(
      "run", "Run a variant on the GPU with random inputs and time it");
  cmd->add_option("file", args->file, "the variant (.mlir)")->required();
  cmd->add_option("--shape", args->shape,
                  "batch=N,q=N,kv=N[,fixed]: requests, queries and keys per "
                  "request where the types say ?; ragged and paged lengths "
                  "vary up to them unless 'fixed'");
  cmd->add_flag("--check", args->check,
                "compare with the double-precision reference; fail above "
                "1e-2 relative error");
  cmd->add_option("--iterations", args->iterations, "timed runs")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--splits", args->splits,
                  "force KV splits of split-KV launches (0: the planner's)")
      ->check(CLI::Range(0, int(limits::kMaxKVSplits)));
  cmd->add_option("--grid-ctas", args->gridCtas,
                  "cap the CTAs of persistent (sm_90a prefill) launches (0: "
                  "as many as the GPU holds at once; tuning and tests)")
      ->check(CLI::Range(int64_t(0), int64_t(limits::kMaxSeqLen)));
  cmd->add_option("--seed", args->seed, "random inputs' seed");
  addTuningOptions(*cmd, args->tuning);
  cmd->add_option("--cache-dir", args->cacheDir, "kernel cache directory");
  cmd->footer("Examples:\n"
              "  attnc run examples/gqa_paged_decode.mlir --shape "
              "batch=64,kv=4096 --check\n"
              "  attnc run examples/causal_ragged_prefill.mlir --shape "
              "batch=2,q=512,kv=512 --check");
  cmd->callback([args, &exitCode] { exitCode = runRun(*args); });
}

} // namespace attnc
