//===- CacheTestSupport.h - files, directories and a watchdog ---*- C++ -*-===//

#ifndef ATTNC_TEST_UNIT_CACHETESTSUPPORT_H
#define ATTNC_TEST_UNIT_CACHETESTSUPPORT_H

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <vector>

namespace attnc::test {

/// These tests compile what they say: a prebuilt kernel library beside the
/// test binary (build/lib/attnc-kernels.bin) would answer some of their
/// compiles. Set before main, so before the library is first looked for;
/// child `attnc` processes inherit it.
inline const bool kNoKernelLibrary =
    setenv("ATTNC_KERNEL_LIBRARY", "-", /*overwrite=*/1) == 0;

/// Directories made by freshDirectory(), removed when the process exits
/// (each ctest test is a process of its own). Never destroyed: the exit
/// handler runs after static destructors may have.
struct MadeDirectories {
  std::mutex mutex;
  std::vector<std::string> paths;
};
inline MadeDirectories &madeDirectories() {
  static MadeDirectories *made = [] {
    auto *all = new MadeDirectories();
    std::atexit([] {
      MadeDirectories &dirs = madeDirectories();
      std::lock_guard<std::mutex> lock(dirs.mutex);
      for (const std::string &path : dirs.paths) {
        chmod(path.c_str(), 0755); // a test may have left it read-only
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      }
    });
    return all;
  }();
  return *made;
}

inline std::string freshDirectory() {
  char pattern[] = "/tmp/attnc-cache-test-XXXXXX";
  const char *made = mkdtemp(pattern);
  if (!made)
    return "/tmp/attnc-cache-test-failed-mkdtemp";
  MadeDirectories &dirs = madeDirectories();
  std::lock_guard<std::mutex> lock(dirs.mutex);
  dirs.paths.push_back(made);
  return made;
}

inline void writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Names in `dir` other than . and .. (-1 when it cannot be read).
inline int countFiles(
    const std::string &dir,
    const std::function<bool(const std::string &)> &keep =
        [](const std::string &) { return true; }) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return -1;
  int count = 0;
  while (dirent *item = readdir(d)) {
    std::string name = item->d_name;
    if (name != "." && name != ".." && keep(name))
      ++count;
  }
  closedir(d);
  return count;
}

/// Ends the process with a failure when its scope lasts longer than
/// `seconds`: a deadlock or a blocked read fails the test instead of hanging
/// CI. The limit is generous; it is not a performance bound.
class Watchdog {
public:
  Watchdog(int seconds, std::string what)
      : what_(std::move(what)), thread_([this, seconds] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!done_.wait_for(lock, std::chrono::seconds(seconds),
                              [this] { return finished_; })) {
            std::fprintf(stderr,
                         "watchdog: %s did not finish in %d s (deadlock or "
                         "blocked I/O); failing\n",
                         what_.c_str(), seconds);
            std::fflush(stderr);
            std::_Exit(3);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    done_.notify_all();
    thread_.join();
  }

private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool finished_ = false;
  std::thread thread_;
};

/// Lowers the soft file-size limit for the scope; SIGXFSZ keeps its default
/// action (kill), which is what a process that never thought of it has.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() { setrlimit(RLIMIT_FSIZE, &saved_); }

private:
  rlimit saved_;
};

} // namespace attnc::test

#endif // ATTNC_TEST_UNIT_CACHETESTSUPPORT_H
