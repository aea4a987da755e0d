//===- Nvrtc.h - CUDA C++ to cubin at run time ------------------*- C++ -*-===//
//
// libnvrtc is loaded with dlopen; the device tile library comes from the
// embedded headers, so only the toolkit's own include directory (found at
// run time, optional) is read from disk.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_JIT_NVRTC_H
#define ATTNC_RUNTIME_JIT_NVRTC_H

#include "attnc/Status.h"
#include "support/DynamicLibrary.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace attnc::jit {

struct CompiledCode {
  std::string image; // cubin, or PTX text when PTX was asked for
  std::string log;   // NVRTC's log, ptxas's resource usage included
};

/// The lines of a ptxas log (CompiledCode::log) that report local memory:
/// a stack frame, spill stores or spill loads of more than 0 bytes.
std::vector<std::string> localMemoryLines(const std::string &log);
/// Those lines' bytes, summed.
int64_t localMemoryBytes(const std::string &log);
/// The milliseconds ptxas reports it took (-v: "Compile time = N ms"),
/// summed over its reports; 0 for a log without any (a ptxas that does not
/// print its time).
double ptxasMilliseconds(const std::string &log);

class Nvrtc {
public:
  static StatusOr<Nvrtc *> get();
  /// Compiles `source` for `arch` ("sm_90a") to a cubin, or to PTX.
  /// Where a CUDA driver is loaded, NVRTC 12.9 and later also look in, and
  /// add to, the driver's compute cache (~/.nv/ComputeCache):
  /// `driverCache = false` bypasses it (NVRTC's --no-cache): for callers
  /// that asked for no cache at all, so that their compile is cold, and
  /// for compileVariant, which reads ptxas's report (an answer from the
  /// driver's cache has none).
  StatusOr<CompiledCode> compile(const std::string &source,
                                 const std::string &arch, bool ptx,
                                 bool driverCache) const;
  /// "13.0": part of the keys of cubins compiled for the runtime itself
  /// (cachedCubin); a variant's cubin is keyed without it (cubinKey).
  std::string version() const;
  /// The options `compile` passes NVRTC that change a cubin (the arch
  /// among them); not the toolkit's include directory, nor --no-cache.
  /// cubinKey hashes them.
  static std::vector<std::string> cubinOptions(const std::string &arch);
  /// The toolkit's include directory, or "" when none was found.
  static std::string findCudaIncludeDir();

private:
  friend StatusOr<Nvrtc *> attnc::loadOnce<Nvrtc>();
  Nvrtc() = default;
  Status load();
  using Program = struct _nvrtcProgram *;
#define ATTNC_NVRTC_FUNCTIONS(X)                                               \
  X(nvrtcVersion, int(int *, int *))                                           \
  X(nvrtcGetErrorString, const char *(int))                                    \
  X(nvrtcCreateProgram, int(Program *, const char *, const char *, int,        \
                            const char *const *, const char *const *))         \
  X(nvrtcCompileProgram, int(Program, int, const char *const *))               \
  X(nvrtcGetProgramLogSize, int(Program, size_t *))                            \
  X(nvrtcGetProgramLog, int(Program, char *))                                  \
  X(nvrtcGetCUBINSize, int(Program, size_t *))                                 \
  X(nvrtcGetCUBIN, int(Program, char *))                                       \
  X(nvrtcGetPTXSize, int(Program, size_t *))                                   \
  X(nvrtcGetPTX, int(Program, char *))                                         \
  X(nvrtcDestroyProgram, int(Program *))
#define ATTNC_DECLARE(name, type) std::add_pointer_t<type> name = nullptr;
  ATTNC_NVRTC_FUNCTIONS(ATTNC_DECLARE)
#undef ATTNC_DECLARE
  int major_ = 0, minor_ = 0;
};

} // namespace attnc::jit

#endif // ATTNC_RUNTIME_JIT_NVRTC_H
