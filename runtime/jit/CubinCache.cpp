//===- CubinCache.cpp - runtime kernels compiled once per machine ---------===//

#include "jit/CubinCache.h"

#include "jit/DeviceHeaders.h"
#include "jit/DiskCache.h"
#include "jit/Nvrtc.h"
#include "support/Hash.h"

#include <optional>

namespace attnc::jit {

const std::string &deviceLibraryKey() {
  static const std::string key = [] {
    std::string all;
    for (int i = 0; i < kNumDeviceHeaders; ++i)
      all += std::string(kDeviceHeaders[i].includeName) + "\n" +
             kDeviceHeaders[i].content;
    return contentKey(all);
  }();
  return key;
}

StatusOr<std::string> cachedCubin(const std::string &source,
                                  const std::string &arch,
                                  const std::string &cacheDir) {
  StatusOr<Nvrtc *> nvrtc = Nvrtc::get();
  if (!nvrtc.ok())
    return nvrtc.status();
  std::string key =
      contentKey("runtime kernel\n" + deviceLibraryKey() + "\n" + arch + "\n" +
                 (*nvrtc)->version() + "\n" + source);
  std::optional<DiskCache> disk;
  if (cacheDir != "-")
    disk.emplace(cacheDir.empty() ? DiskCache::defaultDirectory() : cacheDir);
  if (disk)
    if (std::optional<std::string> entry = disk->get(key))
      return *entry;
  StatusOr<CompiledCode> code = (*nvrtc)->compile(
      source, arch, /*ptx=*/false, /*driverCache=*/disk.has_value());
  if (!code.ok())
    return code.status();
  if (disk)
    (void)disk->put(key, code->image);
  return std::move(code->image);
}

} // namespace attnc::jit
