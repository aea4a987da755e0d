//===- FuzzOptions.cpp - compile options carried by a fuzz input ----------===//

#include "FuzzOptions.h"

#include "attnc/Transforms/Passes.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace attnc::fuzz {

namespace {

struct Arch {
  std::string_view name;
  int64_t smem; // opt-in shared memory per block, as the driver reports it
};

// The architectures attnc's users run on, with their devices' limits.
constexpr Arch kArchs[] = {{"sm_80", 166912},  {"sm_86", 101376},
                           {"sm_89", 101376},  {"sm_90", 232448},
                           {"sm_90a", 232448}, {"sm_100a", 232448},
                           {"sm_120", 101376}};

/// The decimal number at the start of `s`, saturated so that no input
/// overflows it.
int64_t leadingNumber(std::string_view s) {
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      break;
    n = std::min<int64_t>(n * 10 + (c - '0'), 1 << 30);
  }
  return n;
}

} // namespace

CompileOptions optionsFrom(std::string_view source) {
  CompileOptions options;
  constexpr std::string_view kMarker = "// fuzz:";
  size_t at = source.find(kMarker);
  if (at == std::string_view::npos)
    return options;
  std::string_view line = source.substr(at + kMarker.size());
  line = line.substr(0, line.find('\n'));
  while (!line.empty()) {
    size_t end = line.find(' ');
    std::string_view word = line.substr(0, end);
    line = end == std::string_view::npos ? "" : line.substr(end + 1);
    size_t eq = word.find('=');
    if (eq == std::string_view::npos)
      continue;
    std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "arch") {
      for (const Arch &arch : kArchs)
        if (value == arch.name) {
          options.arch = std::string(arch.name);
          options.smem = arch.smem;
        }
    } else if (key == "warps") {
      options.prefillWarps = std::min<int64_t>(leadingNumber(value), 8);
    } else if (key == "consumers") {
      options.consumers = std::min<int64_t>(leadingNumber(value), 3);
    } else if (key == "q_buffers") {
      options.queryBuffers = std::min<int64_t>(leadingNumber(value), 2);
    } else if (key == "cluster") {
      options.clusterCtas = leadingNumber(value) == 2 ? 2 : 1;
    } else if (key == "relief") {
      options.registerRelief = std::min<int64_t>(
          leadingNumber(value), mlir::attn::kMaxRegisterRelief);
    } else if (key == "stages") {
      options.decodeStages = std::min<int64_t>(leadingNumber(value), 8);
    } else if (key == "sms") {
      options.sms = std::max<int64_t>(leadingNumber(value), 1);
    }
  }
  return options;
}

} // namespace attnc::fuzz
