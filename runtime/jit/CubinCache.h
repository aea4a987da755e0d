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

#include <string>

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

} // namespace attnc::jit

#endif // ATTNC_RUNTIME_JIT_CUBINCACHE_H
