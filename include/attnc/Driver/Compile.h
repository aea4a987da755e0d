//===- Compile.h - a variant to a cubin, through the caches -----*- C++ -*-===//
//
// The back half of the driver: NVRTC, and the content-addressed compile
// caches (in process and on disk) in front of the whole pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DRIVER_COMPILE_H
#define ATTNC_DRIVER_COMPILE_H

#include "attnc/Driver/Pipeline.h"
// The driver sits on the runtime's launch layer: a compiled variant
// carries the Program the executor launches.
#include "exec/Program.h"

#include <map>

namespace attnc {

/// Where a variant's cubin came from.
enum class CubinSource {
  Compiled, // NVRTC and ptxas, in this call
  Memory,   // this process compiled (or loaded) it before
  Disk,     // the disk cache
  Library,  // the prebuilt kernel library (jit::KernelLibrary)
};
/// "compiled", "memory", "disk" or "library".
const char *toString(CubinSource source);

/// A variant compiled all the way: what the caches hold.
struct CompiledVariant {
  Program program;
  std::string cuda;
  std::string cubin;
  std::string ptxasLog;
  /// Summed over the plans compiled (see registerRelief); 0 when it came
  /// from the cache.
  double frontendMs = 0, nvrtcMs = 0;
  /// The part of nvrtcMs that ptxas reports it took (0 where its log says
  /// nothing): the rest is NVRTC's front end and NVVM.
  double ptxasMs = 0;
  /// The attn-plan register-relief the cubin was planned with: above the
  /// asked-for one where a plan with less room had local memory.
  int64_t registerRelief = 0;
  /// Bytes of stack frame, spill stores and spill loads ptxas reported (0
  /// for a kernel that keeps everything in registers).
  int64_t localMemoryBytes = 0;
  /// Why a step of register relief could not be planned or compiled (a
  /// bug: its plans must compile); ok when none failed.
  Status reliefError;
  /// Nothing was compiled by NVRTC for this call: the cubin came from a
  /// cache or the library (cubinSource says which).
  bool fromCache = false;
  CubinSource cubinSource = CubinSource::Compiled;
  /// jit::cubinKey of `cuda`: the cubin's entry in the caches and library.
  std::string cubinKey;
  /// Why this compile could not store its result in the disk cache
  /// (read-only, full, ...); ok when it did or had nothing to store. The
  /// compile itself succeeded: only the next process will pay for it again.
  Status cacheWrite;
};

/// Compiles `source` for `options.arch`, through the in-process cache and
/// the disk cache under `cacheDir` ("" for the default; "-" for none, and
/// then no prebuilt library either: a cold compile). Two levels: a
/// variant's entry (keyed by kernelCacheKey) holds its program, its CUDA
/// and the key of its cubin, so a hit skips attnc's pipeline; the cubin's
/// entry (keyed by jit::cubinKey of the CUDA) holds ptxas's log and the
/// cubin, looked up in memory, the prebuilt library, then the disk, so
/// variants that emit the same CUDA share one NVRTC compile and one cubin.
/// A kernel that ptxas reports local memory for is planned again with
/// attn-plan's register-relief above `options.registerRelief`, up to
/// attn::kMaxRegisterRelief (docs/ARCHITECTURE.md).
/// Safe to call from any number of threads and processes at once: threads
/// asking for a variant that is being compiled wait for that compile and
/// share its result; processes share the disk cache, whose entries are
/// written atomically and verified (key, size, checksum) when read.
StatusOr<CompiledVariant> compileVariant(const std::string &source,
                                         const std::string &fileName,
                                         const CompileOptions &options,
                                         const std::string &cacheDir = "");

/// attn-plan's options as the pass pipeline prints them
/// ("attn-plan{arch=sm_90a cluster-ctas=1 ...}"): every option the pass
/// declares, which the cache key hashes.
std::string plannerOptionsText(const CompileOptions &options);

/// The key of a variant's entry: the SHA-256 of `source`, `options` (every
/// attn-plan option) and what else the program and the CUDA depend on,
/// with `format` naming the entry's format. NVRTC's version is not part of
/// it: the entry holds no cubin, only its key (jit::cubinKey).
std::string kernelCacheKey(const std::string &source,
                           const CompileOptions &options,
                           const std::string &format);

/// Every cubin this process holds in memory (compiled, or found in the
/// disk cache or the library), as key → jit::encodeCubinEntry payload:
/// what `attnc library build` writes.
std::map<std::string, std::string> compiledCubinEntries();

/// Empties the in-process caches, variants' and cubins' (compiles under
/// way finish unaffected), so
/// that a long-running host gets the memory back, or a test reaches the
/// disk cache again. Returns how many variants it held.
size_t forgetCompiledVariants();

} // namespace attnc

#endif // ATTNC_DRIVER_COMPILE_H
