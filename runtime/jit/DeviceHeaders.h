//===- DeviceHeaders.h - the device tile library, embedded ------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_JIT_DEVICEHEADERS_H
#define ATTNC_RUNTIME_JIT_DEVICEHEADERS_H

namespace attnc::jit {

struct DeviceHeader {
  const char *includeName; // "attnc/device/attention.h"
  const char *content;
};

/// Every header of device/, generated at build time.
extern const DeviceHeader kDeviceHeaders[];
extern const int kNumDeviceHeaders;

} // namespace attnc::jit

#endif // ATTNC_RUNTIME_JIT_DEVICEHEADERS_H
