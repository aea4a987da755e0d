//===- FuzzRegions.cpp - attnc-fuzz-regions: region text through the spec -===//
//
// What Python's attnc.attention(score_mod=..., mask_mod=..., captures=...)
// and Variant.from_spec hand the library: region block text and capture
// types in an attnc_variant_spec, through attnc_variant_from_spec (which
// pastes them into the variant it writes and parses). A variant that
// verifies then goes down the compiler's front half to CUDA text as the
// JIT would before NVRTC (FuzzPipeline.h).
//
// The input: a first line of spec choices, one byte each counted from '0'
// (an empty line is the plain spec every seed starts from: 16 heads of
// 128, bf16, dense), then the score_mod text, a NUL, the mask_mod text, a
// NUL, and each capture type after a NUL of its own. A missing field is
// NULL, an empty one "" (both: no region).
//
//===----------------------------------------------------------------------===//

#include "FuzzPipeline.h"

#include "attnc/attnc_c.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace {

/// The spec choices of the input's first line.
class Choices {
public:
  explicit Choices(std::string line) : line_(std::move(line)) {}
  /// One of `values`, the first when the line has run out.
  template <typename T, size_t N> T pick(const T (&values)[N]) {
    if (next_ >= line_.size())
      return values[0];
    auto byte = static_cast<unsigned char>(line_[next_++] - '0');
    return values[byte % N];
  }
  /// An index below `n`, 0 when the line has run out.
  size_t index(size_t n) {
    if (next_ >= line_.size())
      return 0;
    return static_cast<unsigned char>(line_[next_++] - '0') % n;
  }

private:
  std::string line_;
  size_t next_ = 0;
};

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
const float kNaN = std::nanf("");
const float kInf = std::numeric_limits<float>::infinity();

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  size_t newline = input.find('\n');
  if (newline == std::string::npos)
    newline = input.size();
  Choices choose(input.substr(0, newline));
  std::vector<std::string> fields;
  if (newline < input.size()) {
    std::string rest = input.substr(newline + 1);
    size_t start = 0;
    while (true) {
      size_t nul = rest.find('\0', start);
      fields.push_back(rest.substr(start, nul - start));
      if (nul == std::string::npos)
        break;
      start = nul + 1;
    }
  }

  attnc_variant_spec spec;
  attnc_variant_spec_init(&spec);
  // Each list starts with the plain spec's value; most of the rest verify,
  // a few are what the C encoding or the verifier refuses.
  const char *names[] = {"attention", nullptr, "f", "", "1x", "a b"};
  spec.name = choose.pick(names);
  const int64_t heads[] = {16, 8, 1, 32, 12, 0, -1, 1025};
  spec.query_heads = choose.pick(heads);
  const int64_t kvHeads[] = {0, 1, 2, 4, 3, -1, kHuge};
  int64_t kv = choose.pick(kvHeads);
  spec.kv_heads = kv == 0 ? spec.query_heads : kv; // 0: as many as queries
  const int64_t dims[] = {128, 64, 256, 96, 192, 576, 8, 0, -1, 4096};
  spec.head_dim = choose.pick(dims);
  const int dtypes[] = {ATTNC_BF16, ATTNC_F16, ATTNC_F32, 99, -1};
  int dtype = choose.pick(dtypes);
  spec.dtype = static_cast<attnc_dtype>(dtype);
  const int layouts[] = {ATTNC_DENSE, ATTNC_RAGGED, ATTNC_PAGED, 7};
  spec.query_layout = static_cast<attnc_layout>(choose.pick(layouts));
  const int64_t perRequest[] = {0, 1, 4, -1};
  spec.queries_per_request = choose.pick(perRequest);
  spec.kv_layout = static_cast<attnc_layout>(choose.pick(layouts));
  const int64_t pageSizes[] = {16, 1, 256, 64, 0, 3, 300};
  spec.page_size = choose.pick(pageSizes);
  const int orders[] = {ATTNC_NHD, ATTNC_HND, 5};
  spec.page_order = static_cast<attnc_page_order>(choose.pick(orders));
  const int flags[] = {0, 1, 0, 1, 2, -1};
  spec.causal = choose.pick(flags);
  const int64_t windows[][2] = {{-1, -1}, {128, 0},   {0, 0},  {64, 64},
                                {-1, 5},  {kHuge, 0}, {-2, -2}};
  const int64_t *window =
      windows[choose.index(sizeof windows / sizeof *windows)];
  spec.window_left = window[0];
  spec.window_right = window[1];
  const int64_t sinks[] = {0, 4, 1, -1, kHuge};
  spec.sinks = choose.pick(sinks);
  const float scales[] = {0.f, 0.125f, 1.f, -1.f, kNaN, kInf, 1e-40f};
  spec.scale = choose.pick(scales);
  const float softcaps[] = {0.f, 30.f, 50.f, -1.f, kNaN, kInf};
  spec.softcap = choose.pick(softcaps);
  spec.alibi = choose.pick(flags);
  spec.return_lse = choose.pick(flags);
  const int kvDtypes[] = {-1, -1, ATTNC_F8E4M3, ATTNC_F8E5M2, ATTNC_F16, 99};
  spec.kv_dtype = choose.pick(kvDtypes);
  const int kvScales[] = {ATTNC_KV_SCALES_NONE, ATTNC_KV_SCALES_PER_TENSOR,
                          ATTNC_KV_SCALES_PER_HEAD, 3};
  spec.kv_scales = static_cast<attnc_kv_scales>(choose.pick(kvScales));
  const int64_t ropeDims[] = {0, 0, 64, 32, -1};
  spec.rope_dim = choose.pick(ropeDims);
  const int64_t valueDims[] = {0, 0, 128, 64, -1};
  spec.value_head_dim = choose.pick(valueDims);

  // The regions and capture types, as C strings: text after a NUL inside
  // a field cannot reach the library (Python refuses a NUL, C ends there).
  std::vector<const char *> captures;
  for (size_t i = 2; i < fields.size(); ++i)
    captures.push_back(fields[i].c_str());
  spec.score_mod = fields.size() > 0 ? fields[0].c_str() : nullptr;
  spec.mask_mod = fields.size() > 1 ? fields[1].c_str() : nullptr;
  spec.capture_types = captures.empty() ? nullptr : captures.data();
  spec.num_captures = int(captures.size());
  // Counts the library bounds (0..max_captures) or refuses (null arrays)
  // before it reads the array.
  const int captureCounts[] = {0, 1, 2, 3, 4};
  switch (choose.pick(captureCounts)) {
  case 1:
    spec.num_captures = -1;
    break;
  case 2:
    spec.num_captures =
        int(attnc_get_limits()->max_captures) + 1 + int(captures.size());
    break;
  case 3:
    if (!captures.empty())
      captures.back() = nullptr; // a null entry, refused
    break;
  case 4:
    spec.capture_types = nullptr;
    break;
  }
  const char *optionLines[] = {
      "", "// fuzz: arch=sm_80 warps=4 stages=2\n",
      "// fuzz: arch=sm_90a consumers=3 q_buffers=2\n",
      "// fuzz: arch=sm_120 warps=8 stages=8 sms=188\n",
      "// fuzz: arch=sm_86 warps=2 stages=5 sms=1\n"};
  const char *options = choose.pick(optionLines);

  attnc_variant variant = nullptr;
  // Too many captures for the array passed is refused before it is read.
  if (spec.num_captures > int(captures.size()) &&
      spec.num_captures <= int(attnc_get_limits()->max_captures))
    spec.num_captures = int(captures.size());
  if (attnc_variant_from_spec(&spec, &variant) != ATTNC_OK)
    return 0;
  const char *mlir = attnc_variant_mlir(variant);
  if (!mlir || !*mlir) {
    std::fprintf(stderr, "attnc-fuzz-regions: a live variant has no text\n");
    __builtin_trap();
  }
  // What attnc_kernel_compile does with the variant before NVRTC.
  static const bool print = std::getenv("ATTNC_FUZZ_PRINT") != nullptr;
  std::string source = std::string(options) + mlir;
  if (print) {
    std::fwrite(source.data(), 1, source.size(), stdout);
    std::fflush(stdout);
  }
  attnc::fuzz::compileForFuzzing(source);
  if (attnc_variant_destroy(variant) != ATTNC_OK) {
    std::fprintf(stderr, "attnc-fuzz-regions: cannot destroy a variant\n");
    __builtin_trap();
  }
  return 0;
}
