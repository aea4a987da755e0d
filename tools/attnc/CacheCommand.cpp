//===- CacheCommand.cpp - attnc cache list|clear|prune|prewarm ------------===//

#include "Commands.h"

#include "attnc/Driver/Compile.h"
#include "jit/DiskCache.h"

#include <chrono>
#include <iostream>

namespace attnc {

void addCacheCommand(CLI::App &app, int &exitCode) {
  auto dir = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand(
      "cache", "List, clear, prune or prewarm the kernel cache");
  cmd->add_option("--cache-dir", *dir,
                  "kernel cache (default $XDG_CACHE_HOME/attnc)");
  cmd->require_subcommand(1);
  auto cache = [dir] {
    return jit::DiskCache(dir->empty() ? jit::DiskCache::defaultDirectory()
                                       : *dir);
  };
  cmd->add_subcommand("list", "List cached kernels")
      ->callback([cache, &exitCode] {
        jit::DiskCache c = cache();
        StatusOr<std::vector<jit::DiskCache::Entry>> entries = c.list();
        if (!entries.ok()) {
          std::cerr << "attnc: " << entries.status().toString() << "\n";
          exitCode = 1;
          return;
        }
        std::cout << c.directory() << ": " << entries->size() << " entries\n";
        for (const auto &e : *entries)
          std::cout << "  " << e.key << "  " << e.bytes << " bytes"
                    << (e.valid ? "" : "  (corrupt: will be recompiled)")
                    << "\n";
      });
  cmd->add_subcommand("clear", "Remove every cached kernel")
      ->callback([cache, &exitCode] {
        jit::DiskCache c = cache();
        StatusOr<int> removed = c.clear();
        if (!removed.ok()) {
          std::cerr << "attnc: " << removed.status().toString() << "\n";
          exitCode = 1;
          return;
        }
        std::cout << "removed " << *removed << " entries from " << c.directory()
                  << "\n";
      });

  auto maxBytes = std::make_shared<uint64_t>(0);
  auto maxAgeDays = std::make_shared<int64_t>(0);
  CLI::App *prune = cmd->add_subcommand(
      "prune", "Remove invalid entries, entries unused for --max-age-days, "
               "then the least recently used beyond --max-bytes");
  prune
      ->add_option("--max-bytes", *maxBytes,
                   "keep at most this many bytes of entries (0: no limit)")
      ->check(CLI::Range(uint64_t(0), uint64_t(1) << 62));
  prune
      ->add_option("--max-age-days", *maxAgeDays,
                   "remove entries unused for longer (0: any age)")
      ->check(CLI::Range(int64_t(0), int64_t(36500)));
  prune->callback([cache, maxBytes, maxAgeDays, &exitCode] {
    jit::DiskCache c = cache();
    StatusOr<jit::DiskCache::PruneResult> result =
        c.prune(*maxBytes, *maxAgeDays * 24 * 3600);
    if (!result.ok()) {
      std::cerr << "attnc: " << result.status().toString() << "\n";
      exitCode = 1;
      return;
    }
    std::cout << "removed " << result->removed << " entries from "
              << c.directory() << "; kept " << result->kept << " ("
              << result->keptBytes << " bytes)\n";
  });

  auto files = std::make_shared<std::vector<std::string>>();
  auto arch = std::make_shared<std::string>("sm_90a");
  CLI::App *prewarm = cmd->add_subcommand(
      "prewarm", "Compile variants into the cache ahead of their first use");
  prewarm->add_option("files", *files, "variants (.mlir)")->required();
  addArchOption(*prewarm, *arch);
  prewarm->callback([dir, files, arch, &exitCode] {
    CompileOptions options;
    options.arch = *arch;
    showCompileProgress(options);
    for (const std::string &file : *files) {
      std::string source;
      if (!readSource(file, source)) {
        exitCode = 1;
        continue;
      }
      auto start = std::chrono::steady_clock::now();
      StatusOr<CompiledVariant> compiled =
          compileVariant(source, file, options, *dir);
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      if (!compiled.ok()) {
        printFailure(compiled.status());
        exitCode = 1;
        continue;
      }
      // A cubin from the prebuilt library or another variant's entry still
      // leaves this variant's own entry behind: no NVRTC next time either.
      std::cout << file << ": "
                << (!compiled->fromCache
                        ? "compiled in " + std::to_string(int64_t(ms)) + " ms"
                    : compiled->cubinSource == CubinSource::Library
                        ? std::string("in the prebuilt kernel library")
                        : std::string("cached already"))
                << "\n";
      if (!compiled->cacheWrite.ok())
        std::cerr << "attnc: " << file
                  << " was not cached: " << compiled->cacheWrite.toString()
                  << "\n";
    }
  });
}

} // namespace attnc
