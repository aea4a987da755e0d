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

namespace attnc {

/// A variant compiled all the way: what the cache stores.
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
  bool fromCache = false;
  /// Why this compile could not store its result in the disk cache
  /// (read-only, full, ...); ok when it did or had nothing to store. The
  /// compile itself succeeded: only the next process will pay for it again.
  Status cacheWrite;
};

/// Compiles `source` for `options.arch`, through the disk cache under
/// `cacheDir` ("" for the default; "-" for none) and the in-process cache.
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

/// The kernel caches' key of `source` compiled with `options` by NVRTC
/// `nvrtcVersion`: the SHA-256 of everything the kernel depends on, every
/// attn-plan option among it.
std::string kernelCacheKey(const std::string &source,
                           const CompileOptions &options,
                           const std::string &nvrtcVersion);

/// Empties the in-process cache (compiles under way finish unaffected), so
/// that a long-running host gets the memory back, or a test reaches the
/// disk cache again. Returns how many variants it held.
size_t forgetCompiledVariants();

} // namespace attnc

#endif // ATTNC_DRIVER_COMPILE_H
