//===- Compile.cpp - a variant to a cubin, through the compile caches -----===//
//
// The cache key covers everything the cubin depends on; an entry holds the
// program, the CUDA source, the ptxas log and the cubin, length-prefixed,
// and the register relief their plan took. One compile per key at a time in
// a process; the disk cache is shared by processes.
//
//===----------------------------------------------------------------------===//

#include "attnc/Driver/Compile.h"

#include "attnc/Transforms/Passes.h"
#include "jit/CubinCache.h"
#include "jit/DiskCache.h"
#include "jit/Nvrtc.h"
#include "support/Hash.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <optional>

using namespace mlir;

namespace attnc {

namespace {
/// The project version (CMakeLists.txt), bumped whenever the generated code
/// changes meaning.
constexpr const char *kCompilerVersion = "attnc-" ATTNC_VERSION;

} // namespace

std::string plannerOptionsText(const CompileOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::attn::createAttnPlan(options)->printAsTextualPipeline(os);
  return text;
}

std::string kernelCacheKey(const std::string &source, const CompileOptions &o,
                           const std::string &nvrtcVersion) {
  return contentKey(std::string(kCompilerVersion) + "\n" +
                    jit::deviceLibraryKey() + "\n" + plannerOptionsText(o) +
                    "\n" + nvrtcVersion + "\n" + source);
}

namespace {

std::string encodeEntry(const CompiledVariant &v) {
  std::string program = v.program.serialize();
  return std::to_string(program.size()) + " " + std::to_string(v.cuda.size()) +
         " " + std::to_string(v.ptxasLog.size()) + " " +
         std::to_string(v.registerRelief) + "\n" + program + v.cuda +
         v.ptxasLog + v.cubin;
}

/// Reads one decimal size and the separator after it; digits only, no
/// overflow.
bool readSize(const std::string &text, size_t &at, char separator,
              uint64_t &value) {
  size_t begin = at;
  value = 0;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
    if (at - begin >= 19)
      return false;
    value = value * 10 + uint64_t(text[at++] - '0');
  }
  return at > begin && at < text.size() && text[at++] == separator;
}

/// The disk cache has checked the entry's key, size and checksum; this
/// checks that its parts fit in it, without overflow (the sizes are read
/// from the file), and that there is a cubin.
std::optional<CompiledVariant> decodeEntry(const std::string &entry) {
  size_t at = 0;
  uint64_t programSize = 0, cudaSize = 0, logSize = 0, relief = 0;
  if (!readSize(entry, at, ' ', programSize) ||
      !readSize(entry, at, ' ', cudaSize) ||
      !readSize(entry, at, ' ', logSize) ||
      !readSize(entry, at, '\n', relief) ||
      relief > uint64_t(attn::kMaxRegisterRelief))
    return std::nullopt;
  uint64_t left = entry.size() - at;
  if (programSize > left || cudaSize > left - programSize ||
      logSize > left - programSize - cudaSize ||
      programSize + cudaSize + logSize == left)
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
  v.registerRelief = int64_t(relief);
  v.localMemoryBytes = jit::localMemoryBytes(v.ptxasLog);
  v.fromCache = true;
  return v;
}

using CompileResult = StatusOr<CompiledVariant>;

/// The in-process cache, and the compiles under way: a thread asking for a
/// variant another thread is compiling waits for that result rather than
/// run the pipeline and NVRTC again. Never destroyed, so that a thread still
/// compiling while the process exits finds it alive.
struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, CompiledVariant> done;
  std::map<std::string, std::shared_future<CompileResult>> underWay;
};
MemoryCache &memoryCache() {
  static MemoryCache *cache = new MemoryCache();
  return *cache;
}

/// The thread that compiles a key: publishes its result to the waiters and
/// the cache, on every path out (an exception included).
class Compiler {
public:
  Compiler(MemoryCache &cache, std::string key)
      : cache_(cache), key_(std::move(key)) {}
  std::shared_future<CompileResult> future() {
    return promise_.get_future().share();
  }
  void publish(const CompileResult &result) {
    {
      std::lock_guard<std::mutex> lock(cache_.mutex);
      if (result.ok())
        cache_.done[key_] = *result;
      cache_.underWay.erase(key_);
    }
    promise_.set_value(result);
    published_ = true;
  }
  ~Compiler() {
    if (!published_)
      publish(Status::error(ErrorCode::Internal,
                            "the compile of this variant was abandoned"));
  }

private:
  MemoryCache &cache_;
  std::string key_;
  std::promise<CompileResult> promise_;
  bool published_ = false;
};

/// What a variant compiled by another thread, or found in memory, is to
/// this caller: a cache hit.
CompileResult asHit(CompileResult result) {
  if (result.ok()) {
    result->fromCache = true;
    result->frontendMs = result->nvrtcMs = result->ptxasMs = 0;
    result->cacheWrite = Status();
  }
  return result;
}

double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// The pipeline at `options.registerRelief`: the program and its CUDA.
CompileResult lower(const std::string &source, const std::string &fileName,
                    const CompileOptions &options) {
  CompiledVariant result;
  result.registerRelief = options.registerRelief;
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
  return result;
}

/// One line of progress, where the caller asked for it.
void tell(const CompileOptions &options, const std::string &line) {
  if (options.progress)
    options.progress(line);
}

/// NVRTC and ptxas on `variant.cuda`: its cubin and ptxas's log. Never
/// from the CUDA driver's compute cache, whose answers carry no ptxas
/// report (the relief below reads it; attnc's own caches serve repeats).
Status compileCuda(CompiledVariant &variant, const std::string &arch,
                   jit::Nvrtc &nvrtc) {
  auto start = std::chrono::steady_clock::now();
  StatusOr<jit::CompiledCode> code =
      nvrtc.compile(variant.cuda, arch, /*ptx=*/false, /*driverCache=*/false);
  if (!code.ok())
    return code.status();
  variant.cubin = std::move(code->image);
  variant.ptxasLog = std::move(code->log);
  variant.localMemoryBytes = jit::localMemoryBytes(variant.ptxasLog);
  variant.ptxasMs = jit::ptxasMilliseconds(variant.ptxasLog);
  variant.nvrtcMs = millisecondsSince(start);
  return Status();
}

/// The pipeline and NVRTC. attn-plan's register model is measured, not
/// exact: while ptxas reports local memory, the variant is planned again
/// with more register room (attn-plan's register-relief), and the first
/// kernel without any is kept (else the one with the least, the first of
/// equals). A step that plans the CUDA of the step before is not compiled
/// again. A step that fails keeps the kernel it would have replaced, and
/// says why in reliefError: a plan the relief makes must compile, and the
/// property tests hold it to that.
CompileResult lowerAndCompile(const std::string &source,
                              const std::string &fileName,
                              const CompileOptions &options, jit::Nvrtc &nvrtc,
                              bool diskCache) {
  CompileOptions attempt = options;
  CompileResult best = lower(source, fileName, attempt);
  if (!best.ok())
    return best;
  tell(options,
       "compiling " + fileName + " for " + options.arch + " with NVRTC (" +
           (diskCache ? "not in the kernel cache)" : "no disk cache)"));
  if (Status status = compileCuda(*best, options.arch, nvrtc); !status.ok())
    return status;
  double frontendMs = best->frontendMs, nvrtcMs = best->nvrtcMs,
         ptxasMs = best->ptxasMs;
  std::string lastCuda = best->cuda;
  Status reliefError;
  while (best->localMemoryBytes > 0 &&
         attempt.registerRelief < attn::kMaxRegisterRelief) {
    ++attempt.registerRelief;
    tell(options, fileName + ": ptxas reported " +
                      std::to_string(best->localMemoryBytes) +
                      " bytes of local memory; planning it again with "
                      "register relief " +
                      std::to_string(attempt.registerRelief));
    CompileResult next = lower(source, fileName, attempt);
    if (!next.ok()) {
      reliefError = next.status();
      break;
    }
    frontendMs += next->frontendMs;
    if (next->cuda == lastCuda)
      continue;
    lastCuda = next->cuda;
    if (Status status = compileCuda(*next, options.arch, nvrtc); !status.ok()) {
      reliefError = status;
      break;
    }
    nvrtcMs += next->nvrtcMs;
    ptxasMs += next->ptxasMs;
    if (next->localMemoryBytes < best->localMemoryBytes)
      best = std::move(next);
  }
  best->frontendMs = frontendMs;
  best->nvrtcMs = nvrtcMs;
  best->ptxasMs = ptxasMs;
  best->reliefError = reliefError;
  return best;
}

/// The disk cache, then the pipeline and NVRTC.
CompileResult compileUncached(const std::string &key, const std::string &source,
                              const std::string &fileName,
                              const CompileOptions &options,
                              const std::string &cacheDir, jit::Nvrtc &nvrtc) {
  std::optional<jit::DiskCache> disk;
  if (cacheDir != "-")
    disk.emplace(cacheDir.empty() ? jit::DiskCache::defaultDirectory()
                                  : cacheDir);
  if (disk)
    if (std::optional<std::string> entry = disk->get(key))
      if (std::optional<CompiledVariant> hit = decodeEntry(*entry))
        return *hit;

  auto start = std::chrono::steady_clock::now();
  CompileResult compiled =
      lowerAndCompile(source, fileName, options, nvrtc, disk.has_value());
  // A cache that cannot be written only costs time; the caller may say so.
  if (compiled.ok() && disk)
    compiled->cacheWrite = disk->put(key, encodeEntry(*compiled));
  if (compiled.ok())
    tell(options, "compiled " + fileName + " in " +
                      std::to_string(int64_t(millisecondsSince(start) + 0.5)) +
                      " ms");
  return compiled;
}

} // namespace

StatusOr<CompiledVariant> compileVariant(const std::string &source,
                                         const std::string &fileName,
                                         const CompileOptions &options,
                                         const std::string &cacheDir) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    return nvrtc.status();
  std::string key = kernelCacheKey(source, options, (*nvrtc)->version());

  MemoryCache &cache = memoryCache();
  std::optional<Compiler> compiler;
  std::shared_future<CompileResult> underWay;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.done.find(key); it != cache.done.end())
      return asHit(it->second);
    if (auto it = cache.underWay.find(key); it != cache.underWay.end()) {
      underWay = it->second;
    } else {
      compiler.emplace(cache, key);
      cache.underWay.emplace(key, compiler->future());
    }
  }
  if (!compiler)
    return asHit(underWay.get());
  CompileResult result =
      compileUncached(key, source, fileName, options, cacheDir, **nvrtc);
  compiler->publish(result);
  return result;
}

size_t forgetCompiledVariants() {
  MemoryCache &cache = memoryCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  size_t count = cache.done.size();
  cache.done.clear();
  return count;
}

} // namespace attnc
