//===- Compile.cpp - a variant to a cubin, through the compile caches -----===//
//
// Two levels of entries. A variant's (keyed by its MLIR text and planner
// options) holds the program, the CUDA source, the register relief its
// plan took and the key of its cubin; a cubin's (keyed by jit::cubinKey of
// the CUDA) holds ptxas's log and the cubin, and is shared by every variant
// that emits that CUDA. One compile per key at a time in a process; the
// disk cache is shared by processes; the prebuilt library is read-only.
//
//===----------------------------------------------------------------------===//

#include "attnc/Driver/Compile.h"

#include "attnc/Transforms/Passes.h"
#include "jit/CubinCache.h"
#include "jit/DiskCache.h"
#include "jit/KernelLibrary.h"
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

std::string plannerOptionsText(const CompileOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::attn::createAttnPlan(options)->printAsTextualPipeline(os);
  return text;
}

std::string kernelCacheKey(const std::string &source, const CompileOptions &o,
                           const std::string &format) {
  return contentKey(std::string(jit::compilerVersion()) + "\n" +
                    jit::deviceLibraryKey() + "\n" + plannerOptionsText(o) +
                    "\n" + format + "\n" + source);
}

const char *toString(CubinSource source) {
  switch (source) {
  case CubinSource::Compiled:
    return "compiled";
  case CubinSource::Memory:
    return "memory";
  case CubinSource::Disk:
    return "disk";
  case CubinSource::Library:
    return "library";
  }
  return "compiled";
}

namespace {

/// Names the format of variants' entries in their key, so that entries of
/// an older format (which held the cubin) are never read as this one.
constexpr const char *kVariantEntryFormat = "variant entry 2";

/// A variant's entry: its program, its CUDA, the register relief of the
/// plan kept, and its cubin's key; the cubin is an entry of its own, so
/// variants that emit the same CUDA store it once.
std::string encodeVariantEntry(const CompiledVariant &v) {
  std::string program = v.program.serialize();
  return std::to_string(program.size()) + " " + std::to_string(v.cuda.size()) +
         " " + std::to_string(v.registerRelief) + "\n" + program + v.cuda +
         v.cubinKey;
}

/// The disk cache has checked the entry's key, size and checksum; this
/// checks that its parts fit in it, without overflow (the sizes are read
/// from the file), and that what is left is a cubin key. The cubin is not
/// there: the caller looks it up.
std::optional<CompiledVariant> decodeVariantEntry(const std::string &entry) {
  size_t at = 0;
  uint64_t programSize = 0, cudaSize = 0, relief = 0;
  if (!jit::readDecimalSize(entry, at, ' ', programSize) ||
      !jit::readDecimalSize(entry, at, ' ', cudaSize) ||
      !jit::readDecimalSize(entry, at, '\n', relief) ||
      relief > uint64_t(attn::kMaxRegisterRelief))
    return std::nullopt;
  uint64_t left = entry.size() - at;
  if (programSize > left || cudaSize > left - programSize)
    return std::nullopt;
  std::string cubinKey = entry.substr(at + programSize + cudaSize);
  if (cubinKey.size() != 64 || !jit::DiskCache::isValidKey(cubinKey))
    return std::nullopt;
  StatusOr<Program> program =
      Program::deserialize(entry.substr(at, programSize));
  if (!program.ok())
    return std::nullopt;
  CompiledVariant v;
  v.program = std::move(*program);
  v.cuda = entry.substr(at + programSize, cudaSize);
  v.cubinKey = std::move(cubinKey);
  v.registerRelief = int64_t(relief);
  return v;
}

using CompileResult = StatusOr<CompiledVariant>;

/// A cubin found or compiled, and where it came from.
struct FoundCubin {
  jit::CubinEntry entry;
  CubinSource source = CubinSource::Compiled;
};
using CubinResult = StatusOr<FoundCubin>;

/// The in-process caches, and the compiles under way: a thread asking for a
/// variant (or a cubin) another thread is compiling waits for that result
/// rather than run the pipeline and NVRTC again. Never destroyed, so that a
/// thread still compiling while the process exits finds it alive.
struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, CompiledVariant> done;
  std::map<std::string, std::shared_future<CompileResult>> underWay;
  /// Cubins by jit::cubinKey: those done, and those under way. A slot is
  /// only erased by the thread that made it (or forgetCompiledVariants).
  struct CubinSlot {
    std::shared_future<CubinResult> result;
  };
  std::map<std::string, std::shared_ptr<CubinSlot>> cubins;
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
    result->cubinSource = CubinSource::Memory;
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
  result.cubinKey = jit::cubinKey(result.cuda, options.arch);
  return result;
}

/// One line of progress, where the caller asked for it.
void tell(const CompileOptions &options, const std::string &line) {
  if (options.progress)
    options.progress(line);
}

/// Where a compile looks for cubins beyond memory: the prebuilt library
/// and the disk cache (neither for a cold compile, cacheDir "-").
struct CubinStores {
  const jit::KernelLibrary *library = nullptr;
  std::optional<jit::DiskCache> disk;
  /// Why a cubin or variant entry could not be stored (the first reason).
  Status cacheWrite;
  /// Whether the caller was told that NVRTC runs.
  bool announced = false;

  explicit CubinStores(const std::string &cacheDir) {
    if (cacheDir == "-")
      return;
    library = jit::KernelLibrary::shared();
    disk.emplace(cacheDir.empty() ? jit::DiskCache::defaultDirectory()
                                  : cacheDir);
  }
  void put(const std::string &key, const std::string &payload) {
    if (!disk)
      return;
    Status status = disk->put(key, payload);
    if (cacheWrite.ok() && !status.ok())
      cacheWrite = status;
  }
};

/// The cubin under `key` in the prebuilt library, else the disk cache.
/// Compiles are never answered from the CUDA driver's compute cache, whose
/// answers carry no ptxas report (the relief reads it; attnc's own caches
/// serve repeats).
std::optional<FoundCubin> findStoredCubin(const std::string &key,
                                          const CubinStores &stores) {
  if (stores.library) {
    bool corrupt = false;
    if (std::optional<std::string_view> payload =
            stores.library->find(key, &corrupt))
      if (std::optional<jit::CubinEntry> entry =
              jit::decodeCubinEntry(*payload))
        return FoundCubin{std::move(*entry), CubinSource::Library};
    if (corrupt)
      jit::KernelLibrary::warnOnce("kernel library " + stores.library->path() +
                                   ": entry " + key +
                                   " does not match its checksum");
  }
  if (stores.disk)
    if (std::optional<std::string> payload = stores.disk->get(key))
      if (std::optional<jit::CubinEntry> entry =
              jit::decodeCubinEntry(*payload))
        return FoundCubin{std::move(*entry), CubinSource::Disk};
  return std::nullopt;
}

/// findStoredCubin, else NVRTC and ptxas (whose cubin is stored on disk).
CubinResult findOrCompileCubin(const CompiledVariant &variant,
                               const std::string &fileName,
                               const CompileOptions &options,
                               CubinStores &stores) {
  const std::string &key = variant.cubinKey;
  if (std::optional<FoundCubin> found = findStoredCubin(key, stores))
    return std::move(*found);
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    return nvrtc.status();
  // Said once per variant: the relief's further compiles say their own line.
  if (!stores.announced)
    tell(options,
         "compiling " + fileName + " for " + options.arch + " with NVRTC (" +
             (stores.disk ? "not in the kernel cache)" : "no disk cache)"));
  stores.announced = true;
  StatusOr<jit::CompiledCode> code = (*nvrtc)->compile(
      variant.cuda, options.arch, /*ptx=*/false, /*driverCache=*/false);
  if (!code.ok())
    return code.status();
  FoundCubin found{{std::move(code->log), std::move(code->image)},
                   CubinSource::Compiled};
  stores.put(key, jit::encodeCubinEntry(found.entry));
  return found;
}

/// Fills in the variant's cubin, log and where they came from.
void useCubin(CompiledVariant &variant, FoundCubin found) {
  variant.cubin = std::move(found.entry.cubin);
  variant.ptxasLog = std::move(found.entry.ptxasLog);
  variant.cubinSource = found.source;
  variant.fromCache = found.source != CubinSource::Compiled;
  variant.localMemoryBytes = jit::localMemoryBytes(variant.ptxasLog);
}

/// The cubin of `variant.cuda`, from memory or through findOrCompileCubin,
/// once per key in the process at a time; fills in the variant's cubin,
/// log and times.
Status attachCubin(CompiledVariant &variant, const std::string &fileName,
                   const CompileOptions &options, CubinStores &stores) {
  auto start = std::chrono::steady_clock::now();
  MemoryCache &cache = memoryCache();
  std::shared_ptr<MemoryCache::CubinSlot> mine, theirs;
  std::promise<CubinResult> promise;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.cubins.find(variant.cubinKey);
        it != cache.cubins.end()) {
      theirs = it->second;
    } else {
      mine = std::make_shared<MemoryCache::CubinSlot>();
      mine->result = promise.get_future().share();
      cache.cubins.emplace(variant.cubinKey, mine);
    }
  }
  CubinResult result = Status();
  if (theirs) {
    result = theirs->result.get();
    if (result.ok())
      result->source = CubinSource::Memory;
  } else {
    result = findOrCompileCubin(variant, fileName, options, stores);
    if (!result.ok()) {
      // A failed compile is not kept: the next call tries again.
      std::lock_guard<std::mutex> lock(cache.mutex);
      if (auto it = cache.cubins.find(variant.cubinKey);
          it != cache.cubins.end() && it->second == mine)
        cache.cubins.erase(it);
    }
    promise.set_value(result);
  }
  if (!result.ok())
    return result.status();
  useCubin(variant, *result);
  if (!variant.fromCache) {
    variant.ptxasMs = jit::ptxasMilliseconds(variant.ptxasLog);
    variant.nvrtcMs = millisecondsSince(start);
  }
  return Status();
}

/// The cubin of a variant's disk entry, from memory (a finished compile),
/// the library or the disk; false when none of them has it.
bool findCubin(CompiledVariant &variant, const CubinStores &stores) {
  std::shared_ptr<MemoryCache::CubinSlot> slot;
  {
    MemoryCache &cache = memoryCache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.cubins.find(variant.cubinKey); it != cache.cubins.end())
      slot = it->second;
  }
  if (slot && slot->result.wait_for(std::chrono::seconds(0)) ==
                  std::future_status::ready) {
    if (const CubinResult &done = slot->result.get(); done.ok()) {
      useCubin(variant, FoundCubin{done->entry, CubinSource::Memory});
      return true;
    }
  }
  if (std::optional<FoundCubin> found =
          findStoredCubin(variant.cubinKey, stores)) {
    useCubin(variant, std::move(*found));
    return true;
  }
  return false;
}

/// The pipeline and a cubin for each plan. attn-plan's register model is
/// measured, not exact: while ptxas reports local memory, the variant is
/// planned again with more register room (attn-plan's register-relief),
/// and the first kernel without any is kept (else the one with the least,
/// the first of equals). A step that plans the CUDA of the step before is
/// not compiled again; each step's cubin may come from a cache or the
/// library, whose entries carry ptxas's report for this loop. A step that
/// fails keeps the kernel it would have replaced, and says why in
/// reliefError: a plan the relief makes must compile, and the property
/// tests hold it to that.
CompileResult lowerAndCompile(const std::string &source,
                              const std::string &fileName,
                              const CompileOptions &options,
                              CubinStores &stores) {
  CompileOptions attempt = options;
  CompileResult best = lower(source, fileName, attempt);
  if (!best.ok())
    return best;
  if (Status status = attachCubin(*best, fileName, options, stores);
      !status.ok())
    return status;
  double frontendMs = best->frontendMs, nvrtcMs = best->nvrtcMs,
         ptxasMs = best->ptxasMs;
  bool compiledAny = !best->fromCache;
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
    if (Status status = attachCubin(*next, fileName, options, stores);
        !status.ok()) {
      reliefError = status;
      break;
    }
    nvrtcMs += next->nvrtcMs;
    ptxasMs += next->ptxasMs;
    compiledAny |= !next->fromCache;
    if (next->localMemoryBytes < best->localMemoryBytes)
      best = std::move(next);
  }
  best->frontendMs = frontendMs;
  best->nvrtcMs = nvrtcMs;
  best->ptxasMs = ptxasMs;
  best->reliefError = reliefError;
  // A relief step that ran NVRTC makes this call a compile, whatever cache
  // the kept cubin came from.
  best->fromCache = !compiledAny;
  return best;
}

/// The variant's disk entry and its cubin, else the pipeline and cubins.
CompileResult compileUncached(const std::string &key, const std::string &source,
                              const std::string &fileName,
                              const CompileOptions &options,
                              const std::string &cacheDir) {
  CubinStores stores(cacheDir);
  if (stores.disk)
    if (std::optional<std::string> entry = stores.disk->get(key))
      if (std::optional<CompiledVariant> hit = decodeVariantEntry(*entry)) {
        // A cubin that is gone (pruned, garbled) is compiled again below,
        // through the pipeline: the entry's CUDA alone would skip the
        // relief's steps, whose cubins the library and other variants
        // share.
        if (findCubin(*hit, stores))
          return *hit;
      }

  auto start = std::chrono::steady_clock::now();
  CompileResult compiled = lowerAndCompile(source, fileName, options, stores);
  // A cache that cannot be written only costs time; the caller may say so.
  if (compiled.ok()) {
    // A variant's entry is only of use with its cubin's: where that could
    // not be stored, neither is the variant's.
    if (stores.cacheWrite.ok())
      stores.put(key, encodeVariantEntry(*compiled));
    compiled->cacheWrite = stores.cacheWrite;
    if (!compiled->fromCache)
      tell(options,
           "compiled " + fileName + " in " +
               std::to_string(int64_t(millisecondsSince(start) + 0.5)) + " ms");
  }
  return compiled;
}

} // namespace

StatusOr<CompiledVariant> compileVariant(const std::string &source,
                                         const std::string &fileName,
                                         const CompileOptions &options,
                                         const std::string &cacheDir) {
  std::string key = kernelCacheKey(source, options, kVariantEntryFormat);

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
      compileUncached(key, source, fileName, options, cacheDir);
  compiler->publish(result);
  return result;
}

std::map<std::string, std::string> compiledCubinEntries() {
  std::vector<std::pair<std::string, std::shared_future<CubinResult>>> ready;
  {
    MemoryCache &cache = memoryCache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    for (const auto &[key, slot] : cache.cubins)
      ready.emplace_back(key, slot->result);
  }
  std::map<std::string, std::string> entries;
  for (const auto &[key, result] : ready) {
    // Only those done: a compile still under way is not waited for.
    if (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      continue;
    const CubinResult &got = result.get();
    if (got.ok())
      entries.emplace(key, jit::encodeCubinEntry(got->entry));
  }
  return entries;
}

size_t forgetCompiledVariants() {
  MemoryCache &cache = memoryCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  size_t count = cache.done.size();
  cache.done.clear();
  cache.cubins.clear();
  return count;
}

} // namespace attnc
