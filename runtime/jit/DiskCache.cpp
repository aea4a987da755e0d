//===- DiskCache.cpp - content-addressed cache of compiled kernels --------===//

#include "jit/DiskCache.h"

#include "support/Sha256.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <random>
#include <string_view>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace attnc::jit {

namespace {
// v2 recorded the key in the entry, v3 checks it with SHA-256 instead of
// FNV-1a: entries of older formats are misses, recompiled and overwritten
// on first use.
constexpr std::string_view kMagic = "attnc-cache-v3";
constexpr std::string_view kSuffix = ".entry";
constexpr std::string_view kTempMarker = ".tmp.";
/// Magic, key, size and checksum lines together stay under this.
constexpr uint64_t kMaxHeaderBytes = 256;

std::string describeErrno(int error) {
  char buffer[128];
  // The GNU strerror_r: thread-safe, returns the message.
  return strerror_r(error, buffer, sizeof(buffer));
}

Status ioError(const std::string &what, int error) {
  return Status::error(ErrorCode::Internal, what + ": " + describeErrno(error));
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status makeDirectories(const std::string &path) {
  std::string partial = path[0] == '/' ? "/" : "";
  size_t at = 0;
  while (at <= path.size()) {
    size_t end = path.find('/', at);
    if (end == std::string::npos)
      end = path.size();
    std::string part = path.substr(at, end - at);
    at = end + 1;
    if (part.empty())
      continue;
    partial += part + "/";
    // Only this user reads or writes the kernels it will run: whatever the
    // umask, mkdir never widens 0700.
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return ioError("cannot create " + partial.substr(0, partial.size() - 1),
                     errno);
  }
  // mkdir says EEXIST for a file or a dangling link too: say what is wrong
  // here rather than fail later on a temporary file.
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return ioError("cannot use the cache directory " + path, errno);
  if (!S_ISDIR(info.st_mode))
    return ioError("cannot use the cache directory " + path, ENOTDIR);
  return Status();
}

/// Digits only (no sign, no blanks), without overflow.
bool parseSize(std::string_view text, uint64_t &value) {
  if (text.empty() || text.size() > 19)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + uint64_t(c - '0');
  }
  return true;
}

/// The SHA-256 an entry records: of its magic, key and size as well as its
/// payload, so that no header line can be changed without a mismatch.
std::string entryDigest(const std::string &key, std::string_view payload) {
  Sha256 hasher;
  hasher.update(kMagic).update("\n").update(key).update("\n");
  hasher.update(std::to_string(payload.size())).update("\n").update(payload);
  return hasher.hexDigest();
}

/// Parses "magic\nkey\nsize sha256\npayload"; nothing if anything is off,
/// the key included: the file of another key put under this one's name
/// must never be used.
std::optional<std::string> decode(std::string_view file,
                                  const std::string &key) {
  size_t at = 0;
  auto nextLine = [&](std::string_view &line) {
    size_t end = file.find('\n', at);
    if (end == std::string_view::npos || end - at > kMaxHeaderBytes)
      return false;
    line = file.substr(at, end - at);
    at = end + 1;
    return true;
  };
  std::string_view magic, entryKey, meta;
  if (!nextLine(magic) || magic != kMagic || !nextLine(entryKey) ||
      entryKey != key || !nextLine(meta))
    return std::nullopt;
  size_t space = meta.find(' ');
  uint64_t size = 0;
  if (space == std::string_view::npos ||
      !parseSize(meta.substr(0, space), size))
    return std::nullopt;
  std::string_view payload = file.substr(at);
  if (payload.size() != size ||
      entryDigest(key, payload) != meta.substr(space + 1))
    return std::nullopt;
  return std::string(payload);
}

/// Closes a file descriptor when it goes out of scope.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  int get() const { return fd_; }
  /// Closes now, reporting the error close() found (a network file system
  /// may report a full disk only here); 0 when none.
  int close() {
    if (fd_ < 0)
      return 0;
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? 0 : errno;
  }

private:
  int fd_;
};

/// Process id, a per-process counter and random bits: unique per process
/// and thread; O_EXCL and a retry settle the rest.
std::string uniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  // Seeded without std::random_device, which may throw where there is no
  // entropy source.
  thread_local std::mt19937_64 random(
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      std::hash<std::thread::id>{}(std::this_thread::get_id()));
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), "%ld.%llu.%08llx", long(getpid()),
                static_cast<unsigned long long>(counter++),
                static_cast<unsigned long long>(random() & 0xffffffffu));
  return suffix;
}

/// Writes all of `data`; 0, or the errno of the failure.
int writeAll(const DiskCache::WriteFunction &write, int fd,
             std::string_view data) {
  while (!data.empty()) {
    long written = write ? write(fd, data.data(), data.size())
                         : ::write(fd, data.data(), data.size());
    if (written < 0 && errno == EINTR)
      continue;
    if (written < 0)
      return errno ? errno : EIO;
    if (written == 0) // no progress and no error: treat as a full disk
      return ENOSPC;
    data.remove_prefix(size_t(written));
  }
  return 0;
}

/// Why a cache directory described by `info` must not be used, or "": a
/// directory another user owns or can write is one where a cubin attnc
/// will run could be planted, whatever its checksum says (anyone who can
/// write an entry can compute one).
std::string refusalOf(const std::string &path, const struct stat &info) {
  char mode[16];
  std::snprintf(mode, sizeof(mode), "%04o", unsigned(info.st_mode & 07777));
  std::string why;
  if (info.st_uid != geteuid())
    why = "is owned by another user (uid " + std::to_string(info.st_uid) +
          ", not " + std::to_string(geteuid()) + ")";
  else if (info.st_mode & S_IWOTH)
    why = "is writable by others (mode " + std::string(mode) + ")";
  else if (info.st_mode & S_IWGRP)
    why = "is writable by its group (mode " + std::string(mode) + ")";
  else
    return "";
  return "kernel cache " + path + " " + why +
         ": refusing to use it; fix its owner and permissions (chmod go-w) or "
         "use another directory (XDG_CACHE_HOME, --cache-dir)";
}

/// Opens the cache directory, following a link to it (a link is fine: the
/// directory it leads to is the one checked), and checks it. Every later
/// access goes through the descriptor, so the checks hold for the
/// directory actually read and written even if the path is swapped
/// meanwhile; which is also why the directories above it need no check.
/// NotFound when it does not exist.
Status openCheckedDirectory(const std::string &path, int &fd) {
  fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    if (error == ENOENT)
      return Status::error(ErrorCode::NotFound, "no cache directory " + path);
    return ioError("cannot use the cache directory " + path, error);
  }
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    fd = -1;
    return ioError("cannot use the cache directory " + path, error);
  }
  if (std::string why = refusalOf(path, info); !why.empty()) {
    ::close(fd);
    fd = -1;
    return Status::error(ErrorCode::InvalidArgument, why);
  }
  return Status();
}

/// The payload of `key`'s entry in the directory `dirFd`, if it is one.
std::optional<std::string> readEntry(int dirFd, const std::string &key,
                                     uint64_t maxEntryBytes) {
  std::string name = key + std::string(kSuffix);
  // We only ever rename regular files into place. O_NOFOLLOW: a link could
  // point at another key's entry, a device or itself (a loop). O_NONBLOCK:
  // opening a FIFO put under an entry's name must not wait for a writer.
  int fd = ::openat(dirFd, name.c_str(),
                    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return std::nullopt;
  FileDescriptor file(fd);
  // The descriptor pins the inode: an entry renamed over this one meanwhile
  // does not change what we read. Entries are this user's, mode 0600: a
  // file someone else owns or could rewrite is not one of them.
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      info.st_uid != geteuid() || (info.st_mode & (S_IWGRP | S_IWOTH)) ||
      uint64_t(info.st_size) > maxEntryBytes + kMaxHeaderBytes)
    return std::nullopt;
  std::string bytes(size_t(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) // an error, or someone truncated the file in place
      return std::nullopt;
    done += size_t(got);
  }
  return decode(bytes, key);
}

/// The names in the directory `dirFd` (not . and ..).
StatusOr<std::vector<std::string>> namesIn(int dirFd, const std::string &path) {
  // fdopendir takes the descriptor it is given: give it a copy.
  int copy = fcntl(dirFd, F_DUPFD_CLOEXEC, 0);
  DIR *dir = copy < 0 ? nullptr : fdopendir(copy);
  if (!dir) {
    int error = errno;
    if (copy >= 0)
      ::close(copy);
    return ioError("cannot read the cache directory " + path, error);
  }
  std::vector<std::string> names;
  while (dirent *item = readdir(dir)) {
    std::string_view name = item->d_name;
    if (name != "." && name != "..")
      names.emplace_back(name);
  }
  closedir(dir);
  return names;
}
} // namespace

bool DiskCache::isValidKey(const std::string &key) {
  if (key.empty() || key.size() > 128)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z') || c == '_' || c == '-'))
      return false;
  return true;
}

std::string DiskCache::defaultDirectory() {
  // The XDG spec says to ignore a relative XDG_CACHE_HOME: it would name a
  // different cache in every working directory.
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/attnc";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/attnc";
  return "/tmp/attnc-cache";
}

std::string DiskCache::pathOf(const std::string &key) const {
  return directory_ + "/" + key + std::string(kSuffix);
}

std::optional<std::string> DiskCache::get(const std::string &key) const {
  if (directory_.empty() || !isValidKey(key))
    return std::nullopt;
  // A directory that is refused is a miss here; put() says why.
  int dirFd = -1;
  if (!openCheckedDirectory(directory_, dirFd).ok())
    return std::nullopt;
  FileDescriptor dir(dirFd);
  std::optional<std::string> payload = readEntry(dirFd, key, maxEntryBytes_);
  // A hit is a use: prune keeps the recently used. A cache that cannot be
  // written (a read-only mount) still serves hits.
  if (payload)
    ::utimensat(dirFd, (key + std::string(kSuffix)).c_str(), nullptr,
                AT_SYMLINK_NOFOLLOW);
  return payload;
}

Status DiskCache::put(const std::string &key,
                      const std::string &payload) const {
  if (!isValidKey(key))
    return Status::error(ErrorCode::InvalidArgument,
                         "a cache key is 1 to 128 of [0-9A-Za-z_-], got '" +
                             key + "'");
  if (directory_.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "the cache has no directory");
  if (payload.size() > maxEntryBytes_)
    return Status::error(ErrorCode::InvalidArgument,
                         "a cache entry of " + std::to_string(payload.size()) +
                             " bytes exceeds the limit of " +
                             std::to_string(maxEntryBytes_));
  std::string header = std::string(kMagic) + "\n" + key + "\n" +
                       std::to_string(payload.size()) + " " +
                       entryDigest(key, payload) + "\n";
  // Writing past the file-size limit (ulimit -f) raises SIGXFSZ, which
  // kills the process unless it is ignored: check first, so that only
  // caching fails.
  uint64_t total = header.size() + payload.size();
  struct rlimit limit;
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      total > uint64_t(limit.rlim_cur))
    return ioError("a cache entry of " + std::to_string(total) +
                       " bytes exceeds the file size limit of " +
                       std::to_string(uint64_t(limit.rlim_cur)),
                   EFBIG);
  if (Status s = makeDirectories(directory_); !s.ok())
    return s;
  // Everything below is relative to the directory we opened, so that the
  // temporary file is removed, or renamed into place, in the directory it
  // was written in even if the path is moved or replaced meanwhile.
  int dirFd = -1;
  if (Status s = openCheckedDirectory(directory_, dirFd); !s.ok())
    return s;
  FileDescriptor dir(dirFd);
  // A name of this writer's own, created exclusively: threads and processes
  // (even in other PID namespaces on a shared disk) storing one key at once
  // each write their own file, and the last rename wins with a whole entry.
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp = "." + key + std::string(kTempMarker) + uniqueSuffix();
    fd = ::openat(dirFd, temp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return ioError("cannot write a cache entry in " + directory_, errno);
  FileDescriptor file(fd);
  std::string target = key + std::string(kSuffix);
  auto fail = [&](int error) {
    file.close();
    ::unlinkat(dirFd, temp.c_str(), 0); // never leave a torn file behind
    return ioError("cannot write the cache entry " + pathOf(key), error);
  };
  // Exactly 0600, whatever the umask took away: readers refuse entries
  // others can write, and need to read their own.
  if (fchmod(fd, 0600) != 0)
    return fail(errno);
  // No fsync: after a power loss an entry may come back empty or torn, and
  // its size and checksum turn that into a miss.
  if (int error = writeAll(write_, fd, header))
    return fail(error);
  if (int error = writeAll(write_, fd, payload))
    return fail(error);
  if (int error = file.close())
    return fail(error);
  if (::renameat(dirFd, temp.c_str(), dirFd, target.c_str()) != 0) {
    int error = errno;
    ::unlinkat(dirFd, temp.c_str(), 0);
    return ioError("cannot move a cache entry into " + directory_, error);
  }
  return Status();
}

StatusOr<std::vector<DiskCache::Entry>> DiskCache::list() const {
  int dirFd = -1;
  if (Status s = openCheckedDirectory(directory_, dirFd); !s.ok()) {
    if (s.code() == ErrorCode::NotFound)
      return std::vector<Entry>(); // no cache yet
    return s;
  }
  FileDescriptor dir(dirFd);
  StatusOr<std::vector<std::string>> names = namesIn(dirFd, directory_);
  if (!names.ok())
    return names.status();
  std::vector<Entry> entries;
  for (const std::string &name : *names) {
    if (!endsWith(name, kSuffix))
      continue;
    Entry entry;
    entry.key = name.substr(0, name.size() - kSuffix.size());
    if (!isValidKey(entry.key))
      continue; // not a name put() gives
    std::optional<std::string> payload =
        readEntry(dirFd, entry.key, maxEntryBytes_);
    entry.valid = payload.has_value();
    entry.bytes = payload ? payload->size() : 0;
    entries.push_back(entry);
  }
  return entries;
}

namespace {
/// Removes whatever is under an entry's name (an empty directory too).
bool removeEntryName(int dirFd, const std::string &name) {
  return ::unlinkat(dirFd, name.c_str(), 0) == 0 ||
         (errno == EISDIR &&
          ::unlinkat(dirFd, name.c_str(), AT_REMOVEDIR) == 0);
}
} // namespace

StatusOr<DiskCache::PruneResult> DiskCache::prune(uint64_t maxBytes,
                                                  int64_t maxAgeSeconds) const {
  int dirFd = -1;
  if (Status s = openCheckedDirectory(directory_, dirFd); !s.ok()) {
    if (s.code() == ErrorCode::NotFound)
      return PruneResult(); // no cache yet
    return s;
  }
  FileDescriptor dir(dirFd);
  StatusOr<std::vector<std::string>> names = namesIn(dirFd, directory_);
  if (!names.ok())
    return names.status();
  struct Live {
    std::string name;
    uint64_t bytes;
    timespec used;
  };
  std::vector<Live> live;
  PruneResult result;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  for (const std::string &name : *names) {
    if (!endsWith(name, kSuffix))
      continue;
    std::string key = name.substr(0, name.size() - kSuffix.size());
    if (!isValidKey(key))
      continue; // not a name put() gives
    struct stat info;
    if (::fstatat(dirFd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0)
      continue; // gone meanwhile
    bool valid = readEntry(dirFd, key, maxEntryBytes_).has_value();
    bool stale = maxAgeSeconds > 0 &&
                 int64_t(now.tv_sec - info.st_mtim.tv_sec) > maxAgeSeconds;
    if (!valid || stale) {
      result.removed += removeEntryName(dirFd, name);
      continue;
    }
    live.push_back({name, uint64_t(info.st_size), info.st_mtim});
  }
  // The most recently used first: they stay while they fit.
  std::sort(live.begin(), live.end(), [](const Live &a, const Live &b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec > b.used.tv_sec
                                          : a.used.tv_nsec > b.used.tv_nsec;
  });
  for (const Live &entry : live) {
    if (maxBytes == 0 || result.keptBytes + entry.bytes <= maxBytes) {
      result.keptBytes += entry.bytes;
      ++result.kept;
    } else {
      result.removed += removeEntryName(dirFd, entry.name);
    }
  }
  return result;
}

StatusOr<int> DiskCache::clear() const {
  int dirFd = -1;
  if (Status s = openCheckedDirectory(directory_, dirFd); !s.ok()) {
    if (s.code() == ErrorCode::NotFound)
      return 0;
    return s;
  }
  FileDescriptor dir(dirFd);
  StatusOr<std::vector<std::string>> names = namesIn(dirFd, directory_);
  if (!names.ok())
    return names.status();
  int removed = 0;
  for (const std::string &name : *names) {
    if (endsWith(name, kSuffix) &&
        isValidKey(name.substr(0, name.size() - kSuffix.size()))) {
      removed += removeEntryName(dirFd, name);
    } else if (name.size() > 1 && name[0] == '.' &&
               name.find(kTempMarker) != std::string::npos) {
      // Temporary files of writers that died before their rename. A writer
      // still running only loses its entry: its rename fails and it says
      // so.
      ::unlinkat(dirFd, name.c_str(), 0);
    }
  }
  return removed;
}

} // namespace attnc::jit
