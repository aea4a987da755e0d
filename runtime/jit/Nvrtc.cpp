//===- Nvrtc.cpp - CUDA C++ to cubin at run time --------------------------===//

#include "jit/Nvrtc.h"

#include "jit/DeviceHeaders.h"
#include "support/DynamicLibrary.h"

#include <charconv>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace attnc::jit {

static bool isDirectory(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

static std::vector<std::string> toolkitRoots() {
  std::vector<std::string> roots;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(var); value && *value)
      roots.push_back(value);
  roots.push_back("/usr/local/cuda");
  return roots;
}

std::string Nvrtc::findCudaIncludeDir() {
  for (const std::string &root : toolkitRoots())
    if (isDirectory(root + "/include"))
      return root + "/include";
  return "";
}

StatusOr<Nvrtc *> Nvrtc::get() { return loadOnce<Nvrtc>(); }

Status Nvrtc::load() {
  std::vector<std::string> names;
  for (const char *version : {"13", "12"})
    names.push_back(std::string("libnvrtc.so.") + version);
  names.push_back("libnvrtc.so");
  for (const std::string &root : toolkitRoots()) {
    names.push_back(root + "/lib64/libnvrtc.so");
    names.push_back(root + "/lib/libnvrtc.so");
  }
  StatusOr<DynamicLibrary> library =
      DynamicLibrary::open(names, ErrorCode::Unsupported);
  if (!library.ok())
    return Status::error(ErrorCode::Unsupported,
                         "NVRTC is needed to compile CUDA C++: " +
                             library.status().message());
#define ATTNC_LOAD(name, type)                                                 \
  if (Status s = lookupFunction(*library, #name, name); !s.ok())               \
    return s;
  ATTNC_NVRTC_FUNCTIONS(ATTNC_LOAD)
#undef ATTNC_LOAD
  nvrtcVersion(&major_, &minor_);
  return Status();
}

namespace {
/// ptxas's report of one kernel's local memory (-v).
const std::regex &localMemoryReport() {
  static const std::regex report(
      "([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) "
      "bytes spill loads");
  return report;
}

/// Calls `line(text, bytes)` for each report of more than 0 bytes. A
/// kernel's local memory is kilobytes at most: twelve digits of a field
/// cannot overflow, and a longer field reads as its first twelve, still
/// more than any kernel has.
template <class Fn>
void forEachLocalMemoryReport(const std::string &log, Fn line) {
  std::istringstream in(log);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (!std::regex_search(text, m, localMemoryReport()))
      continue;
    int64_t bytes = 0;
    for (int i = 1; i <= 3; ++i)
      bytes += std::stoll(m[i].str().substr(0, 12));
    if (bytes > 0)
      line(text, bytes);
  }
}
} // namespace

std::vector<std::string> localMemoryLines(const std::string &log) {
  std::vector<std::string> lines;
  forEachLocalMemoryReport(
      log, [&](const std::string &text, int64_t) { lines.push_back(text); });
  return lines;
}

int64_t localMemoryBytes(const std::string &log) {
  int64_t total = 0;
  forEachLocalMemoryReport(
      log, [&](const std::string &, int64_t bytes) { total += bytes; });
  return total;
}

double ptxasMilliseconds(const std::string &log) {
  static const std::regex report(
      "ptxas info *: Compile time = ([0-9]+(?:\\.[0-9]+)?) ms");
  double total = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), report), end; it != end;
       ++it) {
    // from_chars reads the C locale's digits whatever the host's locale;
    // a number past double's range is no time ptxas took: it adds nothing.
    std::string digits = (*it)[1].str();
    double ms = 0;
    std::from_chars_result read =
        std::from_chars(digits.data(), digits.data() + digits.size(), ms);
    if (read.ec == std::errc())
      total += ms;
  }
  return total;
}

std::string Nvrtc::version() const {
  return std::to_string(major_) + "." + std::to_string(minor_);
}

std::vector<std::string> Nvrtc::cubinOptions(const std::string &arch) {
  // A real target (sm_90a), not a virtual one, so NVRTC runs ptxas and its
  // resource report (registers, spills) lands in the log. Line info names
  // the device header and line in compute-sanitizer's and profilers'
  // reports; it changes no instruction, but triples a cubin's bytes (the
  // prebuilt library's among them) and writes the working directory into
  // them, so it is asked for (ATTNC_LINEINFO=1), as the sanitizer runs do.
  std::vector<std::string> options = {"--gpu-architecture=" + arch,
                                      "-std=c++17", "--ptxas-options=-v",
                                      "-default-device"};
  const char *lineInfo = std::getenv("ATTNC_LINEINFO");
  if (lineInfo && std::string(lineInfo) == "1")
    options.push_back("-lineinfo");
  return options;
}

StatusOr<CompiledCode> Nvrtc::compile(const std::string &source,
                                      const std::string &arch, bool ptx,
                                      bool driverCache) const {
  std::vector<const char *> names, contents;
  for (int i = 0; i < kNumDeviceHeaders; ++i) {
    names.push_back(kDeviceHeaders[i].includeName);
    contents.push_back(kDeviceHeaders[i].content);
  }
  Program program = nullptr;
  int result =
      nvrtcCreateProgram(&program, source.c_str(), "attnc_kernel.cu",
                         kNumDeviceHeaders, contents.data(), names.data());
  if (result != 0)
    return Status::error(ErrorCode::CompileError,
                         std::string("nvrtcCreateProgram: ") +
                             nvrtcGetErrorString(result));
  std::vector<std::string> cubin = cubinOptions(arch);
  std::string include = findCudaIncludeDir();
  std::string includeOption = "-I" + include;
  std::vector<const char *> options;
  for (const std::string &option : cubin)
    options.push_back(option.c_str());
  if (!include.empty())
    options.push_back(includeOption.c_str());
  if (!driverCache && (major_ > 12 || (major_ == 12 && minor_ >= 9)))
    options.push_back("--no-cache");
  result = nvrtcCompileProgram(program, int(options.size()), options.data());
  CompiledCode code;
  size_t logSize = 0;
  nvrtcGetProgramLogSize(program, &logSize);
  code.log.resize(logSize);
  if (logSize)
    nvrtcGetProgramLog(program, code.log.data());
  while (!code.log.empty() && code.log.back() == '\0')
    code.log.pop_back();
  if (result != 0) {
    nvrtcDestroyProgram(&program);
    return Status::error(ErrorCode::CompileError,
                         std::string("NVRTC failed (") +
                             nvrtcGetErrorString(result) + "):\n" + code.log);
  }
  size_t size = 0;
  if (ptx) {
    nvrtcGetPTXSize(program, &size);
    code.image.resize(size);
    nvrtcGetPTX(program, code.image.data());
    while (!code.image.empty() && code.image.back() == '\0')
      code.image.pop_back();
  } else {
    nvrtcGetCUBINSize(program, &size);
    code.image.resize(size);
    nvrtcGetCUBIN(program, code.image.data());
  }
  nvrtcDestroyProgram(&program);
  return code;
}

} // namespace attnc::jit
