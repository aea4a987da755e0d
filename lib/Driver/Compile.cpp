//===- Compile.cpp - a variant to a cubin, through the compile caches -----===//
//
// The cache key covers everything the cubin depends on; an entry holds the
// program, the CUDA source, the ptxas log and the cubin, length-prefixed.
//
//===----------------------------------------------------------------------===//

#include "attnc/Driver/Compile.h"

#include "jit/DeviceHeaders.h"
#include "jit/DiskCache.h"
#include "jit/Nvrtc.h"
#include "support/Hash.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>

using namespace mlir;

namespace attnc {

namespace {
/// The project version (CMakeLists.txt), bumped whenever the generated code
/// changes meaning.
constexpr const char *kCompilerVersion = "attnc-" ATTNC_VERSION;

/// Content of the device tile library the generated code includes: a change
/// to it must miss the cache.
const std::string &deviceLibraryKey() {
  static const std::string key = [] {
    std::string all;
    for (int i = 0; i < jit::kNumDeviceHeaders; ++i)
      all += std::string(jit::kDeviceHeaders[i].includeName) + "\n" +
             jit::kDeviceHeaders[i].content;
    return contentKey(all);
  }();
  return key;
}

std::string cacheKey(const std::string &source, const CompileOptions &o,
                     const std::string &nvrtcVersion) {
  return contentKey(
      std::string(kCompilerVersion) + "\n" + deviceLibraryKey() + "\n" +
      o.arch + "\n" + std::to_string(o.sms) + "\n" + std::to_string(o.smem) +
      "\n" + std::to_string(o.maxSplits) + "\n" +
      std::to_string(o.prefillWarps) + "\n" + std::to_string(o.decodeStages) +
      "\n" + nvrtcVersion + "\n" + source);
}

std::string encodeEntry(const CompiledVariant &v) {
  std::string program = v.program.serialize();
  return std::to_string(program.size()) + " " + std::to_string(v.cuda.size()) +
         " " + std::to_string(v.ptxasLog.size()) + "\n" + program + v.cuda +
         v.ptxasLog + v.cubin;
}

std::optional<CompiledVariant> decodeEntry(const std::string &entry) {
  size_t line = entry.find('\n');
  unsigned long long programSize = 0, cudaSize = 0, logSize = 0;
  if (line == std::string::npos ||
      std::sscanf(entry.substr(0, line).c_str(), "%llu %llu %llu", &programSize,
                  &cudaSize, &logSize) != 3)
    return std::nullopt;
  size_t at = line + 1;
  if (at + programSize + cudaSize + logSize > entry.size())
    return std::nullopt;
  StatusOr<Program> program =
      Program::deserialize(entry.substr(at, programSize));
  if (!program.ok())
    return std::nullopt;
  CompiledVariant v;
  v.program = std::move(*program);
  at += programSize;
  v.cuda = entry.substr(at, cudaSize);
  at += cudaSize;
  v.ptxasLog = entry.substr(at, logSize);
  at += logSize;
  v.cubin = entry.substr(at);
  v.fromCache = true;
  return v;
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}
} // namespace

StatusOr<CompiledVariant> compileVariant(const std::string &source,
                                         const std::string &fileName,
                                         const CompileOptions &options,
                                         const std::string &cacheDir) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    return nvrtc.status();
  std::string key = cacheKey(source, options, (*nvrtc)->version());

  static std::mutex mutex;
  static std::map<std::string, CompiledVariant> memory;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memory.find(key);
    if (it != memory.end()) {
      CompiledVariant hit = it->second;
      hit.fromCache = true;
      return hit;
    }
  }
  std::optional<jit::DiskCache> disk;
  if (cacheDir != "-")
    disk.emplace(cacheDir.empty() ? jit::DiskCache::defaultDirectory()
                                  : cacheDir);
  if (disk)
    if (std::optional<std::string> entry = disk->get(key))
      if (std::optional<CompiledVariant> hit = decodeEntry(*entry)) {
        std::lock_guard<std::mutex> lock(mutex);
        memory[key] = *hit;
        return *hit;
      }

  CompiledVariant result;
  auto start = std::chrono::steady_clock::now();
  MLIRContext context(MLIRContext::Threading::DISABLED);
  registerAttncDialects(context, options.printOpOnDiagnostic);
  DiagnosticCollector diagnostics(context);
  OwningOpRef<ModuleOp> module = diagnostics.parse(source, fileName);
  if (!module)
    return Status::error(ErrorCode::ParseError, diagnostics.text());
  if (failed(lowerVariant(*module, options, Stage::EmitC, &result.program)) ||
      failed(printCuda(*module, result.cuda)))
    return Status::error(ErrorCode::CompileError, diagnostics.text());
  result.frontendMs = millisecondsSince(start);

  start = std::chrono::steady_clock::now();
  StatusOr<jit::CompiledCode> code =
      (*nvrtc)->compile(result.cuda, options.arch, /*ptx=*/false);
  if (!code.ok())
    return code.status();
  result.cubin = std::move(code->image);
  result.ptxasLog = std::move(code->log);
  result.nvrtcMs = millisecondsSince(start);

  if (disk)
    (void)disk->put(key, encodeEntry(result)); // a cache that cannot be
                                               // written only costs time
  std::lock_guard<std::mutex> lock(mutex);
  memory[key] = result;
  return result;
}

} // namespace attnc
