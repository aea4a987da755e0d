//===- DiskCache.cpp - content-addressed cache of compiled kernels --------===//

#include "jit/DiskCache.h"

#include "support/Hash.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace attnc::jit {

namespace {
constexpr const char *kMagic = "attnc-cache-v1";
constexpr const char *kSuffix = ".entry";

Status makeDirectories(const std::string &path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error(ErrorCode::Internal, "cannot create " + partial +
                                                    ": " +
                                                    std::strerror(errno));
  }
  return Status();
}

/// Parses "magic\nsize checksum\npayload"; nothing if anything is off.
std::optional<std::string> decode(const std::string &file) {
  size_t header = file.find('\n');
  if (header == std::string::npos || file.compare(0, header, kMagic) != 0)
    return std::nullopt;
  size_t line = file.find('\n', header + 1);
  if (line == std::string::npos)
    return std::nullopt;
  unsigned long long size = 0;
  char checksum[64] = {0};
  std::string meta = file.substr(header + 1, line - header - 1);
  if (std::sscanf(meta.c_str(), "%llu %63s", &size, checksum) != 2)
    return std::nullopt;
  std::string payload = file.substr(line + 1);
  if (payload.size() != size || contentKey(payload) != checksum)
    return std::nullopt;
  return payload;
}
} // namespace

std::string DiskCache::defaultDirectory() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/attnc";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/attnc";
  return "/tmp/attnc-cache";
}

std::string DiskCache::pathOf(const std::string &key) const {
  return directory_ + "/" + key + kSuffix;
}

std::optional<std::string> DiskCache::get(const std::string &key) const {
  std::ifstream in(pathOf(key), std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return decode(buffer.str());
}

Status DiskCache::put(const std::string &key,
                      const std::string &payload) const {
  if (Status s = makeDirectories(directory_); !s.ok())
    return s;
  std::string temp = pathOf(key) + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << kMagic << "\n"
        << payload.size() << " " << contentKey(payload) << "\n"
        << payload;
    if (!out.flush())
      return Status::error(ErrorCode::Internal, "cannot write " + temp);
  }
  if (std::rename(temp.c_str(), pathOf(key).c_str()) != 0) {
    std::remove(temp.c_str());
    return Status::error(ErrorCode::Internal,
                         "cannot move a cache entry into " + directory_);
  }
  return Status();
}

StatusOr<std::vector<DiskCache::Entry>> DiskCache::list() const {
  std::vector<Entry> entries;
  DIR *dir = opendir(directory_.c_str());
  if (!dir)
    return entries; // no cache yet
  while (dirent *item = readdir(dir)) {
    std::string name = item->d_name;
    size_t suffix = std::strlen(kSuffix);
    if (name.size() <= suffix ||
        name.compare(name.size() - suffix, suffix, kSuffix) != 0)
      continue;
    Entry entry;
    entry.key = name.substr(0, name.size() - suffix);
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
  return removed;
}

} // namespace attnc::jit
