//===- PoolKernels.h - the kernels that write a device KV pool --*- C++ -*-===//
//
// appendSlots and copyPages (attnc/device/kv_pool.h) compiled for one pool
// layout: the host emits the layout as the kernels' config, so that the
// caches' layout is written once, in PoolConfig, and flows to the device.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_KV_POOLKERNELS_H
#define ATTNC_RUNTIME_KV_POOLKERNELS_H

#include "attnc/device/kv_pool.h"
#include "cuda/CudaDriver.h"

#include <string>

namespace attnc {

struct PoolConfig;

class PoolKernels {
public:
  /// The kernels' CUDA source for `config`'s layout.
  static std::string source(const PoolConfig &config);
  /// Compiles (or finds in the disk cache) and loads the kernels.
  static StatusOr<PoolKernels> load(cuda::Driver &driver,
                                    const PoolConfig &config,
                                    const std::string &cacheDir = "");

  Status append(const AppendParams &params, cuda::CUstream stream) const;
  Status copyPages(const CopyPagesParams &params, cuda::CUstream stream) const;

private:
  cuda::Driver *driver_ = nullptr;
  cuda::CUfunction append_ = nullptr;
  cuda::CUfunction copy_ = nullptr;
  int multiprocessors_ = 1;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_KV_POOLKERNELS_H
