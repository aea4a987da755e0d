//===- DeviceBuffers.h - host data to and from the GPU, for tests -*- C++
//-*-===//

#ifndef ATTNC_TEST_GPU_DEVICEBUFFERS_H
#define ATTNC_TEST_GPU_DEVICEBUFFERS_H

#include "cuda/CudaDriver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attnc::testing {

/// A device copy of `bytes` bytes of `data` (16 bytes at least, so that an
/// empty array still has an address).
inline cuda::DeviceBuffer upload(cuda::Driver &driver, const void *data,
                                 size_t bytes) {
  StatusOr<cuda::DeviceBuffer> buffer =
      cuda::DeviceBuffer::allocate(driver, std::max<size_t>(bytes, 16));
  EXPECT_TRUE(buffer.ok()) << buffer.status().toString();
  if (bytes)
    EXPECT_TRUE(driver.copyToDevice(buffer->get(), data, bytes).ok());
  return std::move(*buffer);
}

template <class T>
cuda::DeviceBuffer upload(cuda::Driver &driver, const std::vector<T> &data) {
  return upload(driver, data.data(), data.size() * sizeof(T));
}

/// `bytes` bytes at `address`, once the GPU is done.
inline std::vector<uint8_t> download(cuda::Driver &driver, uint64_t address,
                                     size_t bytes) {
  std::vector<uint8_t> host(bytes);
  EXPECT_TRUE(driver.synchronize().ok());
  EXPECT_TRUE(driver.copyToHost(host.data(), address, bytes).ok());
  return host;
}

} // namespace attnc::testing

#endif // ATTNC_TEST_GPU_DEVICEBUFFERS_H
