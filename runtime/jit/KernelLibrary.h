//===- KernelLibrary.h - prebuilt cubins, looked up by key ------*- C++ -*-===//
//
// A read-only file of cubin-level cache entries (jit::cubinKey → the
// payload encodeCubinEntry makes: ptxas's log and the cubin), built ahead
// by `attnc library build` and shipped beside libattnc.so, so that the
// common variants' kernels need no NVRTC at all. The file is mapped, not
// read: opening it reads only its header and index, and a lookup hashes
// only the one entry it returns.
//
// Layout (little-endian):
//   [0, 64)  header: magic "ATTNCLIB", u32 format version, u32 entry count,
//            u64 file size, the SHA-256 of the index, 8 bytes of zero
//   index    count records of 112 bytes, sorted by key: the key (64 hex
//            digits), u64 offset and u64 size of its payload, the payload's
//            SHA-256
//   payloads after the index
// A file that breaks any of these (magic, version, size, index checksum,
// key order, a payload outside the file) is ignored whole; a payload whose
// checksum does not match is a miss. Neither is ever a crash: the caller
// compiles instead.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_JIT_KERNELLIBRARY_H
#define ATTNC_RUNTIME_JIT_KERNELLIBRARY_H

#include "attnc/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnc::jit {

class KernelLibrary {
public:
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr size_t kHeaderBytes = 64;
  static constexpr size_t kRecordBytes = 112;

  /// Maps and checks the file at `path`; an error says what is wrong with
  /// it (missing, truncated, bad magic, ...).
  static StatusOr<std::unique_ptr<KernelLibrary>> open(const std::string &path);
  /// Writes `entries` (key → payload) as a library file at `path`,
  /// atomically (a temporary file renamed into place).
  static Status write(const std::string &path,
                      const std::map<std::string, std::string> &entries);

  /// The payload stored under `key`; nothing when there is none or its
  /// checksum does not match (then `corrupt`, where given, is set).
  std::optional<std::string_view> find(const std::string &key,
                                       bool *corrupt = nullptr) const;
  size_t size() const { return count_; }
  const std::string &path() const { return path_; }

  /// The library of this process, opened on first use, or null: the file
  /// $ATTNC_KERNEL_LIBRARY names ("" or "-": none), else attnc-kernels.bin
  /// beside the shared object or executable holding this code (and, for
  /// an executable in a bin/ directory, in ../lib). A file that is there
  /// but malformed is ignored with one warning on stderr.
  static const KernelLibrary *shared();
  /// Why shared() has no library ("" when it has one or none was found).
  static const std::string &sharedProblem();
  /// Where shared() looks when $ATTNC_KERNEL_LIBRARY is not set.
  static std::vector<std::string> defaultPaths();

  /// Says once per process, on stderr, that a library (or one of its
  /// entries) is being ignored and why.
  static void warnOnce(const std::string &message);

  ~KernelLibrary();
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;

private:
  KernelLibrary() = default;
  std::string path_;
  const unsigned char *data_ = nullptr;
  size_t bytes_ = 0;
  size_t count_ = 0;
};

} // namespace attnc::jit

#endif // ATTNC_RUNTIME_JIT_KERNELLIBRARY_H
