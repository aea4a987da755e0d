//===- LibrarySpace.cpp - the variants the prebuilt library holds ---------===//
//
// The table below is the library's whole space. Each entry is built the
// way the Python API builds its spec (python/attnc/functional.py's dense
// call, python/attnc/paged.py's decode), through the same
// Variant::fromSpec, so the CUDA, and so the cubin key, is the one a
// user's call emits:
// - dense calls set queries_per_request to 1 for one query per request
//   (decode) and 0 otherwise (prefill); window=N is (N, 0); scale and
//   soft-cap default to none;
// - a dense call of "bhsd" tensors reads (request, KV head) pairs as
//   requests where it may (fold_allowed: decode, or as many KV heads as
//   query heads), so its kernel has the group's query heads and one KV
//   head; "bshd" tensors keep the model's heads;
// - PagedAttention's decode is dense queries, one per request, over pages.
//
//===----------------------------------------------------------------------===//

#include "LibrarySpace.h"

#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace attnc {

namespace {

/// (query heads, KV heads) of common models: Llama-3 8B and 70B (32/8,
/// 64/8), Llama-2 7B (32/32), small MHA models (16/16), Qwen2 7B (28/4),
/// and a GQA group of 8 over one KV head (tensor-parallel shards).
constexpr std::pair<int64_t, int64_t> kHeads[] = {{32, 8},  {32, 32}, {64, 8},
                                                  {16, 16}, {28, 4},  {8, 1}};
constexpr int64_t kHeadDims[] = {64, 128, 256};
constexpr DType kDtypes[] = {DType::BF16, DType::F16};

struct Mask {
  const char *name;
  bool causal;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<float> softcap;
};
/// A window's value is one choice: window extents are launch values, so
/// its kernel serves every window. A soft-capped kernel compiles its scale
/// and soft-cap in (AttnGPUToEmitC.cpp says why): Gemma-2's cap, with the
/// default scale.
const Mask kMasks[] = {
    {"none", false, std::nullopt, std::nullopt},
    {"causal", true, std::nullopt, std::nullopt},
    {"causal-window", true, std::make_pair(int64_t(1024), int64_t(0)),
     std::nullopt},
    {"causal-softcap", true, std::nullopt, 50.0f}, // Gemma-2's
};

enum class Shape { Prefill, Decode, PagedDecode };
const char *nameOf(Shape shape) {
  switch (shape) {
  case Shape::Prefill:
    return "prefill";
  case Shape::Decode:
    return "decode";
  case Shape::PagedDecode:
    return "paged-decode";
  }
  return "";
}

/// The kernels' (query heads, KV heads) for a model's heads: the model's
/// own, and for dense calls the folded pair "bhsd" tensors get.
std::vector<std::pair<int64_t, int64_t>>
kernelHeads(Shape shape, std::pair<int64_t, int64_t> model) {
  auto [heads, kvHeads] = model;
  std::vector<std::pair<int64_t, int64_t>> pairs = {model};
  bool decode = shape == Shape::Decode;
  if (shape != Shape::PagedDecode && heads % kvHeads == 0 &&
      (decode || heads == kvHeads))
    pairs.emplace_back(heads / kvHeads, 1);
  return pairs;
}

} // namespace

std::vector<LibraryVariant> libraryVariants() {
  std::vector<LibraryVariant> variants;
  std::set<std::string> seen;
  for (Shape shape : {Shape::Prefill, Shape::Decode, Shape::PagedDecode})
    for (DType dtype : kDtypes)
      for (int64_t dim : kHeadDims)
        for (const Mask &mask : kMasks)
          for (auto model : kHeads)
            for (auto [heads, kvHeads] : kernelHeads(shape, model)) {
              std::string name = std::string(nameOf(shape)) + "." +
                                 (dtype == DType::BF16 ? "bf16" : "f16") +
                                 ".d" + std::to_string(dim) + ".h" +
                                 std::to_string(heads) + "x" +
                                 std::to_string(kvHeads) + "." + mask.name;
              if (!seen.insert(name).second)
                continue;
              VariantSpec spec;
              spec.queryHeads = heads;
              spec.kvHeads = kvHeads;
              spec.headDim = dim;
              spec.dtype = dtype;
              spec.queryLayout = TokenLayout::Dense;
              spec.queriesPerRequest = shape == Shape::Prefill ? 0 : 1;
              if (shape == Shape::PagedDecode) {
                spec.kvLayout = TokenLayout::Paged;
                spec.pageSize = 16;
                spec.pageOrder = PageOrder::NHD;
              }
              spec.causal = mask.causal;
              spec.window = mask.window;
              spec.softcap = mask.softcap;
              variants.push_back({std::move(name), std::move(spec)});
            }
  return variants;
}

} // namespace attnc
