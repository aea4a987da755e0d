//===- CacheCommand.cpp - attnc cache list|clear --------------------------===//

#include "Commands.h"

#include "jit/DiskCache.h"

#include <iostream>

namespace attnc {

void addCacheCommand(CLI::App &app, int &exitCode) {
  auto dir = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand("cache", "List or clear the kernel cache");
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
}

} // namespace attnc
