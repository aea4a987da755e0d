//===- Commands.h - subcommands of the attnc CLI ----------------*- C++ -*-===//

#ifndef ATTNC_TOOLS_ATTNC_COMMANDS_H
#define ATTNC_TOOLS_ATTNC_COMMANDS_H

#include "attnc/Status.h"

#include <CLI/CLI.hpp>

namespace attnc {

struct CompileOptions;

/// Reads a variant from `path` (- for stdin); says why on failure.
bool readSource(const std::string &path, std::string &source);

/// Prints a failure in one format: compiler diagnostics as they are
/// ("file:line:col: error: ..."), other errors as "attnc: kind: message".
void printFailure(const Status &status);

/// Shows on stderr what a compile that misses the kernel caches is doing
/// ("attnc: compiling ..."): NVRTC takes a second or more there.
void showCompileProgress(CompileOptions &options);

/// `--arch`, checked against the architectures attnc compiles for.
CLI::Option *addArchOption(CLI::App &command, std::string &arch);

/// `--prefill-warps`, `--decode-stages`, `--consumers` and
/// `--query-buffers`: attn-plan's tuning knobs, into `options`.
void addTuningOptions(CLI::App &command, CompileOptions &options);

/// `attnc sim`: the serving simulator.
void addSimCommand(CLI::App &app, int &exitCode);
/// `attnc compile`: a variant to IR, CUDA C++, PTX or a cubin.
void addCompileCommand(CLI::App &app, int &exitCode);
/// `attnc run`: a variant on the GPU, checked against the reference.
void addRunCommand(CLI::App &app, int &exitCode);
/// `attnc cache list|clear`.
void addCacheCommand(CLI::App &app, int &exitCode);
/// `attnc library build`: the prebuilt kernel library.
void addLibraryCommand(CLI::App &app, int &exitCode);

} // namespace attnc

#endif // ATTNC_TOOLS_ATTNC_COMMANDS_H
