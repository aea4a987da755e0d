//===- CudaDriver.cpp - the CUDA driver API, loaded at run time -----------===//

#include "cuda/CudaDriver.h"

#include "support/DynamicLibrary.h"

#include <cstddef>

namespace attnc::cuda {

namespace {
// Values of the CUDA driver API's enums that attnc uses.
constexpr int kAttrMultiprocessors = 16;
constexpr int kAttrComputeMajor = 75;
constexpr int kAttrComputeMinor = 76;
constexpr int kAttrSharedOptin = 97;
constexpr int kAttrL2CacheSize = 38;
constexpr int kFuncAttrMaxDynamicShared = 8;
constexpr CUresult kErrorNoDevice = 100;
constexpr int kLaunchAttrProgrammaticSerialization = 6;

// cuda.h's CUlaunchAttribute, as cuLaunchKernelEx reads it.
struct LaunchAttribute {
  int id;
  char pad[4];
  union alignas(8) {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value;
};
static_assert(sizeof(LaunchAttribute) == 72 &&
                  offsetof(LaunchAttribute, value) == 8,
              "cuda.h's CUlaunchAttribute layout");
} // namespace

// cuda.h's CUlaunchConfig (declared in CudaDriver.h).
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(offsetof(LaunchConfig, hStream) == 32 &&
                  sizeof(LaunchConfig) == 56,
              "cuda.h's CUlaunchConfig layout");

std::string DeviceInfo::arch() const {
  std::string arch =
      "sm_" + std::to_string(computeMajor) + std::to_string(computeMinor);
  // Hopper's wgmma and setmaxnreg exist only in the arch-specific target.
  return computeMajor == 9 ? arch + "a" : arch;
}

StatusOr<Driver *> Driver::get() { return loadOnce<Driver>(); }

Status Driver::load() {
  StatusOr<DynamicLibrary> library =
      DynamicLibrary::open({"libcuda.so.1", "libcuda.so"}, ErrorCode::NoDevice);
  if (!library.ok())
    return Status::error(ErrorCode::NoDevice,
                         "no CUDA driver (libcuda) on this machine: " +
                             library.status().message());
#define ATTNC_LOAD(name, type)                                                 \
  if (Status s = lookupFunction(*library, #name, name); !s.ok())               \
    return s;
  ATTNC_CUDA_FUNCTIONS(ATTNC_LOAD)
#undef ATTNC_LOAD
  // CUDA 12 and later; its absence stays null (encodeTensorMap says so).
  (void)lookupFunction(*library, "cuTensorMapEncodeTiled",
                       cuTensorMapEncodeTiled);
  // CUDA 11.8 and later; without it a launch that may overlap the previous
  // kernel is an ordinary one.
  (void)lookupFunction(*library, "cuLaunchKernelEx", cuLaunchKernelEx);
  CUresult init = cuInit(0);
  if (init == kErrorNoDevice)
    return Status::error(ErrorCode::NoDevice, "the CUDA driver sees no GPU");
  if (Status s = check(init, "cuInit"); !s.ok())
    return Status::error(ErrorCode::NoDevice, s.message());
  int count = 0;
  if (Status s = check(cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok())
    return s;
  if (count == 0)
    return Status::error(ErrorCode::NoDevice, "the CUDA driver sees no GPU");
  CUdevice dev = 0;
  char name[256] = {0};
  if (Status s = check(cuDeviceGet(&dev, 0), "cuDeviceGet"); !s.ok())
    return s;
  if (Status s = check(cuDeviceGetName(name, sizeof(name) - 1, dev),
                       "cuDeviceGetName");
      !s.ok())
    return s;
  device_.name = name;
  struct {
    int attribute;
    int *value;
  } attributes[] = {
      {kAttrMultiprocessors, &device_.multiprocessors},
      {kAttrComputeMajor, &device_.computeMajor},
      {kAttrComputeMinor, &device_.computeMinor},
      {kAttrSharedOptin, &device_.sharedMemoryPerBlockOptin},
      {kAttrL2CacheSize, &device_.l2CacheBytes},
  };
  for (auto &a : attributes)
    if (Status s = check(cuDeviceGetAttribute(a.value, a.attribute, dev),
                         "cuDeviceGetAttribute");
        !s.ok())
      return s;
  if (Status s = check(cuDevicePrimaryCtxRetain(&context_, dev),
                       "cuDevicePrimaryCtxRetain");
      !s.ok())
    return s;
  return check(cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

Status Driver::check(CUresult result, const char *call) const {
  if (result == 0)
    return Status();
  const char *message = nullptr;
  if (cuGetErrorString)
    cuGetErrorString(result, &message);
  return Status::error(ErrorCode::CudaError,
                       std::string(call) + " failed with " +
                           std::to_string(result) + " (" +
                           (message ? message : "unknown") + ")");
}

Status Driver::enter() {
  // A context is current per thread, and load() made ours current only on
  // the thread that first asked for the driver; kernels are planned and run
  // from any thread. A context the caller made current stays: that thread
  // then works in the caller's context, as the driver API would.
  thread_local const Driver *entered = nullptr;
  if (entered == this)
    return Status();
  CUcontext current = nullptr;
  if (Status s = check(cuCtxGetCurrent(&current), "cuCtxGetCurrent"); !s.ok())
    return s;
  if (!current)
    if (Status s = check(cuCtxSetCurrent(context_), "cuCtxSetCurrent"); !s.ok())
      return s;
  entered = this;
  return Status();
}

StatusOr<CUdeviceptr> Driver::allocate(size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  CUdeviceptr ptr = 0;
  CUresult result = cuMemAlloc_v2(&ptr, bytes ? bytes : 1);
  if (result == 2) // CUDA_ERROR_OUT_OF_MEMORY
    return Status::error(ErrorCode::OutOfMemory, "cannot allocate " +
                                                     std::to_string(bytes) +
                                                     " bytes of GPU memory");
  if (Status s = check(result, "cuMemAlloc"); !s.ok())
    return s;
  return ptr;
}
Status Driver::free(CUdeviceptr ptr) {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuMemFree_v2(ptr), "cuMemFree");
}
Status Driver::copyToDevice(CUdeviceptr dst, const void *src, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuMemcpyHtoD_v2(dst, src, bytes), "cuMemcpyHtoD");
}
Status Driver::copyToHost(void *dst, CUdeviceptr src, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuMemcpyDtoH_v2(dst, src, bytes), "cuMemcpyDtoH");
}
Status Driver::fill(CUdeviceptr dst, unsigned char byte, size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuMemsetD8_v2(dst, byte, bytes), "cuMemsetD8");
}
StatusOr<void *> Driver::allocatePinned(size_t bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  void *ptr = nullptr;
  constexpr unsigned kDeviceMap = 0x02; // CU_MEMHOSTALLOC_DEVICEMAP
  CUresult result = cuMemHostAlloc(&ptr, bytes ? bytes : 1, kDeviceMap);
  if (result == 2) // CUDA_ERROR_OUT_OF_MEMORY
    return Status::error(ErrorCode::OutOfMemory,
                         "cannot allocate " + std::to_string(bytes) +
                             " bytes of pinned host memory");
  if (Status s = check(result, "cuMemHostAlloc"); !s.ok())
    return s;
  return ptr;
}
StatusOr<CUdeviceptr> Driver::devicePointerOf(void *host) {
  if (Status s = enter(); !s.ok())
    return s;
  CUdeviceptr device = 0;
  if (Status s = check(cuMemHostGetDevicePointer_v2(&device, host, 0),
                       "cuMemHostGetDevicePointer");
      !s.ok())
    return s;
  return device;
}
Status Driver::freePinned(void *ptr) {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuMemFreeHost(ptr), "cuMemFreeHost");
}
Status Driver::synchronize() {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuCtxSynchronize(), "cuCtxSynchronize");
}

StatusOr<CUmodule> Driver::loadModule(const void *image) {
  if (Status s = enter(); !s.ok())
    return s;
  CUmodule module = nullptr;
  if (Status s = check(cuModuleLoadData(&module, image), "cuModuleLoadData");
      !s.ok())
    return s;
  return module;
}
StatusOr<CUfunction> Driver::getFunction(CUmodule module,
                                         const std::string &name) {
  if (Status s = enter(); !s.ok())
    return s;
  CUfunction function = nullptr;
  if (Status s = check(cuModuleGetFunction(&function, module, name.c_str()),
                       "cuModuleGetFunction");
      !s.ok())
    return s;
  return function;
}
Status Driver::setSharedMemory(CUfunction function, int bytes) {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuFuncSetAttribute(function, kFuncAttrMaxDynamicShared, bytes),
               "cuFuncSetAttribute(max dynamic shared memory)");
}
StatusOr<int> Driver::residentBlocks(CUfunction function, int threads,
                                     int sharedBytes) {
  if (Status s = enter(); !s.ok())
    return s;
  int blocks = 0;
  if (Status s = check(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                           &blocks, function, threads, size_t(sharedBytes)),
                       "cuOccupancyMaxActiveBlocksPerMultiprocessor");
      !s.ok())
    return s;
  if (blocks < 1)
    return Status::error(ErrorCode::Internal,
                         "the kernel cannot run a single CTA per "
                         "multiprocessor");
  return blocks;
}
Status Driver::launch(CUfunction function, unsigned gridX, unsigned gridY,
                      unsigned gridZ, unsigned threads, unsigned sharedBytes,
                      CUstream stream, void *params, size_t paramBytes,
                      bool overlapsPrevious) {
  if (Status s = enter(); !s.ok())
    return s;
  // Params go as one by-value struct, the kernel's only argument, through
  // kernelParams: the driver lays it out by the kernel's own parameter
  // metadata. (A CU_LAUNCH_PARAM_BUFFER_POINTER buffer is not placed so
  // that a __grid_constant__ tensor map inside it can be read by TMA: its
  // first bulk tensor copy faults, seen on an H200.)
  (void)paramBytes;
  void *args[] = {params};
  if (overlapsPrevious && cuLaunchKernelEx) {
    LaunchAttribute overlap = {};
    overlap.id = kLaunchAttrProgrammaticSerialization;
    overlap.value.programmaticStreamSerializationAllowed = 1;
    LaunchConfig config = {gridX, gridY,       gridZ,  threads,  1,
                           1,     sharedBytes, stream, &overlap, 1};
    return check(cuLaunchKernelEx(&config, function, args, nullptr),
                 "cuLaunchKernelEx");
  }
  return check(cuLaunchKernel(function, gridX, gridY, gridZ, threads, 1, 1,
                              sharedBytes, stream, args, nullptr),
               "cuLaunchKernel");
}

Status Driver::encodeTensorMap(hopper::TensorMap &map,
                               const TensorMapArgs &args) {
  if (Status s = enter(); !s.ok())
    return s;
  return cuda::encodeTensorMap(cuTensorMapEncodeTiled, map, args);
}

StatusOr<CUevent> Driver::createEvent() {
  if (Status s = enter(); !s.ok())
    return s;
  CUevent event = nullptr;
  if (Status s = check(cuEventCreate(&event, 0), "cuEventCreate"); !s.ok())
    return s;
  return event;
}
Status Driver::record(CUevent event, CUstream stream) {
  if (Status s = enter(); !s.ok())
    return s;
  return check(cuEventRecord(event, stream), "cuEventRecord");
}
StatusOr<float> Driver::elapsed(CUevent begin, CUevent end) {
  if (Status s = enter(); !s.ok())
    return s;
  if (Status s = check(cuEventSynchronize(end), "cuEventSynchronize"); !s.ok())
    return s;
  float ms = 0;
  if (Status s =
          check(cuEventElapsedTime(&ms, begin, end), "cuEventElapsedTime");
      !s.ok())
    return s;
  return ms;
}

StatusOr<DeviceBuffer> DeviceBuffer::allocate(Driver &driver, size_t bytes) {
  StatusOr<CUdeviceptr> ptr = driver.allocate(bytes);
  if (!ptr.ok())
    return ptr.status();
  DeviceBuffer buffer;
  buffer.driver_ = &driver;
  buffer.ptr_ = *ptr;
  buffer.bytes_ = bytes;
  return buffer;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    if (driver_ && ptr_)
      (void)driver_->free(ptr_);
    driver_ = other.driver_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.driver_ = nullptr;
    other.ptr_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (driver_ && ptr_)
    (void)driver_->free(ptr_);
}

StatusOr<PinnedBuffer> PinnedBuffer::allocate(Driver &driver, size_t bytes) {
  StatusOr<void *> ptr = driver.allocatePinned(bytes);
  if (!ptr.ok())
    return ptr.status();
  PinnedBuffer buffer;
  buffer.driver_ = &driver;
  buffer.ptr_ = *ptr;
  buffer.bytes_ = bytes;
  return buffer;
}

PinnedBuffer &PinnedBuffer::operator=(PinnedBuffer &&other) noexcept {
  if (this != &other) {
    if (driver_ && ptr_)
      (void)driver_->freePinned(ptr_);
    driver_ = other.driver_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.driver_ = nullptr;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (driver_ && ptr_)
    (void)driver_->freePinned(ptr_);
}

} // namespace attnc::cuda
