//===- Compile.h - a variant to a cubin, through the caches -----*- C++ -*-===//
//
// The back half of the driver: NVRTC, and the content-addressed compile
// caches (in process and on disk) in front of the whole pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DRIVER_COMPILE_H
#define ATTNC_DRIVER_COMPILE_H

#include "attnc/Driver/Pipeline.h"

namespace attnc {

/// A variant compiled all the way: what the cache stores.
struct CompiledVariant {
  Program program;
  std::string cuda;
  std::string cubin;
  std::string ptxasLog;
  double frontendMs = 0, nvrtcMs = 0; // 0 when it came from the cache
  bool fromCache = false;
};

/// Compiles `source` for `options.arch`, through the disk cache under
/// `cacheDir` ("" for the default; "-" for none) and the in-process cache.
StatusOr<CompiledVariant> compileVariant(const std::string &source,
                                         const std::string &fileName,
                                         const CompileOptions &options,
                                         const std::string &cacheDir = "");

} // namespace attnc

#endif // ATTNC_DRIVER_COMPILE_H
