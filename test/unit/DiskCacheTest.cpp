//===- DiskCacheTest.cpp - the disk cache when things go wrong ------------===//
//
// What the compile cache must survive: writers of one key racing, a disk
// that fills up part-way through an entry, a file-size limit, directories
// that cannot be used, and files under an entry's name that are not ours
// (another key's entry, a FIFO, a link to a device, a directory, a huge
// file). Every case ends in a miss or an error value, never a wrong
// payload, a crash or a hang. And what it must refuse: a directory another
// user owns or others can write (a cubin planted there would be run), an
// entry changed after it was written or that others could have written.
//
//===----------------------------------------------------------------------===//

#include "CacheTestSupport.h"

#include "jit/DiskCache.h"
#include "support/Hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace attnc {
namespace {

using jit::DiskCache;
using test::countFiles;
using test::FileSizeLimit;
using test::freshDirectory;
using test::readFile;
using test::writeFile;

/// Sets an entry's last use `daysAgo` days back.
void usedDaysAgo(const DiskCache &cache, const std::string &key,
                 double daysAgo) {
  timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= time_t(daysAgo * 24 * 3600);
  times[1] = times[0];
  ASSERT_EQ(utimensat(AT_FDCWD,
                      (cache.directory() + "/" + key + ".entry").c_str(), times,
                      0),
            0);
}

std::vector<std::string> keysOf(const DiskCache &cache) {
  std::vector<std::string> keys;
  auto entries = cache.list();
  EXPECT_TRUE(entries.ok()) << entries.status().toString();
  for (const DiskCache::Entry &entry : entries.value())
    keys.push_back(entry.key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(DiskCachePrune, KeepsTheRecentlyUsedWithinTheLimits) {
  DiskCache cache(freshDirectory());
  for (const char *key : {"a", "b", "c", "d"})
    ASSERT_TRUE(cache.put(key, std::string(1000, *key)).ok());
  usedDaysAgo(cache, "a", 40);
  usedDaysAgo(cache, "b", 3);
  usedDaysAgo(cache, "c", 2);
  usedDaysAgo(cache, "d", 1);
  // A hit is a use: b becomes the most recent.
  ASSERT_TRUE(cache.get("b").has_value());
  uint64_t entryBytes = 0;
  auto entries = cache.list();
  ASSERT_TRUE(entries.ok());
  for (const DiskCache::Entry &entry : *entries)
    entryBytes = std::max<uint64_t>(entryBytes, entry.bytes);
  // Older than 30 days: a goes, whatever the size.
  auto aged = cache.prune(0, 30 * 24 * 3600);
  ASSERT_TRUE(aged.ok()) << aged.status().toString();
  EXPECT_EQ(aged->removed, 1);
  EXPECT_EQ(keysOf(cache), (std::vector<std::string>{"b", "c", "d"}));
  // Room for two files: the least recently used, c, goes.
  auto sized = cache.prune(2 * (entryBytes + 200), 0);
  ASSERT_TRUE(sized.ok()) << sized.status().toString();
  EXPECT_EQ(sized->removed, 1);
  EXPECT_EQ(sized->kept, 2);
  EXPECT_EQ(keysOf(cache), (std::vector<std::string>{"b", "d"}));
  EXPECT_TRUE(cache.get("b").has_value());
  EXPECT_TRUE(cache.get("d").has_value());
}

TEST(DiskCachePrune, RemovesEntriesThatAreNotValidAndRefusesWhatClearDoes) {
  DiskCache cache(freshDirectory());
  ASSERT_TRUE(cache.put("good", "payload").ok());
  writeFile(cache.directory() + "/bad.entry", "not an entry");
  auto pruned = cache.prune(0, 0);
  ASSERT_TRUE(pruned.ok()) << pruned.status().toString();
  EXPECT_EQ(pruned->removed, 1);
  EXPECT_EQ(keysOf(cache), (std::vector<std::string>{"good"}));
  // No cache yet: nothing to do.
  EXPECT_EQ(DiskCache(freshDirectory() + "/none").prune(1, 1).value().kept, 0);
  // A directory others can write is refused, as by clear.
  std::string open = freshDirectory();
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);
  EXPECT_FALSE(DiskCache(open).prune(0, 0).ok());
}

TEST(DiskCacheFailures, EntryOfAnotherKeyIsAMiss) {
  DiskCache cache(freshDirectory());
  ASSERT_TRUE(cache.put("a", "payload of a").ok());
  ASSERT_TRUE(cache.put("b", "payload of b").ok());
  // A whole, valid entry, but b's: using it for a would be a wrong kernel.
  ASSERT_EQ(rename((cache.directory() + "/b.entry").c_str(),
                   (cache.directory() + "/a.entry").c_str()),
            0);
  EXPECT_FALSE(cache.get("a").has_value());
  auto entries = cache.list();
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_FALSE((*entries)[0].valid);
}

TEST(DiskCacheFailures, OlderFormatIsAMiss) {
  DiskCache cache(freshDirectory());
  std::string path = cache.directory() + "/k.entry";
  // The v1 layout had no key: it must not be read as a v3 entry.
  writeFile(path, "attnc-cache-v1\n3 0000000000000000000000000000000\nabc");
  chmod(path.c_str(), 0600);
  EXPECT_FALSE(cache.get("k").has_value());
  // v2, checked with FNV-1a (this is the v2 writer's checksum of "abc"):
  // whole and valid then, a miss now.
  writeFile(path, "attnc-cache-v2\nk\n3 e71fa2190541574b8607c5f7479b8249\nabc");
  chmod(path.c_str(), 0600);
  EXPECT_FALSE(cache.get("k").has_value());
  ASSERT_TRUE(cache.put("k", "abc").ok());
  EXPECT_EQ(cache.get("k").value_or(""), "abc");
  EXPECT_EQ(readFile(path).substr(0, 17), "attnc-cache-v3\nk\n");
}

TEST(DiskCacheSecurity, KeysAreSha256AndFitTheKeyRules) {
  std::string key = contentKey("attnc-1\nsm_90a\nsource");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_TRUE(DiskCache::isValidKey(key));
  EXPECT_NE(key, contentKey("attnc-1\nsm_90a\nsourcf"));
}

TEST(DiskCacheSecurity, PayloadChangedAfterWritingIsAMiss) {
  DiskCache cache(freshDirectory());
  std::string path = cache.directory() + "/k.entry";
  std::string payload(3000, 'p');
  ASSERT_TRUE(cache.put("k", payload).ok());
  std::string entry = readFile(path);
  // The header records the SHA-256 as 64 hex digits.
  size_t meta = entry.find("\n", entry.find("\n") + 1) + 1;
  std::string sizeLine = entry.substr(meta, entry.find('\n', meta) - meta);
  EXPECT_EQ(sizeLine.size(), std::string("3000 ").size() + 64) << sizeLine;
  // A right key, a right size, a right header: one byte of the payload
  // changed in place (the file keeps its owner and mode 0600), anywhere.
  for (size_t at :
       {entry.size() - payload.size(), entry.size() - 1500, entry.size() - 1}) {
    std::string changed = entry;
    changed[at] = 'q';
    {
      int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(write(fd, changed.data(), changed.size()),
                ssize_t(changed.size()));
      close(fd);
    }
    EXPECT_FALSE(cache.get("k").has_value()) << "byte " << at;
  }
  // So is a header whose size was changed to match a longer payload.
  {
    std::string longer = entry;
    longer.replace(meta, 4, "3001");
    longer += "p";
    int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, longer.data(), longer.size()), ssize_t(longer.size()));
    close(fd);
    EXPECT_FALSE(cache.get("k").has_value());
  }
  // The file unchanged is a hit: the misses above were the changes'.
  {
    int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, entry.data(), entry.size()), ssize_t(entry.size()));
    close(fd);
  }
  EXPECT_EQ(cache.get("k").value_or(""), payload);
}

/// Sets the umask for the scope.
class Umask {
public:
  explicit Umask(mode_t mask) : saved_(umask(mask)) {}
  ~Umask() { umask(saved_); }

private:
  mode_t saved_;
};

mode_t modeOf(const std::string &path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0)
    return mode_t(-1);
  return info.st_mode & 07777;
}

TEST(DiskCacheSecurity, EntriesAre0600AndCreatedDirectories0700) {
  std::string root = freshDirectory();
  {
    // The widest umask: modes must come from attnc, not from it.
    Umask none(0);
    DiskCache cache(root + "/made/by/attnc");
    ASSERT_TRUE(cache.put("k", "payload").ok());
    for (const char *dir : {"/made", "/made/by", "/made/by/attnc"})
      EXPECT_EQ(modeOf(root + dir), mode_t(0700)) << dir;
    EXPECT_EQ(modeOf(root + "/made/by/attnc/k.entry"), mode_t(0600));
    EXPECT_EQ(cache.get("k").value_or(""), "payload");
  }
  {
    // A umask that takes the owner's bits away too: the entry is still
    // 0600, so that this user can read it back.
    Umask narrow(0377);
    DiskCache cache(root);
    ASSERT_TRUE(cache.put("k", "payload").ok());
    EXPECT_EQ(modeOf(root + "/k.entry"), mode_t(0600));
  }
  EXPECT_EQ(DiskCache(root).get("k").value_or(""), "payload");
}

/// Whether `status` refuses `dir` by name, for `reason`.
::testing::AssertionResult refuses(const Status &status, const std::string &dir,
                                   const std::string &reason) {
  if (status.ok())
    return ::testing::AssertionFailure() << "not refused";
  const std::string &m = status.message();
  if (m.find("kernel cache " + dir + " ") == std::string::npos ||
      m.find(reason) == std::string::npos ||
      m.find("refusing to use it") == std::string::npos)
    return ::testing::AssertionFailure() << "refused as: " << m;
  return ::testing::AssertionSuccess();
}

/// A valid entry put while `dir` was fine; then `dir` is made unsafe by
/// `spoil` and must be refused for `reason` by put, list and clear (get
/// misses), and the entry left alone.
void expectRefusedAfter(const std::string &dir,
                        const std::function<bool()> &spoil,
                        const std::string &reason) {
  DiskCache cache(dir);
  ASSERT_TRUE(cache.put("k", "payload").ok());
  ASSERT_EQ(cache.get("k").value_or(""), "payload");
  ASSERT_TRUE(spoil());
  EXPECT_TRUE(refuses(cache.put("k", "other"), dir, reason));
  EXPECT_TRUE(refuses(cache.put("new", "other"), dir, reason));
  EXPECT_FALSE(cache.get("k").has_value()) << "an entry in " << dir;
  StatusOr<std::vector<DiskCache::Entry>> entries = cache.list();
  EXPECT_TRUE(refuses(entries.status(), dir, reason));
  StatusOr<int> removed = cache.clear();
  EXPECT_TRUE(refuses(removed.status(), dir, reason));
  EXPECT_EQ(countFiles(dir), 1) << "a refused cache was written or cleared";
}

TEST(DiskCacheSecurity, WorldWritableDirectoryIsRefusedByName) {
  std::string dir = freshDirectory();
  expectRefusedAfter(
      dir, [&] { return chmod(dir.c_str(), 0777) == 0; },
      "is writable by others (mode 0777)");
  // Sticky, as /tmp is: others still create files in it.
  std::string sticky = freshDirectory();
  expectRefusedAfter(
      sticky, [&] { return chmod(sticky.c_str(), 01777) == 0; },
      "is writable by others (mode 1777)");
  EXPECT_NE(DiskCache(dir).put("k", "x").message().find("XDG_CACHE_HOME"),
            std::string::npos)
      << "the refusal says how to get out of it";
}

TEST(DiskCacheSecurity, GroupWritableDirectoryIsRefused) {
  std::string dir = freshDirectory();
  expectRefusedAfter(
      dir, [&] { return chmod(dir.c_str(), 0770) == 0; },
      "is writable by its group (mode 0770)");
  // Read and search by others is fine: only writing is refused.
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  EXPECT_TRUE(DiskCache(dir).put("k", "x").ok());
}

TEST(DiskCacheSecurity, ForeignOwnedDirectoryIsRefused) {
  if (geteuid() != 0) {
    // The root directory is root's: refused for anyone else.
    struct stat info;
    ASSERT_EQ(stat("/", &info), 0);
    if (info.st_uid == geteuid() || (info.st_mode & 022))
      GTEST_SKIP() << "/ is not root's 0755 here";
    EXPECT_TRUE(refuses(DiskCache("/").put("k", "x"), "/",
                        "is owned by another user (uid 0, not " +
                            std::to_string(geteuid()) + ")"));
    return;
  }
  // Root owns whatever it creates: give a directory to nobody.
  std::string dir = freshDirectory();
  DiskCache cache(dir);
  ASSERT_TRUE(cache.put("k", "payload").ok());
  if (chown(dir.c_str(), 65534, 65534) != 0)
    GTEST_SKIP() << "running as root but cannot chown a directory to nobody "
                    "(65534): "
                 << strerror(errno);
  EXPECT_TRUE(refuses(cache.put("k", "other"), dir,
                      "is owned by another user (uid 65534, not 0)"));
  EXPECT_FALSE(cache.get("k").has_value());
  EXPECT_TRUE(refuses(cache.list().status(), dir, "owned by another user"));
  ASSERT_EQ(chown(dir.c_str(), 0, 0), 0);
  EXPECT_EQ(cache.get("k").value_or(""), "payload");
}

TEST(DiskCacheSecurity, EntryOthersCouldWriteOrOwnIsAMiss) {
  DiskCache cache(freshDirectory());
  std::string path = cache.directory() + "/k.entry";
  ASSERT_TRUE(cache.put("k", "payload").ok());
  for (mode_t mode : {mode_t(0666), mode_t(0620), mode_t(0602)}) {
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
    EXPECT_FALSE(cache.get("k").has_value()) << std::oct << mode;
  }
  ASSERT_EQ(chmod(path.c_str(), 0644), 0); // others may read, not write
  EXPECT_EQ(cache.get("k").value_or(""), "payload");
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  EXPECT_EQ(cache.get("k").value_or(""), "payload");
  if (geteuid() == 0 && chown(path.c_str(), 65534, 65534) == 0) {
    EXPECT_FALSE(cache.get("k").has_value()) << "an entry nobody owns";
    auto entries = cache.list();
    ASSERT_TRUE(entries.ok());
    ASSERT_EQ(entries->size(), 1u);
    EXPECT_FALSE((*entries)[0].valid);
  }
  // A put replaces it with this user's entry.
  ASSERT_TRUE(cache.put("k", "payload").ok());
  EXPECT_EQ(cache.get("k").value_or(""), "payload");
}

TEST(DiskCacheSecurity, LinkToTheDirectoryIsCheckedAtItsTarget) {
  std::string root = freshDirectory();
  std::string real = root + "/real", link = root + "/link";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  // A link to a directory of ours that passes: used (the link itself is
  // 0777, as every link is).
  DiskCache cache(link);
  ASSERT_TRUE(cache.put("k", "payload").ok());
  EXPECT_EQ(cache.get("k").value_or(""), "payload");
  EXPECT_EQ(modeOf(real + "/k.entry"), mode_t(0600));
  // Its target opened to others: refused, named as the user gave it.
  ASSERT_EQ(chmod(real.c_str(), 0777), 0);
  EXPECT_TRUE(refuses(cache.put("k", "x"), link, "writable by others"));
  EXPECT_FALSE(cache.get("k").has_value());
}

TEST(DiskCacheFailures, KeysThatAreNotFileNamesAreRefused) {
  std::string root = freshDirectory();
  DiskCache cache(root + "/cache");
  for (const std::string &key :
       std::vector<std::string>{"", "../outside", "a/b", ".hidden", "a b",
                                "k\n", std::string(129, 'k')}) {
    Status s = cache.put(key, "x");
    EXPECT_EQ(s.code(), ErrorCode::InvalidArgument) << "key '" << key << "'";
    EXPECT_FALSE(cache.get(key).has_value());
  }
  EXPECT_EQ(countFiles(root), 0) << "nothing may be written for a bad key";
  EXPECT_TRUE(cache.put(std::string(128, 'k'), "x").ok());
}

TEST(DiskCacheFailures, ConcurrentWritersOfOneKeyNeverTearAnEntry) {
  DiskCache cache(freshDirectory());
  constexpr int kWriters = 6, kPuts = 25;
  auto payloadOf = [](int writer) {
    // Distinct, large enough that writes interleave.
    return std::string(256 << 10, char('A' + writer));
  };
  ASSERT_TRUE(cache.put("same", payloadOf(0)).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> misses{0}, wrong{0}, failedPuts{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPuts; ++i)
        if (!cache.put("same", payloadOf(w)).ok())
          ++failedPuts;
    });
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      while (!stop) {
        // Renames replace whole entries: a reader always finds one.
        std::optional<std::string> got = cache.get("same");
        if (!got)
          ++misses;
        else if (got->size() != payloadOf(0).size() ||
                 got->find_first_not_of((*got)[0]) != std::string::npos)
          ++wrong;
      }
    });
  for (std::thread &t : threads)
    t.join();
  stop = true;
  for (std::thread &t : readers)
    t.join();
  EXPECT_EQ(failedPuts, 0);
  EXPECT_EQ(misses, 0) << "a reader saw a torn or missing entry";
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(countFiles(cache.directory()), 1) << "temporary files left";
}

TEST(DiskCacheFailures, FullDiskLeavesNoEntryAndNoTemporaryFile) {
  DiskCache cache(freshDirectory());
  ASSERT_TRUE(
      cache.put("kept", "an entry written before the disk filled").ok());
  // The disk fills up after 1000 bytes of the next entry.
  auto written = std::make_shared<size_t>(0);
  cache.setWriteFunctionForTesting(
      [written](int fd, const void *data, size_t bytes) -> long {
        if (*written >= 1000) {
          errno = ENOSPC;
          return -1;
        }
        size_t n = std::min<size_t>(bytes, 1000 - *written);
        *written += n;
        return ::write(fd, data, n);
      });
  Status s = cache.put("new", std::string(5000, 'x'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(strerror(ENOSPC)), std::string::npos)
      << s.message();
  EXPECT_FALSE(cache.get("new").has_value());
  // Over an existing entry: the old one stays whole.
  *written = 0;
  EXPECT_FALSE(cache.put("kept", std::string(5000, 'y')).ok());
  EXPECT_EQ(cache.get("kept").value_or(""),
            "an entry written before the disk filled");
  EXPECT_EQ(countFiles(cache.directory()), 1) << "a torn file was left";
}

TEST(DiskCacheFailures, ShortWritesAndInterruptionsAreRetried) {
  DiskCache cache(freshDirectory());
  auto calls = std::make_shared<int>(0);
  cache.setWriteFunctionForTesting(
      [calls](int fd, const void *data, size_t bytes) -> long {
        if (++*calls % 2) {
          errno = EINTR;
          return -1;
        }
        return ::write(fd, data, std::min<size_t>(bytes, 7));
      });
  std::string payload(1000, 'p');
  ASSERT_TRUE(cache.put("k", payload).ok());
  EXPECT_EQ(cache.get("k").value_or(""), payload);
}

TEST(DiskCacheFailures, FileSizeLimitIsAnErrorNotASignal) {
  DiskCache cache(freshDirectory());
  ASSERT_EQ(signal(SIGXFSZ, SIG_DFL), SIG_DFL);
  Status s;
  {
    FileSizeLimit limit(4096);
    // Without the check, write() would raise SIGXFSZ and kill the test.
    s = cache.put("big", std::string(64 << 10, 'b'));
  }
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("file size limit"), std::string::npos)
      << s.message();
  EXPECT_FALSE(cache.get("big").has_value());
  EXPECT_EQ(countFiles(cache.directory()), 0);
}

TEST(DiskCacheFailures, EntryLargerThanTheLimitIsNeitherWrittenNorRead) {
  std::string dir = freshDirectory();
  DiskCache roomy(dir, 1 << 20), strict(dir, 1024);
  std::string big(4096, 'q');
  EXPECT_EQ(strict.put("k", big).code(), ErrorCode::InvalidArgument);
  ASSERT_TRUE(roomy.put("k", big).ok());
  EXPECT_EQ(roomy.get("k").value_or(""), big);
  EXPECT_FALSE(strict.get("k").has_value());
}

TEST(DiskCacheFailures, FilesThatAreNotEntriesAreMissesWithoutBlocking) {
  DiskCache cache(freshDirectory());
  std::string dir = cache.directory();
  ASSERT_TRUE(cache.put("valid", "payload").ok());
  // A FIFO: opening it for reading would wait for a writer forever.
  ASSERT_EQ(mkfifo((dir + "/fifo.entry").c_str(), 0644), 0);
  // Links: to a device that never ends, to another key's entry, to itself.
  ASSERT_EQ(symlink("/dev/zero", (dir + "/zero.entry").c_str()), 0);
  ASSERT_EQ(
      symlink((dir + "/valid.entry").c_str(), (dir + "/alias.entry").c_str()),
      0);
  ASSERT_EQ(
      symlink((dir + "/loop.entry").c_str(), (dir + "/loop.entry").c_str()), 0);
  ASSERT_EQ(mkdir((dir + "/directory.entry").c_str(), 0755), 0);
  // A huge file (sparse): beyond the limit, it is not read at all.
  {
    int fd = open((dir + "/huge.entry").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, off_t(DiskCache::kDefaultMaxEntryBytes) * 4), 0);
    close(fd);
  }
  test::Watchdog watchdog(120, "reading files that are not entries");
  for (const char *key : {"fifo", "zero", "alias", "loop", "directory", "huge"})
    EXPECT_FALSE(cache.get(key).has_value()) << key;
  auto entries = cache.list();
  ASSERT_TRUE(entries.ok());
  int valid = 0;
  for (const DiskCache::Entry &e : *entries)
    valid += e.valid;
  EXPECT_EQ(valid, 1);
  // A put replaces the impostor with a real entry.
  ASSERT_TRUE(cache.put("fifo", "now an entry").ok());
  EXPECT_EQ(cache.get("fifo").value_or(""), "now an entry");
}

TEST(DiskCacheFailures, DirectoryUnderARegularFileIsAnErrorValue) {
  std::string root = freshDirectory();
  writeFile(root + "/file", "not a directory");
  // Unwritable for every user, root included.
  DiskCache cache(root + "/file/cache");
  Status s = cache.put("k", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(strerror(ENOTDIR)), std::string::npos)
      << s.message();
  EXPECT_FALSE(cache.get("k").has_value());
  EXPECT_FALSE(cache.list().ok());
  EXPECT_FALSE(cache.clear().ok());
  DiskCache isFile(root + "/file");
  EXPECT_FALSE(isFile.put("k", "x").ok());
  EXPECT_EQ(readFile(root + "/file"), "not a directory");
}

TEST(DiskCacheFailures, SymlinkLoopAsDirectoryIsAnErrorValue) {
  std::string root = freshDirectory();
  ASSERT_EQ(symlink((root + "/loop").c_str(), (root + "/loop").c_str()), 0);
  for (const std::string &dir :
       std::vector<std::string>{root + "/loop", root + "/loop/sub"}) {
    DiskCache cache(dir);
    EXPECT_FALSE(cache.put("k", "x").ok()) << dir;
    EXPECT_FALSE(cache.get("k").has_value()) << dir;
    EXPECT_FALSE(cache.list().ok()) << dir;
  }
}

/// Whether `put` into a directory of mode 0500 fails with EACCES and leaves
/// nothing; "" when it does.
std::string putIntoReadOnlyDirectory() {
  std::string dir = freshDirectory();
  if (chmod(dir.c_str(), 0500) != 0)
    return "cannot chmod";
  DiskCache cache(dir);
  Status s = cache.put("k", "x");
  std::optional<std::string> got = cache.get("k");
  int files = countFiles(dir);
  chmod(dir.c_str(), 0755);
  // The directory is this user's (nobody's, in the child below), which
  // leaves by _exit: remove it here rather than at exit.
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (s.ok())
    return "put succeeded";
  if (s.message().find(strerror(EACCES)) == std::string::npos)
    return "unexpected error: " + s.message();
  if (got || files != 0)
    return "something was written";
  return "";
}

TEST(DiskCacheFailures, UnwritableDirectoryByPermissions) {
  if (geteuid() != 0) {
    EXPECT_EQ(putIntoReadOnlyDirectory(), "");
    return;
  }
  // Root writes through permissions: check as an unprivileged user, in a
  // child (this process keeps its identity for the other tests).
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0)
      _exit(77);
    std::string error = putIntoReadOnlyDirectory();
    if (!error.empty())
      std::fprintf(stderr, "as nobody: %s\n", error.c_str());
    _exit(error.empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77)
    GTEST_SKIP() << "running as root and cannot become nobody (65534) to see "
                    "permissions refuse a write; "
                    "DirectoryUnderARegularFileIsAnErrorValue covers an "
                    "unwritable cache";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's message above";
}

TEST(DiskCacheFailures, OddCharactersInTheDirectoryName) {
  std::string dir =
      freshDirectory() + "/with space/new\nline/'quote\"/%s%n/ünï/-dash/..dots";
  DiskCache cache(dir);
  ASSERT_TRUE(cache.put("k", "payload").ok());
  EXPECT_EQ(cache.get("k").value_or(""), "payload");
  auto entries = cache.list();
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries->size(), 1u);
}

TEST(DiskCacheFailures, ClearRemovesTemporaryFilesOfDeadWriters) {
  DiskCache cache(freshDirectory());
  ASSERT_TRUE(cache.put("k", "x").ok());
  // What a writer killed between its write and its rename leaves.
  writeFile(cache.directory() + "/.k.tmp.AbCdEf", "half an ent");
  auto entries = cache.list();
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries->size(), 1u) << "a temporary file is not an entry";
  auto removed = cache.clear();
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1);
  EXPECT_EQ(countFiles(cache.directory()), 0);
}

TEST(DiskCacheFailures, RelativeXdgCacheHomeIsIgnored) {
  setenv("HOME", "/home/someone", 1);
  setenv("XDG_CACHE_HOME", "relative/dir", 1);
  EXPECT_EQ(DiskCache::defaultDirectory(), "/home/someone/.cache/attnc");
  setenv("XDG_CACHE_HOME", "/abs", 1);
  EXPECT_EQ(DiskCache::defaultDirectory(), "/abs/attnc");
}

} // namespace
} // namespace attnc
