//===- CompileOutcome.cpp - compile a variant and judge the result --------===//

#include "CompileOutcome.h"

#include "jit/Nvrtc.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace attnc::property {

Outcome compileAndJudge(const std::string &mlir, const std::string &fileName,
                        const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  StatusOr<CompiledVariant> compiled =
      compileVariant(mlir, fileName, options, "-");
  Outcome outcome;
  outcome.milliseconds = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  if (compiled.ok()) {
    outcome.kind = Outcome::Kind::Compiled;
    outcome.detail = compiled->ptxasLog;
    outcome.spills = jit::localMemoryLines(compiled->ptxasLog);
    outcome.registerRelief = compiled->registerRelief;
    outcome.reliefError = compiled->reliefError;
    return outcome;
  }
  Status status = compiled.status();
  const std::string &message = status.message();
  if (status.code() == ErrorCode::CompileError)
    for (const char *phrase : kRefusalPhrases)
      if (message.find(phrase) != std::string::npos) {
        outcome.kind = Outcome::Kind::Refused;
        outcome.detail = message;
        return outcome;
      }
  outcome.kind = Outcome::Kind::Failed;
  outcome.detail = compiled.status().toString();
  return outcome;
}

void parallelFor(int count, const std::function<void(int)> &job) {
  int threads = std::clamp<int>(std::thread::hardware_concurrency(), 1, 4);
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int i = next++; i < count; i = next++)
        job(i);
    });
  for (std::thread &t : pool)
    t.join();
}

} // namespace attnc::property
