//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The subset of libcuda attnc uses, declared here so no CUDA header is
// needed to build, and loaded with dlopen so a machine without a GPU gets an
// error value (NoDevice) instead of a failure to start. Every call is
// checked and turned into a Status that names the call and CUDA's message.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_CUDA_CUDADRIVER_H
#define ATTNC_RUNTIME_CUDA_CUDADRIVER_H

#include "attnc/Status.h"
#include "cuda/TensorMap.h"
#include "support/DynamicLibrary.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace attnc::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
struct LaunchConfig; // cuLaunchKernelEx's CUlaunchConfig (CudaDriver.cpp)

/// Device properties the planner and launcher need.
struct DeviceInfo {
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  int sharedMemoryPerBlockOptin = 0;
  int l2CacheBytes = 0;
  /// "sm_90a" for Hopper (the arch-specific target), "sm_NN" otherwise.
  std::string arch() const;
};

class Driver {
public:
  /// Loads libcuda, initializes it and retains device 0's primary context;
  /// fails with NoDevice when there is no driver or no GPU. Every method
  /// makes that context current on a thread that has none, so that any
  /// thread may use the driver.
  static StatusOr<Driver *> get();

  const DeviceInfo &device() const { return device_; }

  StatusOr<CUdeviceptr> allocate(size_t bytes);
  Status free(CUdeviceptr ptr);
  Status copyToDevice(CUdeviceptr dst, const void *src, size_t bytes);
  Status copyToHost(void *dst, CUdeviceptr src, size_t bytes);
  Status fill(CUdeviceptr dst, unsigned char byte, size_t bytes);
  Status synchronize();

  /// Page-locked host memory, which the GPU's copy engines read and write
  /// while the host goes on, mapped into the device's address space so that
  /// kernels reach it too (devicePointerOf): OutOfMemory when the driver
  /// cannot pin `bytes`.
  StatusOr<void *> allocatePinned(size_t bytes);
  /// The address kernels reach pinned memory `host` at.
  StatusOr<CUdeviceptr> devicePointerOf(void *host);
  Status freePinned(void *ptr);
  StatusOr<CUmodule> loadModule(const void *image);
  StatusOr<CUfunction> getFunction(CUmodule module, const std::string &name);
  Status setSharedMemory(CUfunction function, int bytes);
  /// CTAs of `function` one multiprocessor holds at once.
  StatusOr<int> residentBlocks(CUfunction function, int threads,
                               int sharedBytes);
  /// Launches `function` with `params` as its one by-value argument. With
  /// `overlapsPrevious`, the launch may begin while the kernel before it in
  /// the stream drains (programmatic dependent launch): only for kernels
  /// that wait on the grids before them (griddepcontrol.wait) before they
  /// touch global memory. Without cuLaunchKernelEx in the driver it is an
  /// ordinary launch, which such a kernel also runs correctly.
  Status launch(CUfunction function, unsigned gridX, unsigned gridY,
                unsigned gridZ, unsigned threads, unsigned sharedBytes,
                CUstream stream, void *params, size_t paramBytes,
                bool overlapsPrevious = false);

  /// Encodes a tensor map for the bulk tensor copy (TensorMap.h). An
  /// Unsupported error on a driver without cuTensorMapEncodeTiled.
  Status encodeTensorMap(hopper::TensorMap &map, const TensorMapArgs &args);

  StatusOr<CUevent> createEvent();
  Status record(CUevent event, CUstream stream);
  /// Milliseconds between two recorded events (synchronizes on `end`).
  StatusOr<float> elapsed(CUevent begin, CUevent end);

private:
  friend StatusOr<Driver *> attnc::loadOnce<Driver>();
  Driver() = default;
  Status check(CUresult result, const char *call) const;
  Status load();
  /// Makes the primary context current on the calling thread, once per
  /// thread, unless the caller made a context current there already.
  Status enter();

  DeviceInfo device_;
  CUcontext context_ = nullptr;
#define ATTNC_CUDA_FUNCTIONS(X)                                                \
  X(cuInit, CUresult(unsigned))                                                \
  X(cuDeviceGetCount, CUresult(int *))                                         \
  X(cuDeviceGet, CUresult(CUdevice *, int))                                    \
  X(cuDeviceGetName, CUresult(char *, int, CUdevice))                          \
  X(cuDeviceGetAttribute, CUresult(int *, int, CUdevice))                      \
  X(cuDevicePrimaryCtxRetain, CUresult(CUcontext *, CUdevice))                 \
  X(cuCtxSetCurrent, CUresult(CUcontext))                                      \
  X(cuCtxGetCurrent, CUresult(CUcontext *))                                    \
  X(cuCtxSynchronize, CUresult())                                              \
  X(cuGetErrorString, CUresult(CUresult, const char **))                       \
  X(cuMemAlloc_v2, CUresult(CUdeviceptr *, size_t))                            \
  X(cuMemFree_v2, CUresult(CUdeviceptr))                                       \
  X(cuMemcpyHtoD_v2, CUresult(CUdeviceptr, const void *, size_t))              \
  X(cuMemcpyDtoH_v2, CUresult(void *, CUdeviceptr, size_t))                    \
  X(cuMemsetD8_v2, CUresult(CUdeviceptr, unsigned char, size_t))               \
  X(cuMemHostAlloc, CUresult(void **, size_t, unsigned))                       \
  X(cuMemFreeHost, CUresult(void *))                                           \
  X(cuMemHostGetDevicePointer_v2, CUresult(CUdeviceptr *, void *, unsigned))   \
  X(cuModuleLoadData, CUresult(CUmodule *, const void *))                      \
  X(cuModuleGetFunction, CUresult(CUfunction *, CUmodule, const char *))       \
  X(cuFuncSetAttribute, CUresult(CUfunction, int, int))                        \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                               \
    CUresult(int *, CUfunction, int, size_t))                                  \
  X(cuLaunchKernel,                                                            \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,     \
             unsigned, unsigned, CUstream, void **, void **))                  \
  X(cuEventCreate, CUresult(CUevent *, unsigned))                              \
  X(cuEventRecord, CUresult(CUevent, CUstream))                                \
  X(cuEventSynchronize, CUresult(CUevent))                                     \
  X(cuEventElapsedTime, CUresult(float *, CUevent, CUevent))
#define ATTNC_DECLARE(name, type) std::add_pointer_t<type> name = nullptr;
  ATTNC_CUDA_FUNCTIONS(ATTNC_DECLARE)
#undef ATTNC_DECLARE
  // Entry points only newer drivers have: a missing one is null, and the
  // method that needs it returns an error (encodeTensorMap) or does without
  // (launch) instead of the driver failing to load for everything else.
  EncodeTiledFn cuTensorMapEncodeTiled = nullptr;
  CUresult (*cuLaunchKernelEx)(const LaunchConfig *, CUfunction, void **,
                               void **) = nullptr;
};

/// A device allocation freed when it goes out of scope.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  static StatusOr<DeviceBuffer> allocate(Driver &driver, size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  CUdeviceptr get() const { return ptr_; }
  size_t size() const { return bytes_; }

private:
  Driver *driver_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// Pinned host memory freed when it goes out of scope.
class PinnedBuffer {
public:
  PinnedBuffer() = default;
  static StatusOr<PinnedBuffer> allocate(Driver &driver, size_t bytes);
  PinnedBuffer(PinnedBuffer &&other) noexcept { *this = std::move(other); }
  PinnedBuffer &operator=(PinnedBuffer &&other) noexcept;
  PinnedBuffer(const PinnedBuffer &) = delete;
  PinnedBuffer &operator=(const PinnedBuffer &) = delete;
  ~PinnedBuffer();

  void *get() const { return ptr_; }
  size_t size() const { return bytes_; }

private:
  Driver *driver_ = nullptr;
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

} // namespace attnc::cuda

#endif // ATTNC_RUNTIME_CUDA_CUDADRIVER_H
