//===- PoolKernels.cpp - the kernels that write a device KV pool ----------===//

#include "kv/PoolKernels.h"

#include "jit/CubinCache.h"
#include "kv/PagedKVPool.h"

#include <algorithm>

namespace attnc {

namespace {
constexpr unsigned kThreads = 256;
constexpr const char *kAppendEntry = "attnc_kv_append_slots";
constexpr const char *kCopyEntry = "attnc_kv_copy_pages";
} // namespace

std::string PoolKernels::source(const PoolConfig &config) {
  auto line = [](const char *name, int64_t value) {
    return std::string("  static constexpr int ") + name + " = " +
           std::to_string(value) + ";\n";
  };
  return std::string("#include \"attnc/device/kv_pool.h\"\n\n"
                     "struct PoolConfig {\n") +
         line("kPageSize", config.pageSize) +
         line("kKVHeads", config.numKVHeads) +
         line("kHeadDim", config.headDim) +
         line("kElementBytes", config.elementBytes) +
         "  static constexpr attnc::PageOrder kPageOrder = " +
         spelling(config.order) +
         ";\n};\n\n"
         "extern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(kThreads) + ") " + kAppendEntry +
         "(const __grid_constant__ attnc::AppendParams p) {\n"
         "  attnc::appendSlots<PoolConfig>(p);\n}\n\n"
         "extern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(kThreads) + ") " + kCopyEntry +
         "(const __grid_constant__ attnc::CopyPagesParams p) {\n"
         "  attnc::copyPages<PoolConfig>(p);\n}\n";
}

StatusOr<PoolKernels> PoolKernels::load(cuda::Driver &driver,
                                        const PoolConfig &config,
                                        const std::string &cacheDir) {
  StatusOr<std::string> cubin =
      jit::cachedCubin(source(config), driver.device().arch(), cacheDir);
  if (!cubin.ok())
    return cubin.status();
  StatusOr<cuda::CUmodule> module = driver.loadModule(cubin->data());
  if (!module.ok())
    return module.status();
  PoolKernels kernels;
  kernels.driver_ = &driver;
  StatusOr<cuda::CUfunction> append = driver.getFunction(*module, kAppendEntry);
  if (!append.ok())
    return append.status();
  StatusOr<cuda::CUfunction> copy = driver.getFunction(*module, kCopyEntry);
  if (!copy.ok())
    return copy.status();
  kernels.append_ = *append;
  kernels.copy_ = *copy;
  kernels.multiprocessors_ = std::max(driver.device().multiprocessors, 1);
  return kernels;
}

Status PoolKernels::append(const AppendParams &params,
                           cuda::CUstream stream) const {
  if (params.tokens == 0)
    return Status();
  // Enough CTAs to fill the GPU a few times; each strides over the rest.
  int64_t work = params.tokens * 64;
  unsigned ctas = unsigned(std::clamp<int64_t>(
      (work + kThreads - 1) / kThreads, 1, int64_t(multiprocessors_) * 8));
  AppendParams copy = params;
  return driver_->launch(append_, ctas, 1, 1, kThreads, 0, stream, &copy,
                         sizeof(copy));
}

Status PoolKernels::copyPages(const CopyPagesParams &params,
                              cuda::CUstream stream) const {
  if (params.count == 0)
    return Status();
  if (params.count < 0 || params.count > kMaxPageCopies)
    return Status::error(ErrorCode::InvalidArgument,
                         "a launch copies 0 to " +
                             std::to_string(kMaxPageCopies) + " pages, got " +
                             std::to_string(params.count));
  if (params.layers < 1 || params.layers > kMaxPoolLayers)
    return Status::error(ErrorCode::InvalidArgument,
                         "a launch copies in 1 to " +
                             std::to_string(kMaxPoolLayers) + " layers, got " +
                             std::to_string(params.layers));
  CopyPagesParams copy = params;
  return driver_->launch(copy_, 8, unsigned(params.count),
                         unsigned(params.layers), kThreads, 0, stream, &copy,
                         sizeof(copy));
}

} // namespace attnc
