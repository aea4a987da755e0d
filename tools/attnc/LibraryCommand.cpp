//===- LibraryCommand.cpp - attnc library build ---------------------------===//
//
// Compiles the library's variants (LibrarySpace.cpp) ahead, on --jobs
// threads, and writes every cubin the compiles made (the register relief's
// steps included: a later compile of the same variant walks them again,
// and finds each in the library) into one jit::KernelLibrary file. A
// rebuild takes the kernels whose CUDA did not change from the file it
// replaces (keys are content hashes), so only changed kernels pay NVRTC.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "LibrarySpace.h"

#include "attnc/Driver/Compile.h"
#include "jit/KernelLibrary.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace attnc {

namespace {

struct LibraryArgs {
  std::string arch = "sm_90a";
  std::string out;
  int jobs = 0;
  bool list = false;
  bool fresh = false;
  std::string filter;
};

/// Where the compiles look: the library being rebuilt, so that the kernels
/// whose CUDA did not change are taken from it rather than compiled again
/// (its entries are keyed by content), through a disk cache of this build's
/// own; or, for a fresh build, nowhere ("-"). Returns the cache directory
/// to compile with, removed by the caller.
StatusOr<std::string> reuseLibrary(const LibraryArgs &args) {
  struct stat info;
  if (args.fresh || stat(args.out.c_str(), &info) != 0) {
    setenv("ATTNC_KERNEL_LIBRARY", "-", 1);
    return std::string("-");
  }
  // Read before the first compile, which opens the library once.
  setenv("ATTNC_KERNEL_LIBRARY", args.out.c_str(), 1);
  // A directory of its own (0700), so that variants' entries from the
  // user's cache (which skip the lookups of the relief's steps) take no
  // part: every cubin the variants walk through is looked up, and kept.
  std::string pattern = (std::getenv("TMPDIR") && *std::getenv("TMPDIR")
                             ? std::string(std::getenv("TMPDIR"))
                             : std::string("/tmp")) +
                        "/attnc-library-XXXXXX";
  if (!mkdtemp(pattern.data()))
    return Status::error(ErrorCode::Internal, "cannot make a directory like " +
                                                  pattern + ": " +
                                                  std::strerror(errno));
  return pattern;
}

int buildLibrary(const LibraryArgs &args) {
  std::vector<LibraryVariant> variants;
  for (LibraryVariant &v : libraryVariants())
    if (v.name.find(args.filter) != std::string::npos)
      variants.push_back(std::move(v));
  if (variants.empty()) {
    std::cerr << "attnc: library build: no variant of the library matches "
                 "--filter '"
              << args.filter << "' (`attnc library build --list` names them)\n";
    return 2;
  }
  if (args.list) {
    for (const LibraryVariant &v : variants)
      std::cout << v.name << "\n";
    std::cout << variants.size() << " variants\n";
    return 0;
  }
  if (args.out.empty()) {
    std::cerr << "attnc: library build: --out FILE is needed (or --list)\n";
    return 2;
  }
  // Said before minutes of compiles, not after them.
  std::filesystem::path outDir =
      std::filesystem::absolute(args.out).parent_path();
  if (access(outDir.c_str(), W_OK) != 0) {
    std::cerr << "attnc: library build: cannot write --out " << args.out << ": "
              << outDir.string() << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> cacheDir = reuseLibrary(args);
  if (!cacheDir.ok()) {
    printFailure(cacheDir.status());
    return 1;
  }
  auto removeCache = [&] {
    std::error_code ignored;
    if (*cacheDir != "-")
      std::filesystem::remove_all(*cacheDir, ignored);
  };
  int jobs = args.jobs > 0
                 ? args.jobs
                 : std::max(1, int(std::thread::hardware_concurrency()));
  // attn-plan's defaults (H100's and H200's multiprocessors and shared
  // memory) are what the API plans with on those GPUs.
  CompileOptions options;
  options.arch = args.arch;
  std::atomic<size_t> next{0};
  std::atomic<int> done{0};
  std::mutex output;
  std::vector<std::string> failures;
  auto work = [&] {
    for (size_t i; (i = next++) < variants.size();) {
      const LibraryVariant &v = variants[i];
      StatusOr<Variant> variant = Variant::fromSpec(v.spec);
      StatusOr<CompiledVariant> compiled =
          variant.ok() ? compileVariant(variant->mlir(), v.name + ".mlir",
                                        options, *cacheDir)
                       : StatusOr<CompiledVariant>(variant.status());
      std::lock_guard<std::mutex> lock(output);
      int count = ++done;
      if (!compiled.ok()) {
        failures.push_back(v.name + ": " + compiled.status().toString());
        std::cerr << "attnc: library: " << v.name << " failed\n";
        continue;
      }
      if (!compiled->reliefError.ok())
        failures.push_back(
            v.name + ": register relief: " + compiled->reliefError.toString());
      // A line every 5%: the build log shows progress, not 500 lines.
      if (count % std::max<size_t>(1, variants.size() / 20) == 0)
        std::cerr << "attnc: library: " << count << "/" << variants.size()
                  << " compiled\n";
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t)
    threads.emplace_back(work);
  for (std::thread &t : threads)
    t.join();
  removeCache();
  for (const std::string &failure : failures)
    std::cerr << "attnc: library: " << failure << "\n";
  if (!failures.empty()) {
    std::cerr << "attnc: library: " << failures.size() << " of "
              << variants.size() << " variants failed; " << args.out
              << " not written\n";
    return 1;
  }
  std::map<std::string, std::string> entries = compiledCubinEntries();
  if (Status status = jit::KernelLibrary::write(args.out, entries);
      !status.ok()) {
    printFailure(status);
    return 1;
  }
  uint64_t bytes = 0;
  int reused = 0;
  const jit::KernelLibrary *previous = jit::KernelLibrary::shared();
  for (const auto &[key, payload] : entries) {
    bytes += payload.size();
    reused += previous && previous->find(key).has_value();
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cout << "attnc: library: " << variants.size() << " variants, "
            << entries.size() << " kernels (" << reused
            << " reused from the library before), " << bytes
            << " bytes of entries, "
            << "in " << seconds << " s on " << jobs << " threads: " << args.out
            << "\n";
  return 0;
}

} // namespace

void addLibraryCommand(CLI::App &app, int &exitCode) {
  CLI::App *cmd = app.add_subcommand(
      "library", "Build the prebuilt kernel library (attnc-kernels.bin)");
  cmd->require_subcommand(1);
  auto args = std::make_shared<LibraryArgs>();
  CLI::App *build = cmd->add_subcommand(
      "build", "Compile the common variants ahead into a library file, which "
               "attnc then looks up before NVRTC");
  addArchOption(*build, args->arch);
  build->add_option("--out", args->out, "the library file to write");
  build->add_option("--jobs", args->jobs, "compiles at once (0: one per core)")
      ->check(CLI::Range(0, 1024));
  build->add_option("--filter", args->filter,
                    "only the variants whose name holds this text (a small "
                    "library, for tests)");
  build->add_flag("--fresh", args->fresh,
                  "compile every kernel, rather than take those whose CUDA "
                  "did not change from the --out file");
  build->add_flag("--list", args->list,
                  "print the variants without compiling them");
  build->callback([args, &exitCode] { exitCode = buildLibrary(*args); });
}

} // namespace attnc
