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
// - PagedAttention's decode is dense queries, one per request, over pages
//   (its 16-bit caches, and e4m3 ones with a per-tensor scale); its prefill
//   (an engine's chunked prefill) ragged queries over the same pages;
// - MLAAttention's decode is one query per request over a paged latent
//   cache (DeepSeek-V2/V3: 512 + 64 columns), at the head counts of its
//   tensor-parallel shards.
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

enum class Shape { Prefill, Decode, PagedDecode, PagedPrefill };
const char *nameOf(Shape shape) {
  switch (shape) {
  case Shape::Prefill:
    return "prefill";
  case Shape::Decode:
    return "decode";
  case Shape::PagedDecode:
    return "paged-decode";
  case Shape::PagedPrefill:
    return "paged-prefill";
  }
  return "";
}
bool isPaged(Shape shape) {
  return shape == Shape::PagedDecode || shape == Shape::PagedPrefill;
}

/// DeepSeek-V2/V3's MLA: 128 query heads over one latent row of 512 value
/// columns and 64 rope columns, its softmax scale 1/sqrt(128 + 64), pages
/// of 64 slots (MLAAttention's default); the shards of 1, 2, 4 and 8 GPUs.
constexpr int64_t kLatentHeads[] = {128, 64, 32, 16};
constexpr int64_t kLatentDim = 576, kLatentRopeDim = 64, kLatentPage = 64;
constexpr float kLatentScale = 0.0721687836f;

/// The kernels' (query heads, KV heads) for a model's heads: the model's
/// own, and for dense calls the folded pair "bhsd" tensors get.
std::vector<std::pair<int64_t, int64_t>>
kernelHeads(Shape shape, std::pair<int64_t, int64_t> model) {
  auto [heads, kvHeads] = model;
  std::vector<std::pair<int64_t, int64_t>> pairs = {model};
  bool decode = shape == Shape::Decode;
  if (!isPaged(shape) && heads % kvHeads == 0 && (decode || heads == kvHeads))
    pairs.emplace_back(heads / kvHeads, 1);
  return pairs;
}

} // namespace

std::vector<LibraryVariant> libraryVariants() {
  std::vector<LibraryVariant> variants;
  std::set<std::string> seen;
  auto add = [&](std::string name, VariantSpec spec) {
    if (seen.insert(name).second)
      variants.push_back({std::move(name), std::move(spec)});
  };
  auto dtypeName = [](DType dtype) {
    return dtype == DType::BF16 ? "bf16" : dtype == DType::F16 ? "f16" : "e4m3";
  };
  for (Shape shape :
       {Shape::Prefill, Shape::Decode, Shape::PagedDecode, Shape::PagedPrefill})
    for (DType dtype : kDtypes)
      for (int64_t dim : kHeadDims)
        for (const Mask &mask : kMasks)
          for (auto model : kHeads)
            for (auto [heads, kvHeads] : kernelHeads(shape, model))
              // A paged decode's cache may be e4m3 under 16-bit queries.
              for (std::optional<DType> kvDtype :
                   {std::optional<DType>(),
                    std::optional<DType>(DType::F8E4M3)}) {
                if (kvDtype && shape != Shape::PagedDecode)
                  continue;
                // An engine's chunked prefill is causal; its fp8 caches
                // hold bf16 models' keys, read with or without a window.
                bool plainOrWindow =
                    !mask.softcap && mask.causal == !!mask.window;
                if (shape == Shape::PagedPrefill &&
                    (!mask.causal || mask.softcap))
                  continue;
                if (kvDtype && (dtype != DType::BF16 || !plainOrWindow))
                  continue;
                std::string name =
                    std::string(nameOf(shape)) + "." + dtypeName(dtype) +
                    (kvDtype ? std::string("-kv.") + dtypeName(*kvDtype)
                             : std::string()) +
                    ".d" + std::to_string(dim) + ".h" + std::to_string(heads) +
                    "x" + std::to_string(kvHeads) + "." + mask.name;
                VariantSpec spec;
                spec.queryHeads = heads;
                spec.kvHeads = kvHeads;
                spec.headDim = dim;
                spec.dtype = dtype;
                bool decode =
                    shape == Shape::Decode || shape == Shape::PagedDecode;
                spec.queryLayout = shape == Shape::PagedPrefill
                                       ? TokenLayout::Ragged
                                       : TokenLayout::Dense;
                spec.queriesPerRequest = decode ? 1 : 0;
                if (isPaged(shape)) {
                  spec.kvLayout = TokenLayout::Paged;
                  spec.pageSize = 16;
                  spec.pageOrder = PageOrder::NHD;
                }
                if (kvDtype) {
                  spec.kvDtype = *kvDtype;
                  spec.kvScales = KVScales::PerTensor;
                }
                spec.causal = mask.causal;
                spec.window = mask.window;
                spec.softcap = mask.softcap;
                add(std::move(name), std::move(spec));
              }
  for (DType kvDtype : {DType::BF16, DType::F8E4M3})
    for (int64_t heads : kLatentHeads) {
      VariantSpec spec;
      spec.queryHeads = heads;
      spec.kvHeads = 1;
      spec.headDim = kLatentDim;
      spec.ropeDim = kLatentRopeDim;
      spec.dtype = DType::BF16;
      spec.queryLayout = TokenLayout::Dense;
      spec.queriesPerRequest = 1;
      spec.kvLayout = TokenLayout::Paged;
      spec.pageSize = kLatentPage;
      spec.pageOrder = PageOrder::NHD;
      spec.scale = kLatentScale;
      if (kvDtype != DType::BF16) {
        spec.kvDtype = kvDtype;
        spec.kvScales = KVScales::PerTensor;
      }
      add(std::string("latent-decode.bf16") +
              (kvDtype != DType::BF16 ? "-kv.e4m3" : "") + ".d576.h" +
              std::to_string(heads),
          std::move(spec));
    }
  return variants;
}

} // namespace attnc
