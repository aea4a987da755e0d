//===- CacheStressTest.cpp - the compile caches under load ----------------===//
//
// Threads and processes compile the same and different variants at once
// against one disk cache while a saboteur garbles, tears, swaps and deletes
// its entries, puts FIFOs and device links in their place and takes the
// directory away. Every compile must succeed (a broken cache only costs
// time) with a program, CUDA source and cubin byte-identical to the
// single-threaded, uncached compile of the same variant. A watchdog fails
// the test instead of letting a deadlock hang CI.
//
// Compiles cost most of a second of NVRTC each: a few variants are reused
// many times, so most calls hit one of the caches and the sabotage bounds
// the number of real compiles.
//
// A cache directory others can write, or another user owns, is refused:
// the compile succeeds uncached and says so once, naming the directory.
//
//===----------------------------------------------------------------------===//

#include "CacheTestSupport.h"

#include "attnc/Driver/Compile.h"
#include "jit/CubinCache.h"
#include "jit/DiskCache.h"
#include "jit/Nvrtc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <mutex>
#include <optional>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace attnc {
namespace {

using test::countFiles;
using test::FileSizeLimit;
using test::freshDirectory;
using test::readFile;
using test::writeFile;

/// A variant and what the single-threaded, uncached compile made of it.
struct Reference {
  std::string path, source, program, cuda, cubin;
  int64_t registerRelief = 0;
};

/// Examples of each schedule: prefill with a modifier, paged decode with
/// split-KV and a merge, ragged causal prefill, window with sinks.
const char *const kExamples[] = {"softcap.mlir", "gqa_paged_decode.mlir",
                                 "causal_ragged_prefill.mlir",
                                 "sliding_window_sinks.mlir"};
constexpr int kVariants = 4;

std::string mismatch(const Reference &want, const CompiledVariant &got) {
  if (got.program.serialize() != want.program)
    return "program differs";
  if (got.cuda != want.cuda)
    return "CUDA source differs";
  if (got.cubin != want.cubin)
    return "cubin differs (" + std::to_string(got.cubin.size()) + " vs " +
           std::to_string(want.cubin.size()) + " bytes)";
  if (got.registerRelief != want.registerRelief)
    return "register relief differs (" + std::to_string(got.registerRelief) +
           " vs " + std::to_string(want.registerRelief) + ")";
  return "";
}

/// The directory's cache entries (full paths), whatever they are.
std::vector<std::string> entryPaths(const std::string &dir) {
  std::vector<std::string> paths;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *item = readdir(d)) {
      std::string name = item->d_name;
      if (name.size() > 6 && name.compare(name.size() - 6, 6, ".entry") == 0)
        paths.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

/// The entries of variants (not of cubins: those decode as cubin entries).
std::vector<std::string> variantEntryPaths(const std::string &dir) {
  std::vector<std::string> variants;
  for (const std::string &path : entryPaths(dir)) {
    std::string name = path.substr(dir.size() + 1);
    std::optional<std::string> payload =
        jit::DiskCache(dir).get(name.substr(0, name.size() - 6));
    if (payload && !jit::decodeCubinEntry(*payload))
      variants.push_back(path);
  }
  return variants;
}

bool isTemporary(const std::string &name) {
  return name.find(".tmp.") != std::string::npos;
}

/// The bytes of `path` if it is a regular file. The saboteur's own FIFOs
/// and links stay under entry names until a writer replaces them: opened
/// as a stream, a FIFO waited for a writer, and the saboteur stalled the
/// test for 14 minutes, a minute short of its watchdog.
std::optional<std::string> readRegularFile(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return std::nullopt;
  struct stat info;
  std::optional<std::string> bytes;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    bytes.emplace(size_t(info.st_size), '\0');
    ssize_t got = read(fd, bytes->data(), bytes->size());
    if (got < 0)
      bytes.reset();
    else
      bytes->resize(size_t(got));
  }
  close(fd);
  return bytes;
}

/// Replaces `path` atomically with `data`, as another writer would.
void replaceWith(const std::string &path, const std::string &data) {
  std::string temp = path + ".saboteur";
  writeFile(temp, data);
  if (rename(temp.c_str(), path.c_str()) != 0)
    unlink(temp.c_str());
}

/// Runs `attnc compile` and returns "" or what went wrong.
std::string runCompiler(const std::string &variant, const std::string &dir,
                        const std::string &output, const std::string &log) {
  std::vector<std::string> args = {ATTNC_TOOL,     "compile",     variant,
                                   "--emit=cubin", "--cache-dir", dir,
                                   "-o",           output};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  int error =
      posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    return std::string("cannot start ") + ATTNC_TOOL + ": " + strerror(error);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return "attnc compile " + variant + " died of signal " +
           std::to_string(WTERMSIG(status)) + "\n" + readFile(log);
  if (WEXITSTATUS(status) != 0)
    return "attnc compile " + variant + " exited with " +
           std::to_string(WEXITSTATUS(status)) + "\n" + readFile(log);
  return "";
}

class CacheStress : public ::testing::Test {
protected:
  void SetUp() override {
    StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
    if (!nvrtc.ok())
      GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
    // Nothing from an earlier test in this process: the reference compiles
    // must be real ones.
    forgetCompiledVariants();
  }

  /// The single-threaded, uncached compile of each variant `needed` asks
  /// for (each costs an NVRTC compile), then an empty in-process cache.
  void compileReferences(std::vector<int> needed) {
    references.resize(kVariants);
    for (int v : needed) {
      Reference &ref = references[v];
      ref.path = std::string(ATTNC_EXAMPLES_DIR) + "/" + kExamples[v];
      ref.source = readFile(ref.path);
      ASSERT_FALSE(ref.source.empty()) << "cannot read " << ref.path;
      StatusOr<CompiledVariant> compiled =
          compileVariant(ref.source, ref.path, options, "-");
      ASSERT_TRUE(compiled.ok()) << compiled.status().toString();
      ASSERT_FALSE(compiled->fromCache);
      ref.program = compiled->program.serialize();
      ref.cuda = compiled->cuda;
      ref.cubin = compiled->cubin;
      ref.registerRelief = compiled->registerRelief;
    }
    forgetCompiledVariants();
  }

  StatusOr<CompiledVariant> compile(int variant, const std::string &dir) {
    const Reference &ref = references[variant];
    return compileVariant(ref.source, ref.path, options, dir);
  }

  CompileOptions options; // the CLI's defaults: the same keys as `attnc`
  std::vector<Reference> references;
};

TEST_F(CacheStress, ThreadsAndProcessesShareOneDiskCacheUnderSabotage) {
  ASSERT_NO_FATAL_FAILURE(compileReferences({0, 1, 2, 3}));
  test::Watchdog watchdog(900, "the cache stress test");
  std::string root = freshDirectory();
  std::string dir = root + "/cache";
  constexpr int kThreads = 8, kCallsPerThread = 40;
  constexpr int kProcessSlots = 3, kRunsPerSlot = 6;
  constexpr int kTotalCalls =
      kThreads * kCallsPerThread + kProcessSlots * kRunsPerSlot;

  std::mutex failureMutex;
  std::vector<std::string> failures;
  auto fail = [&](std::string what) {
    std::lock_guard<std::mutex> lock(failureMutex);
    failures.push_back(std::move(what));
  };
  std::atomic<int> calls{0}, freshCompiles{0}, cacheWriteFailures{0};

  // Processes: `attnc compile` on the same cache, one after another per
  // slot, the slots at once.
  std::vector<std::thread> slots;
  for (int p = 0; p < kProcessSlots; ++p)
    slots.emplace_back([&, p] {
      for (int r = 0; r < kRunsPerSlot; ++r) {
        int v = (p + r) % kVariants;
        std::string base =
            root + "/process-" + std::to_string(p) + "-" + std::to_string(r);
        std::string error = runCompiler(references[v].path, dir,
                                        base + ".cubin", base + ".log");
        if (error.empty() && readFile(base + ".cubin") != references[v].cubin)
          error = "attnc compile " + references[v].path +
                  ": cubin differs from the uncached compile";
        if (!error.empty())
          fail(error);
        ++calls;
      }
    });

  // Threads: the same variants through compileVariant; one call in three
  // first empties the in-process cache, so that calls reach the disk.
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        int v = (t * 3 + i) % kVariants;
        if (i % 3 == t % 3)
          forgetCompiledVariants();
        StatusOr<CompiledVariant> got = compile(v, dir);
        if (!got.ok()) {
          fail("thread " + std::to_string(t) + ": " + got.status().toString());
        } else {
          if (std::string why = mismatch(references[v], *got); !why.empty())
            fail("thread " + std::to_string(t) + ", " + references[v].path +
                 ": " + why);
          freshCompiles += !got->fromCache;
          cacheWriteFailures += !got->cacheWrite.ok();
        }
        ++calls;
      }
    });

  // The saboteur: a fixed number of acts, paced by the others' progress
  // (not by time), so that the number of recompiles it causes is bounded.
  enum Act {
    Garbage,
    TearInPlace,
    OtherKeysEntry,
    Delete,
    Fifo,
    LinkToDevice,
    LinkToOtherEntry,
    DirectoryReadOnly,
    DirectoryReplacedByFile,
    kActs
  };
  constexpr int kRounds = 3;
  int acts = 0;
  for (int a = 0; a < kRounds * kActs; ++a) {
    int due = (a + 1) * kTotalCalls / (kRounds * kActs + 2);
    while (calls < due && calls < kTotalCalls)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (calls >= kTotalCalls)
      break;
    std::vector<std::string> entries = entryPaths(dir);
    if (entries.empty())
      continue;
    const std::string &target = entries[a % entries.size()];
    const std::string &other = entries[(a + 1) % entries.size()];
    auto waitForCalls = [&](int more) {
      int until = calls + more;
      while (calls < until && calls < kTotalCalls)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    };
    ++acts;
    switch (Act(a % kActs)) {
    case Garbage:
      replaceWith(target, "attnc-cache-v3\nnot a key\n12 garbage\n" +
                              std::string(1000, '\x7f'));
      break;
    case TearInPlace:
      // Not atomic: readers may see the file while it shrinks.
      if (int fd = open(target.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK);
          fd >= 0) {
        struct stat info;
        if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode))
          (void)ftruncate(fd, info.st_size / 2);
        close(fd);
      }
      break;
    case OtherKeysEntry:
      // A whole, valid entry of another variant under this one's name.
      if (other != target)
        if (std::optional<std::string> entry = readRegularFile(other))
          replaceWith(target, *entry);
      break;
    case Delete:
      unlink(target.c_str());
      break;
    case Fifo:
      unlink(target.c_str());
      mkfifo(target.c_str(), 0644);
      break;
    case LinkToDevice:
      unlink(target.c_str());
      (void)symlink("/dev/zero", target.c_str());
      break;
    case LinkToOtherEntry:
      if (other != target) {
        unlink(target.c_str());
        (void)symlink(other.c_str(), target.c_str());
      }
      break;
    case DirectoryReadOnly:
      // Stops writers unless they are root; DirectoryReplacedByFile stops
      // everyone.
      chmod(dir.c_str(), 0500);
      waitForCalls(4);
      chmod(dir.c_str(), 0755);
      break;
    case DirectoryReplacedByFile:
      if (rename(dir.c_str(), (dir + ".away").c_str()) == 0) {
        writeFile(dir, "a file where the cache directory was");
        waitForCalls(4);
        unlink(dir.c_str());
        rename((dir + ".away").c_str(), dir.c_str());
      }
      break;
    case kActs:
      break;
    }
  }
  for (std::thread &t : threads)
    t.join();
  for (std::thread &t : slots)
    t.join();

  std::cout << "[ stress ] " << kThreads << " threads x " << kCallsPerThread
            << " compiles and " << kProcessSlots * kRunsPerSlot
            << " attnc processes; " << acts << " acts of sabotage; "
            << freshCompiles << " in-process NVRTC compiles, "
            << cacheWriteFailures << " of them not cached\n";
  for (const std::string &failure : failures)
    ADD_FAILURE() << failure;
  EXPECT_GT(acts, kActs) << "the saboteur hardly acted: the test proves little";

  // The cache recovers: a first pass repairs what the saboteur left, after
  // which every variant is a disk hit.
  for (int pass = 0; pass < 2; ++pass) {
    forgetCompiledVariants();
    for (int v = 0; v < kVariants; ++v) {
      StatusOr<CompiledVariant> got = compile(v, dir);
      ASSERT_TRUE(got.ok()) << got.status().toString();
      EXPECT_EQ(mismatch(references[v], *got), "") << references[v].path;
      EXPECT_TRUE(got->cacheWrite.ok()) << got->cacheWrite.message();
      if (pass == 1)
        EXPECT_TRUE(got->fromCache) << references[v].path;
    }
  }
  EXPECT_EQ(countFiles(dir, isTemporary), 0)
      << "a writer left its temporary file behind";
}

TEST_F(CacheStress, ConcurrentFirstUseCompilesOnce) {
  ASSERT_NO_FATAL_FAILURE(compileReferences({1}));
  test::Watchdog watchdog(600, "concurrent first use");
  constexpr int kThreads = 8;
  std::atomic<int> ready{0}, fresh{0};
  std::vector<StatusOr<CompiledVariant>> results(
      kThreads, Status::error(ErrorCode::Internal, "not run"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < kThreads) // start together
        std::this_thread::yield();
      results[t] = compile(1, "-");
      if (results[t].ok())
        fresh += !results[t]->fromCache;
    });
  for (std::thread &t : threads)
    t.join();
  for (const StatusOr<CompiledVariant> &r : results) {
    ASSERT_TRUE(r.ok()) << r.status().toString();
    EXPECT_EQ(mismatch(references[1], *r), "");
  }
  // The others waited for that compile (or found its result) instead of
  // running the pipeline and NVRTC again.
  EXPECT_EQ(fresh, 1);
}

TEST_F(CacheStress, EntryOfAnotherVariantIsNeverUsed) {
  ASSERT_NO_FATAL_FAILURE(compileReferences({0, 2}));
  std::string dir = freshDirectory();
  ASSERT_TRUE(compile(0, dir).ok());
  std::vector<std::string> first = variantEntryPaths(dir);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(compile(2, dir).ok());
  std::vector<std::string> both = variantEntryPaths(dir);
  ASSERT_EQ(both.size(), 2u);
  std::string second = both[0] == first[0] ? both[1] : both[0];
  // Variant 2's valid entry under variant 0's name.
  ASSERT_EQ(rename(second.c_str(), first[0].c_str()), 0);
  forgetCompiledVariants();
  StatusOr<CompiledVariant> got = compile(0, dir);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(mismatch(references[0], *got), "");
  // The pipeline ran (its own cubin's entry still served NVRTC's part).
  EXPECT_GT(got->frontendMs, 0) << "another variant's entry was used";
  // The recompile put variant 0's entry back.
  forgetCompiledVariants();
  got = compile(0, dir);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->fromCache);
  EXPECT_EQ(got->frontendMs, 0);
  EXPECT_EQ(mismatch(references[0], *got), "");
}

TEST_F(CacheStress, EntryWithSizesThatDoNotFitIsRecompiled) {
  ASSERT_NO_FATAL_FAILURE(compileReferences({0}));
  std::string dir = freshDirectory();
  ASSERT_TRUE(compile(0, dir).ok());
  std::vector<std::string> paths = variantEntryPaths(dir);
  ASSERT_EQ(paths.size(), 1u);
  std::string name = paths[0].substr(dir.size() + 1);
  std::string key = name.substr(0, name.size() - 6);
  jit::DiskCache disk(dir);
  std::optional<std::string> entry = disk.get(key);
  ASSERT_TRUE(entry.has_value());
  size_t line = entry->find('\n');
  std::string body = entry->substr(line + 1);
  unsigned long long program = 0, cuda = 0, relief = 0;
  ASSERT_EQ(
      std::sscanf(entry->c_str(), "%llu %llu %llu", &program, &cuda, &relief),
      3);
  ASSERT_EQ(body.size(), program + cuda + 64) << "program, CUDA, cubin key";
  // Entries with a valid checksum (as a buggy or hostile writer could make)
  // whose sizes wrap around, overrun or leave no cubin key, or whose
  // register relief is missing or past attn-plan's steps. Each is whole
  // but for its one flaw.
  std::string p = std::to_string(program), c = std::to_string(cuda),
              r = std::to_string(relief);
  std::string header = p + " " + c + " " + r;
  std::vector<std::pair<std::string, std::string>> entries = {
      {p + " 18446744073709551615 " + r, body},        // wraps
      {header, body.substr(0, body.size() - 64)},      // no cubin key
      {header, body.substr(0, body.size() - 1)},       // a key cut short
      {header, body + "0"},                            // a key too long
      {header, body.substr(0, body.size() - 1) + "/"}, // not a key
      {p + " 99999999999999999999 " + r, body},        // more than 64 bits hold
      {"-1 " + c + " " + r, body},                     // not a size
      {p + " " + c, body},                             // no relief
      {p + " " + c + " 3", body}, // a relief attn-plan has not
      {p + " " + c + " 99999999999999999999", body}, // nor that
  };
  for (const auto &[head, rest] : entries) {
    ASSERT_TRUE(disk.put(key, head + "\n" + rest).ok());
    forgetCompiledVariants();
    StatusOr<CompiledVariant> got = compile(0, dir);
    ASSERT_TRUE(got.ok()) << head << ": " << got.status().toString();
    EXPECT_EQ(mismatch(references[0], *got), "") << head;
    EXPECT_GT(got->frontendMs, 0) << head << ": the entry was used";
  }
}

TEST_F(CacheStress, CompileSucceedsUncachedWhenTheCacheCannotBeWritten) {
  ASSERT_NO_FATAL_FAILURE(compileReferences({3}));
  std::string root = freshDirectory();
  writeFile(root + "/file", "not a directory");
  ASSERT_EQ(symlink((root + "/loop").c_str(), (root + "/loop").c_str()), 0);
  struct Case {
    std::string name, dir;
    rlim_t fileSizeLimit = RLIM_INFINITY;
  };
  std::vector<Case> cases = {
      {"under a regular file", root + "/file/cache"},
      {"a regular file", root + "/file"},
      {"a symlink loop", root + "/loop"},
      // A write that would pass the limit: what a full disk does to a
      // process with `ulimit -f`, without root for a small file system.
      {"over the file size limit", root + "/limited", 16 << 10},
  };
  ASSERT_EQ(mkdir((root + "/limited").c_str(), 0755), 0);
  // Caches that could be written but are refused: a cubin planted there
  // would be run. Mode set past the umask with chmod.
  ASSERT_EQ(mkdir((root + "/open").c_str(), 0700), 0);
  ASSERT_EQ(chmod((root + "/open").c_str(), 0777), 0);
  cases.push_back({"writable by others", root + "/open"});
  ASSERT_EQ(mkdir((root + "/foreign").c_str(), 0700), 0);
  if (geteuid() == 0 && chown((root + "/foreign").c_str(), 65534, 65534) == 0)
    cases.push_back({"owned by another user", root + "/foreign"});
  else
    std::cout << "[ owned by another user ] not run: needs root to chown\n";
  for (const Case &c : cases) {
    forgetCompiledVariants();
    StatusOr<CompiledVariant> got = Status::error(ErrorCode::Internal, "");
    {
      std::optional<FileSizeLimit> limit;
      if (c.fileSizeLimit != RLIM_INFINITY)
        limit.emplace(c.fileSizeLimit);
      got = compile(3, c.dir);
    }
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().toString();
    EXPECT_EQ(mismatch(references[3], *got), "") << c.name;
    EXPECT_FALSE(got->fromCache) << c.name;
    EXPECT_FALSE(got->cacheWrite.ok()) << c.name << ": reported as cached";
    std::cout << "[ " << c.name << " ] " << got->cacheWrite.message() << "\n";
  }
  EXPECT_EQ(readFile(root + "/file"), "not a directory");
  EXPECT_EQ(countFiles(root + "/limited"), 0) << "a torn entry was left";
  EXPECT_EQ(countFiles(root + "/open"), 0) << "a refused cache was written";
  EXPECT_EQ(countFiles(root + "/foreign"), 0) << "a refused cache was written";

  // The command line compiles, and says the cache did not take the result.
  std::string error = runCompiler(references[3].path, root + "/file/cache",
                                  root + "/cli.cubin", root + "/cli.log");
  ASSERT_EQ(error, "");
  EXPECT_EQ(readFile(root + "/cli.cubin"), references[3].cubin);
  EXPECT_NE(readFile(root + "/cli.log")
                .find("attnc: warning: compiled, but not cached: cannot "
                      "create " +
                      root + "/file/cache: " + strerror(ENOTDIR)),
            std::string::npos)
      << readFile(root + "/cli.log");
  // A refused cache is named once, with the reason.
  error = runCompiler(references[3].path, root + "/open", root + "/open.cubin",
                      root + "/open.log");
  ASSERT_EQ(error, "");
  EXPECT_EQ(readFile(root + "/open.cubin"), references[3].cubin);
  std::string log = readFile(root + "/open.log");
  std::string warning = "attnc: warning: compiled, but not cached: kernel "
                        "cache " +
                        root + "/open is writable by others (mode 0777)";
  size_t at = log.find(warning);
  EXPECT_NE(at, std::string::npos) << log;
  if (at != std::string::npos)
    EXPECT_EQ(log.find(warning, at + 1), std::string::npos)
        << "reported more than once: " << log;
}

} // namespace
} // namespace attnc
