//===- KernelLibrary.cpp - prebuilt cubins, looked up by key --------------===//

#include "jit/KernelLibrary.h"

#include "support/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <iostream>
#include <mutex>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnc::jit {

namespace {

constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'C', 'L', 'I', 'B'};
constexpr size_t kKeyBytes = 64;

// Offsets of the header's fields and of a record's.
constexpr size_t kVersionAt = 8, kCountAt = 12, kFileSizeAt = 16,
                 kIndexHashAt = 24;
constexpr size_t kOffsetAt = 64, kSizeAt = 72, kPayloadHashAt = 80;

uint64_t load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint32_t load32(const unsigned char *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
void store64(std::string &out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[at + i] = char((v >> (8 * i)) & 0xff);
}
void store32(std::string &out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + i] = char((v >> (8 * i)) & 0xff);
}

bool isHexKey(std::string_view key) {
  return key.size() == kKeyBytes &&
         std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Status malformed(const std::string &path, const std::string &why) {
  return Status::error(ErrorCode::InvalidArgument,
                       "kernel library " + path + " is malformed: " + why);
}

} // namespace

KernelLibrary::~KernelLibrary() {
  if (data_)
    munmap(const_cast<unsigned char *>(data_), bytes_);
}

StatusOr<std::unique_ptr<KernelLibrary>>
KernelLibrary::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::error(ErrorCode::NotFound, "cannot open kernel library " +
                                                  path + ": " +
                                                  std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return malformed(path, "not a regular file");
  }
  size_t bytes = size_t(info.st_size);
  if (bytes < kHeaderBytes) {
    ::close(fd);
    return malformed(path, "truncated (" + std::to_string(bytes) +
                               " bytes, less than a header)");
  }
  void *mapped = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED)
    return Status::error(ErrorCode::Internal, "cannot map kernel library " +
                                                  path + ": " +
                                                  std::strerror(errno));
  std::unique_ptr<KernelLibrary> library(new KernelLibrary());
  library->path_ = path;
  library->data_ = static_cast<const unsigned char *>(mapped);
  library->bytes_ = bytes;
  const unsigned char *data = library->data_;

  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0)
    return malformed(path, "bad magic (not an attnc kernel library)");
  if (uint32_t version = load32(data + kVersionAt); version != kFormatVersion)
    return malformed(path, "format version " + std::to_string(version) +
                               ", this attnc reads " +
                               std::to_string(kFormatVersion));
  if (uint64_t recorded = load64(data + kFileSizeAt); recorded != bytes)
    return malformed(path, "truncated or extended (" + std::to_string(bytes) +
                               " bytes, the header says " +
                               std::to_string(recorded) + ")");
  uint64_t count = load32(data + kCountAt);
  if (count > (bytes - kHeaderBytes) / kRecordBytes)
    return malformed(path, "an index of " + std::to_string(count) +
                               " entries does not fit in the file");
  size_t indexEnd = kHeaderBytes + size_t(count) * kRecordBytes;
  Sha256::Digest indexHash =
      Sha256()
          .update(std::string_view(reinterpret_cast<const char *>(data) +
                                       kHeaderBytes,
                                   indexEnd - kHeaderBytes))
          .digest();
  if (std::memcmp(indexHash.data(), data + kIndexHashAt, indexHash.size()))
    return malformed(path, "the index's checksum does not match");
  std::string_view previous;
  for (size_t i = 0; i < count; ++i) {
    const unsigned char *record = data + kHeaderBytes + i * kRecordBytes;
    std::string_view key(reinterpret_cast<const char *>(record), kKeyBytes);
    if (!isHexKey(key))
      return malformed(path, "entry " + std::to_string(i) + " has a bad key");
    if (i > 0 && key <= previous)
      return malformed(path, "the index is not sorted by key");
    previous = key;
    uint64_t offset = load64(record + kOffsetAt),
             size = load64(record + kSizeAt);
    if (offset < indexEnd || offset > bytes || size > bytes - offset)
      return malformed(path,
                       "entry " + std::to_string(i) + " lies outside the file");
  }
  library->count_ = size_t(count);
  return library;
}

std::optional<std::string_view> KernelLibrary::find(const std::string &key,
                                                    bool *corrupt) const {
  if (corrupt)
    *corrupt = false;
  if (key.size() != kKeyBytes)
    return std::nullopt;
  size_t lo = 0, hi = count_;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const unsigned char *record = data_ + kHeaderBytes + mid * kRecordBytes;
    int order =
        std::memcmp(record, key.data(), kKeyBytes); // keys are fixed-size
    if (order < 0) {
      lo = mid + 1;
    } else if (order > 0) {
      hi = mid;
    } else {
      std::string_view payload(reinterpret_cast<const char *>(data_) +
                                   load64(record + kOffsetAt),
                               size_t(load64(record + kSizeAt)));
      Sha256::Digest hash = Sha256().update(payload).digest();
      if (std::memcmp(hash.data(), record + kPayloadHashAt, hash.size())) {
        if (corrupt)
          *corrupt = true;
        return std::nullopt;
      }
      return payload;
    }
  }
  return std::nullopt;
}

Status KernelLibrary::write(const std::string &path,
                            const std::map<std::string, std::string> &entries) {
  if (entries.size() > UINT32_MAX)
    return Status::error(ErrorCode::InvalidArgument,
                         "too many entries for a kernel library");
  size_t indexEnd = kHeaderBytes + entries.size() * kRecordBytes;
  size_t total = indexEnd;
  for (const auto &[key, payload] : entries) {
    if (!isHexKey(key))
      return Status::error(ErrorCode::InvalidArgument,
                           "a kernel library key must be 64 lower-case hex "
                           "digits, not '" +
                               key + "'");
    total += payload.size();
  }
  std::string out(total, '\0');
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  store32(out, kVersionAt, kFormatVersion);
  store32(out, kCountAt, uint32_t(entries.size()));
  store64(out, kFileSizeAt, total);
  size_t record = kHeaderBytes, at = indexEnd;
  // std::map iterates in key order: the index comes out sorted.
  for (const auto &[key, payload] : entries) {
    std::memcpy(out.data() + record, key.data(), kKeyBytes);
    store64(out, record + kOffsetAt, at);
    store64(out, record + kSizeAt, payload.size());
    Sha256::Digest hash = Sha256().update(payload).digest();
    std::memcpy(out.data() + record + kPayloadHashAt, hash.data(), hash.size());
    std::memcpy(out.data() + at, payload.data(), payload.size());
    record += kRecordBytes;
    at += payload.size();
  }
  Sha256::Digest indexHash =
      Sha256()
          .update(std::string_view(out.data() + kHeaderBytes,
                                   indexEnd - kHeaderBytes))
          .digest();
  std::memcpy(out.data() + kIndexHashAt, indexHash.data(), indexHash.size());

  std::string temp = path + ".tmp." + std::to_string(getpid());
  FILE *file = std::fopen(temp.c_str(), "wb");
  if (!file)
    return Status::error(ErrorCode::InvalidArgument,
                         "cannot create " + temp + ": " + std::strerror(errno));
  bool written = std::fwrite(out.data(), 1, out.size(), file) == out.size();
  written = std::fclose(file) == 0 && written;
  if (!written || std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temp.c_str());
    return Status::error(ErrorCode::InvalidArgument,
                         "cannot write kernel library " + path + ": " + why);
  }
  return Status();
}

void KernelLibrary::warnOnce(const std::string &message) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "attnc: warning: " << message
              << " (ignored; kernels are compiled instead)\n";
  });
}

std::vector<std::string> KernelLibrary::defaultPaths() {
  std::vector<std::string> paths;
  Dl_info info;
  // The object holding this function: libattnc.so, or an executable that
  // links the runtime statically.
  if (dladdr(reinterpret_cast<void *>(&KernelLibrary::defaultPaths), &info) ==
          0 ||
      !info.dli_fname)
    return paths;
  std::string object = info.dli_fname;
  // An executable found through $PATH may report a bare name.
  if (object.find('/') == std::string::npos) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
      return paths;
    object.assign(self, size_t(n));
  }
  std::string dir = object.substr(0, object.rfind('/'));
  paths.push_back(dir + "/attnc-kernels.bin");
  std::string base = dir.substr(dir.rfind('/') + 1);
  if (base == "bin")
    paths.push_back(dir + "/../lib/attnc-kernels.bin");
  return paths;
}

namespace {
struct Shared {
  std::unique_ptr<KernelLibrary> library;
  std::string problem;
};
const Shared &sharedState() {
  static const Shared *shared = [] {
    auto *s = new Shared();
    std::vector<std::string> paths;
    bool named = false;
    if (const char *env = std::getenv("ATTNC_KERNEL_LIBRARY")) {
      named = true;
      if (*env && std::string(env) != "-")
        paths.push_back(env);
    } else {
      paths = KernelLibrary::defaultPaths();
    }
    for (const std::string &path : paths) {
      struct stat info;
      // A library the build did not make is no problem; one that was
      // named, or that is there but unreadable, is worth a warning.
      if (!named && stat(path.c_str(), &info) != 0)
        continue;
      StatusOr<std::unique_ptr<KernelLibrary>> opened =
          KernelLibrary::open(path);
      if (opened.ok()) {
        s->library = std::move(*opened);
        s->problem.clear();
        break;
      }
      s->problem = opened.status().message();
    }
    if (!s->problem.empty())
      KernelLibrary::warnOnce(s->problem);
    return s;
  }();
  return *shared;
}
} // namespace

const KernelLibrary *KernelLibrary::shared() {
  return sharedState().library.get();
}

const std::string &KernelLibrary::sharedProblem() {
  return sharedState().problem;
}

} // namespace attnc::jit
