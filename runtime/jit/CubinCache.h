//===- CubinCache.h - runtime kernels compiled once per machine -*- C++ -*-===//
//
// The runtime's own kernels (the KV pool's) are CUDA C++ over the device
// tile library, compiled by NVRTC on first use and kept in the disk cache
// beside the variants' kernels.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_JIT_CUBINCACHE_H
#define ATTNC_RUNTIME_JIT_CUBINCACHE_H

#include "attnc/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnc::jit {

/// A hash of the embedded device tile library: every cache key includes it,
/// so that a change to a header misses the cache.
const std::string &deviceLibraryKey();

/// The cubin of `source` for `arch`: from the disk cache under `cacheDir`
/// ("" for the default directory, "-" for none) when an entry is there,
/// else compiled by NVRTC and stored. A cache that cannot be written only
/// costs the next caller a compile.
StatusOr<std::string> cachedCubin(const std::string &source,
                                  const std::string &arch,
                                  const std::string &cacheDir = "");

/// "attnc-<version>" (CMakeLists.txt), bumped whenever the generated code
/// changes meaning: part of every compile cache key.
const char *compilerVersion();

/// Reads, from `at` in `text`, one decimal size (digits only, at most 19,
/// so no overflow) and the `separator` after it, moving `at` past both;
/// false where there is none. The cache entries' sizes are read with it.
bool readDecimalSize(std::string_view text, size_t &at, char separator,
                     uint64_t &value);

/// The key of a cubin compiled from `cuda` for `arch`, shared by the
/// in-process cubin cache, the prebuilt kernel library and the disk cache:
/// the SHA-256 of attnc's version, the device library (deviceLibraryKey),
/// the arch, NVRTC's options that change the cubin (Nvrtc::cubinOptions)
/// and the CUDA source. It deliberately omits:
/// - NVRTC's version: a cubin for an arch runs whatever NVRTC built it, so
///   a library built with one toolkit serves machines with another (or
///   with none);
/// - attn-plan's options: they act on the cubin only through the CUDA text,
///   so variants planned differently that emit the same CUDA (values that
///   became launch parameters, a comment, a renamed SSA value) share one
///   cubin.
std::string cubinKey(const std::string &cuda, const std::string &arch);

/// A cubin and ptxas's report of it. The report travels with the cubin
/// (disk entries, the library): the register relief reads its local memory.
struct CubinEntry {
  std::string ptxasLog;
  std::string cubin;
};
/// A cubin entry's payload: the log's size in decimal, a newline, the log,
/// the cubin.
std::string encodeCubinEntry(const CubinEntry &entry);
/// The entry `payload` holds, or nothing when it is not one (sizes that do
/// not fit, no cubin).
std::optional<CubinEntry> decodeCubinEntry(std::string_view payload);

} // namespace attnc::jit

#endif // ATTNC_RUNTIME_JIT_CUBINCACHE_H
