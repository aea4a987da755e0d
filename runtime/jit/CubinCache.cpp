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

const char *compilerVersion() { return "attnc-" ATTNC_VERSION; }

bool readDecimalSize(std::string_view text, size_t &at, char separator,
                     uint64_t &value) {
  size_t begin = at;
  value = 0;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
    if (at - begin >= 19)
      return false;
    value = value * 10 + uint64_t(text[at++] - '0');
  }
  return at > begin && at < text.size() && text[at++] == separator;
}

std::string cubinKey(const std::string &cuda, const std::string &arch) {
  std::string options;
  for (const std::string &option : Nvrtc::cubinOptions(arch))
    options += option + " ";
  return contentKey(std::string("attnc cubin\n") + compilerVersion() + "\n" +
                    deviceLibraryKey() + "\n" + arch + "\n" + options + "\n" +
                    cuda);
}

std::string encodeCubinEntry(const CubinEntry &entry) {
  return std::to_string(entry.ptxasLog.size()) + "\n" + entry.ptxasLog +
         entry.cubin;
}

std::optional<CubinEntry> decodeCubinEntry(std::string_view payload) {
  size_t at = 0;
  uint64_t logSize = 0;
  if (!readDecimalSize(payload, at, '\n', logSize))
    return std::nullopt;
  uint64_t left = payload.size() - at;
  if (logSize >= left) // the cubin must not be empty
    return std::nullopt;
  CubinEntry entry;
  entry.ptxasLog = std::string(payload.substr(at, logSize));
  entry.cubin = std::string(payload.substr(at + logSize));
  return entry;
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
