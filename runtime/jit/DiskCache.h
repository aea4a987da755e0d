//===- DiskCache.h - content-addressed cache of compiled kernels -*- C++
//-*-===//
//
// One file per key under $XDG_CACHE_HOME/attnc (or ~/.cache/attnc). Entries
// are written to a temporary file and renamed into place, so a reader never
// sees half an entry; each carries its size and checksum, and an entry that
// does not match them is reported as a miss (the caller recompiles and
// overwrites it), never trusted.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_JIT_DISKCACHE_H
#define ATTNC_RUNTIME_JIT_DISKCACHE_H

#include "support/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnc::jit {

class DiskCache {
public:
  explicit DiskCache(std::string directory)
      : directory_(std::move(directory)) {}
  /// $XDG_CACHE_HOME/attnc, else $HOME/.cache/attnc.
  static std::string defaultDirectory();

  /// The payload stored under `key`, or nothing when there is no valid entry.
  std::optional<std::string> get(const std::string &key) const;
  Status put(const std::string &key, const std::string &payload) const;

  struct Entry {
    std::string key;
    uint64_t bytes = 0;
    bool valid = false;
  };
  StatusOr<std::vector<Entry>> list() const;
  /// Removes every entry; returns how many.
  StatusOr<int> clear() const;

  const std::string &directory() const { return directory_; }

private:
  std::string pathOf(const std::string &key) const;
  std::string directory_;
};

} // namespace attnc::jit

#endif // ATTNC_RUNTIME_JIT_DISKCACHE_H
