//===- DiskCache.cpp - content-addressed cache of compiled kernels --------===//

#include "jit/DiskCache.h"

#include "support/Hash.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// v2 records the key in the entry: v1 entries are misses, recompiled and
// overwritten on first use.
constexpr std::string_view kMagic = "attnc-cache-v2";
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
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
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

/// Parses "magic\nkey\nsize checksum\npayload"; nothing if anything is off,
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
  if (payload.size() != size || contentKey(payload) != meta.substr(space + 1))
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
  // We only ever rename regular files into place. O_NOFOLLOW: a link could
  // point at another key's entry, a device or itself (a loop). O_NONBLOCK:
  // opening a FIFO put under an entry's name must not wait for a writer.
  int fd = ::open(pathOf(key).c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return std::nullopt;
  FileDescriptor file(fd);
  // The descriptor pins the inode: an entry renamed over this one meanwhile
  // does not change what we read.
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      uint64_t(info.st_size) > maxEntryBytes_ + kMaxHeaderBytes)
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
                       contentKey(payload) + "\n";
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
  int dirFd = ::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0)
    return ioError("cannot use the cache directory " + directory_, errno);
  FileDescriptor dir(dirFd);
  // A name of this writer's own, created exclusively: threads and processes
  // (even in other PID namespaces on a shared disk) storing one key at once
  // each write their own file, and the last rename wins with a whole entry.
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp = "." + key + std::string(kTempMarker) + uniqueSuffix();
    fd = ::openat(dirFd, temp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
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
  std::vector<Entry> entries;
  DIR *dir = opendir(directory_.c_str());
  if (!dir) {
    if (errno == ENOENT)
      return entries; // no cache yet
    return ioError("cannot read the cache directory " + directory_, errno);
  }
  while (dirent *item = readdir(dir)) {
    std::string_view name = item->d_name;
    if (!endsWith(name, kSuffix))
      continue;
    Entry entry;
    entry.key = std::string(name.substr(0, name.size() - kSuffix.size()));
    if (!isValidKey(entry.key))
      continue; // not a name put() gives
    std::optional<std::string> payload = get(entry.key);
    entry.valid = payload.has_value();
    entry.bytes = payload ? payload->size() : 0;
    entries.push_back(entry);
  }
  closedir(dir);
  return entries;
}

StatusOr<int> DiskCache::clear() const {
  StatusOr<std::vector<Entry>> entries = list();
  if (!entries.ok())
    return entries.status();
  int removed = 0;
  for (const Entry &entry : *entries)
    if (std::remove(pathOf(entry.key).c_str()) == 0)
      ++removed;
  // Temporary files of writers that died before their rename. A writer
  // still running only loses its entry: its rename fails and it says so.
  if (DIR *dir = opendir(directory_.c_str())) {
    std::vector<std::string> temps;
    while (dirent *item = readdir(dir)) {
      std::string_view name = item->d_name;
      if (name.size() > 1 && name[0] == '.' &&
          name.find(kTempMarker) != std::string_view::npos)
        temps.emplace_back(name);
    }
    closedir(dir);
    for (const std::string &name : temps)
      ::unlink((directory_ + "/" + name).c_str());
  }
  return removed;
}

} // namespace attnc::jit
