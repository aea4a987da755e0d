//===- DiskCache.h - content-addressed cache of kernels ---------*- C++ -*-===//
//
// One file per key under $XDG_CACHE_HOME/attnc (or ~/.cache/attnc), shared
// by every thread and process of this user that compiles kernels. An entry
// is written to a temporary file of its own (unique per process and
// thread) and renamed into place, so a reader never sees half an entry.
// Each entry records its key, its size and the SHA-256 of them and its
// payload: an entry that does not match them (torn by a crash, garbled, or
// the file of another key put in its place) is a miss (the caller
// recompiles and overwrites it), never trusted.
//
// A checksum cannot stop whoever can write the directory (they can compute
// one too): the cubins in it are run, so the cache is this user's alone.
// Directories it creates are 0700 and entries 0600; a cache directory
// another user owns, or that its group or others can write, is refused by
// name, and an entry that is not a regular file of this user's that only
// it can write is a miss. A cache that is refused or cannot be written
// (read-only, missing, full, over a file-size limit) only makes `put`
// return an error (and `get` miss): callers keep working uncached.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_JIT_DISKCACHE_H
#define ATTNC_RUNTIME_JIT_DISKCACHE_H

#include "attnc/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnc::jit {

class DiskCache {
public:
  /// A kernel's entry is a few hundred kilobytes. A larger file under an
  /// entry's name is not one of ours, and reading it whole could exhaust
  /// memory (or never end: /dev/zero), so it is a miss, unread.
  static constexpr uint64_t kDefaultMaxEntryBytes = uint64_t(256) << 20;

  explicit DiskCache(std::string directory,
                     uint64_t maxEntryBytes = kDefaultMaxEntryBytes)
      : directory_(std::move(directory)), maxEntryBytes_(maxEntryBytes) {}
  /// $XDG_CACHE_HOME/attnc (when absolute, as the XDG spec asks), else
  /// $HOME/.cache/attnc.
  static std::string defaultDirectory();

  /// The payload stored under `key`, or nothing when there is no valid entry.
  std::optional<std::string> get(const std::string &key) const;
  /// Stores `payload` under `key`, atomically; on failure nothing is left
  /// behind (no entry, no temporary file) and the error says why.
  Status put(const std::string &key, const std::string &payload) const;

  struct Entry {
    std::string key;
    uint64_t bytes = 0;
    bool valid = false;
  };
  /// Every entry; an error when the directory exists but cannot be read or
  /// is refused.
  StatusOr<std::vector<Entry>> list() const;
  /// Removes every entry, and temporary files that writers left behind;
  /// returns how many entries. An error for a refused directory, as for
  /// one that cannot be read.
  StatusOr<int> clear() const;

  /// What prune removed and what it kept.
  struct PruneResult {
    int removed = 0;
    int kept = 0;
    uint64_t keptBytes = 0;
  };
  /// Removes entries that are not valid, those last used more than
  /// `maxAgeSeconds` ago (0: any age), and then the least recently used
  /// until the rest take at most `maxBytes` of files (0: no limit). An
  /// entry's last use is its file's modification time: put writes it and
  /// a hit in get refreshes it. Errors as clear's.
  StatusOr<PruneResult> prune(uint64_t maxBytes, int64_t maxAgeSeconds) const;

  const std::string &directory() const { return directory_; }

  /// Keys name files: 1 to 128 of [0-9A-Za-z_-], so that no key can reach
  /// outside the directory or collide with a temporary file.
  static bool isValidKey(const std::string &key);

  /// Test seam: what `put` writes the temporary file with (POSIX `write`
  /// semantics: bytes written, or -1 and errno), so that tests can make the
  /// disk fill up part-way through an entry.
  using WriteFunction = std::function<long(int fd, const void *, size_t)>;
  void setWriteFunctionForTesting(WriteFunction write) {
    write_ = std::move(write);
  }

private:
  std::string pathOf(const std::string &key) const;
  std::string directory_;
  uint64_t maxEntryBytes_;
  WriteFunction write_;
};

} // namespace attnc::jit

#endif // ATTNC_RUNTIME_JIT_DISKCACHE_H
