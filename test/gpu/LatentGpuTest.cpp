//===- LatentGpuTest.cpp - multi-head latent attention against the reference //
//
// MLA variants (a latent cache whose leading columns are the values) through
// the whole pipeline on random inputs with poisoned outputs, compared with
// the double-precision reference: query heads 16 to 128, contiguous, ragged
// and paged caches (pages bulk-copied, and pages of 1 or 12 slots gathered
// row by row), fp8 caches (widened by the producer, scaled), split-KV
// (chosen and forced), chunked prefill whose 64-row blocks span several
// tokens, masks and modifiers, and persistent grids of a few CTAs. Without a
// GPU each case is skipped with the reason.
//
//===----------------------------------------------------------------------===//

#include "ReferenceCheck.h"
#include "attnc/Check/Checker.h"

#include <gtest/gtest.h>

#include <sstream>

namespace attnc {
namespace {

struct LatentCase {
  std::string name;
  int heads = 128, dim = 576, rope = 64;
  std::string elem = "bf16";
  bool decode = true;     // one query per request, else ragged queries
  std::string cache = ""; // "", "ragged", "paged<64, nhd>", "paged<1, nhd>"
  std::string attrs = ""; // "causal", "softcap = 30.0 : f32"
  RunShape shape;
  std::string cacheElem = ""; // the queries' type, or an fp8 type (scaled)
  int64_t clusterCtas = 1;    // attn-plan's cluster-ctas
  int64_t maxSplits = 16;     // attn-plan's max-splits
};

void PrintTo(const LatentCase &c, std::ostream *os) { *os << c.name; }

std::string variantText(const LatentCase &c) {
  std::string seq = c.decode ? "1" : "?";
  std::string qLayout = c.decode ? "" : ", ragged";
  std::ostringstream q, kv, out, lse;
  q << "!attn.q<" << seq << "x" << c.heads << "x" << c.dim << "x" << c.elem
    << qLayout << ">";
  bool fp8 = !c.cacheElem.empty();
  kv << "!attn.latent_kv<?x" << c.dim << "x" << (fp8 ? c.cacheElem : c.elem)
     << ", rope = " << c.rope << (c.cache.empty() ? "" : ", " + c.cache) << ">";
  out << "!attn.out<" << seq << "x" << c.heads << "x" << c.dim - c.rope << "x"
      << c.elem << qLayout << ">";
  lse << "!attn.lse<" << seq << "x" << c.heads << qLayout << ">";
  std::ostringstream s;
  s << "func.func @" << c.name << "(%q: " << q.str() << ", %kv: " << kv.str()
    << (fp8 ? ", %ks: memref<1xf32>, %vs: memref<1xf32>" : "") << ") -> ("
    << out.str() << ", " << lse.str() << ") {\n"
    << "  %out, %lse = attn.attention(%q, %kv)"
    << (fp8 ? " kv_scales(%ks, %vs : memref<1xf32>, memref<1xf32>)" : "")
    << (c.attrs.empty() ? "" : " {" + c.attrs + "}") << "\n      : " << q.str()
    << ", " << kv.str() << "\n      -> " << out.str() << ", " << lse.str()
    << "\n  return %out, %lse : " << out.str() << ", " << lse.str() << "\n}\n";
  return s.str();
}

RunShape shapeOf(int batch, int q, int kv, int splits = 0, int64_t ctas = 0) {
  RunShape s;
  s.batch = batch;
  s.qLen = q;
  s.kvLen = kv;
  s.splits = splits;
  s.gridCtas = ctas;
  s.seed = 11;
  return s;
}

std::vector<LatentCase> cases() {
  std::vector<LatentCase> all;
  auto add = [&](LatentCase c) { all.push_back(std::move(c)); };
  // DeepSeek-V3's 512 + 64 dims, as engines run it at several TP degrees.
  add({"h128_paged64", 128, 576, 64, "bf16", true, "paged<64, nhd>", "",
       shapeOf(4, 1, 1000)});
  add({"h16_dense", 16, 576, 64, "bf16", true, "", "", shapeOf(3, 1, 700)});
  add({"h32_ragged", 32, 576, 64, "bf16", true, "ragged", "",
       shapeOf(5, 1, 900)});
  add({"h64_paged16_hnd_f16", 64, 576, 64, "f16", true, "paged<16, hnd>", "",
       shapeOf(3, 1, 500)});
  add({"h128_short", 128, 576, 64, "bf16", true, "ragged", "",
       shapeOf(6, 1, 40)});
  // Pages that are not whole swizzle atoms are gathered row by row: SGLang's
  // one slot, and 12 slots whose tiles straddle pages; a split's and a
  // request's last tile clamp to the last key.
  add({"h16_paged1", 16, 576, 64, "bf16", true, "paged<1, nhd>", "",
       shapeOf(3, 1, 333)});
  add({"h128_paged12_hnd_split3", 128, 576, 64, "bf16", true, "paged<12, hnd>",
       "", shapeOf(2, 1, 701, 3)});
  add({"h16_chunked_causal_paged1", 16, 576, 64, "bf16", false, "paged<1, nhd>",
       "causal", shapeOf(2, 7, 150)});
  // Shared levels of cascade attention over a latent cache: each node's
  // rows (many requests' tokens) see all its keys, split across CTAs.
  add({"h16_shared_keys_paged64", 16, 576, 64, "bf16", false, "paged<64, nhd>",
       "shared_keys", shapeOf(3, 40, 2000)});
  add({"h128_shared_keys_paged1_split3", 128, 576, 64, "bf16", false,
       "paged<1, nhd>", "shared_keys", shapeOf(2, 6, 433, 3)});
  // One split, and more splits than the planner would choose.
  add({"h128_one_split", 128, 576, 64, "bf16", true, "paged<64, nhd>", "",
       shapeOf(2, 1, 800, 1)});
  add({"h16_five_splits", 16, 576, 64, "bf16", true, "paged<64, nhd>", "",
       shapeOf(2, 1, 800, 5)});
  // More splits than the merge pass loads at once (16), 8 of them empty:
  // 24 key tiles in shares of two.
  LatentCase twenty{
      "h16_twenty_splits",    16, 576, 64, "bf16", true, "paged<64, nhd>", "",
      shapeOf(2, 1, 1500, 20)};
  twenty.maxSplits = 32;
  add(twenty);
  // Chunked prefill in the absorbed form: a 64-row block holds 4 tokens of
  // 16 heads, each with its own causal bound.
  add({"h16_chunked_causal", 16, 576, 64, "bf16", false, "paged<64, nhd>",
       "causal", shapeOf(3, 20, 300)});
  add({"h128_chunked_causal_ragged", 128, 576, 64, "bf16", false, "ragged",
       "causal", shapeOf(2, 9, 200)});
  // Narrower rows take more stages.
  add({"h64_narrow_320", 64, 320, 64, "bf16", true, "", "",
       shapeOf(2, 1, 777)});
  // Masks and modifiers on the scores.
  add({"h32_softcap_window_sinks", 32, 576, 64, "bf16", true, "paged<64, nhd>",
       "softcap = 30.0 : f32, window = #attn.window<300, 0>, sinks = 4",
       shapeOf(3, 1, 900)});
  // fp8 latent caches, widened by the producer, with scales on the scores
  // and on the values: bulk-copyable pages and pages of one slot,
  // contiguous and ragged caches, f16 queries, split-KV and chunked
  // prefill.
  auto fp8 = [](LatentCase c, std::string type) {
    c.cacheElem = std::move(type);
    return c;
  };
  add(fp8({"h128_fp8_paged64", 128, 576, 64, "bf16", true, "paged<64, nhd>", "",
           shapeOf(3, 1, 900)},
          "f8E4M3FN"));
  add(fp8({"h16_fp8_e5m2_dense", 16, 576, 64, "bf16", true, "", "",
           shapeOf(2, 1, 500)},
          "f8E5M2"));
  add(fp8({"h32_fp8_paged1_split3", 32, 576, 64, "bf16", true, "paged<1, nhd>",
           "", shapeOf(2, 1, 433, 3)},
          "f8E4M3FN"));
  add(fp8({"h64_fp8_paged16_hnd_f16", 64, 576, 64, "f16", true,
           "paged<16, hnd>", "", shapeOf(3, 1, 300)},
          "f8E4M3FN"));
  add(fp8({"h16_fp8_chunked_causal_ragged", 16, 576, 64, "bf16", false,
           "ragged", "causal", shapeOf(2, 9, 250)},
          "f8E4M3FN"));
  add(fp8({"h32_fp8_shared_keys_paged16_hnd_f16", 32, 576, 64, "f16", false,
           "paged<16, hnd>", "shared_keys", shapeOf(2, 12, 700)},
          "f8E4M3FN"));
  add(fp8({"h128_fp8_softcap_grid2", 128, 576, 64, "bf16", true,
           "paged<64, nhd>", "softcap = 30.0 : f32", shapeOf(3, 1, 600, 0, 2)},
          "f8E4M3FN"));
  // 128 heads in clusters of two CTAs sharing each tile's loads: pages of
  // 64 (one box a tile) and of 16 (four, from four copying threads), a
  // contiguous ragged cache, causal chunked prefill, split-KV, and grids
  // of one and three CTAs (rounded to whole clusters).
  auto clustered = [](LatentCase c) {
    c.name += "_cluster";
    c.clusterCtas = 2;
    return c;
  };
  add(clustered({"h128_paged64", 128, 576, 64, "bf16", true, "paged<64, nhd>",
                 "", shapeOf(4, 1, 1000)}));
  add(clustered({"h128_paged16_hnd_split3", 128, 576, 64, "bf16", true,
                 "paged<16, hnd>", "", shapeOf(2, 1, 701, 3)}));
  add(clustered({"h128_short", 128, 576, 64, "bf16", true, "ragged", "",
                 shapeOf(6, 1, 40)}));
  add(clustered({"h128_chunked_causal_ragged", 128, 576, 64, "bf16", false,
                 "ragged", "causal", shapeOf(2, 9, 200)}));
  for (int ctas : {1, 3})
    add(clustered({"h128_paged64_grid" + std::to_string(ctas), 128, 576, 64,
                   "bf16", true, "paged<64, nhd>", "",
                   shapeOf(3, 1, 600, 0, ctas)}));
  // Persistent grids of a few CTAs walk many items each.
  for (int ctas : {1, 3})
    add({"h128_paged64_grid" + std::to_string(ctas), 128, 576, 64, "bf16", true,
         "paged<64, nhd>", "", shapeOf(3, 1, 600, 0, ctas)});
  return all;
}

/// Issue 50: a latent cache's never written slots (torch.empty's bytes)
/// hold NaN or +Inf, and so does a ragged cache's tail past the last
/// request: the copy engine loads them in the boxes of a request's last
/// tile, whose scores are masked but whose values P.V multiplies by 0 (0 x
/// NaN is NaN), so each consumer zeroes its value columns there. Bulk-
/// copied pages (a box a tile; boxes of 16), ragged caches with a tail,
/// clusters of two, chunked causal prefill, split-KV, and the rows the
/// producer gathers or widens (pages of 1, fp8), each with NaN and +Inf, at
/// key counts that end mid-page and mid-tile.
std::vector<LatentCase> unwrittenSlotCases() {
  std::vector<LatentCase> all;
  auto add = [&](LatentCase c) {
    for (RunShape::Unread fill :
         {RunShape::Unread::NaN, RunShape::Unread::Inf}) {
      LatentCase poisoned = c;
      poisoned.name += fill == RunShape::Unread::NaN ? "_nan" : "_inf";
      poisoned.shape.unread = fill;
      all.push_back(poisoned);
    }
  };
  auto fixed = [](int batch, int q, int kv, int splits = 0) {
    RunShape s = shapeOf(batch, q, kv, splits);
    s.varyLengths = false;
    return s;
  };
  auto tail = [](RunShape s, int rows) {
    s.kvTailRows = rows;
    return s;
  };
  auto clustered = [](LatentCase c) {
    c.name += "_cluster";
    c.clusterCtas = 2;
    return c;
  };
  add({"h128_paged64_kv300", 128, 576, 64, "bf16", true, "paged<64, nhd>", "",
       fixed(3, 1, 300)});
  add({"h16_paged16_hnd_kv1", 16, 576, 64, "bf16", true, "paged<16, hnd>", "",
       fixed(3, 1, 1)});
  add({"h64_ragged_tail_kv129", 64, 576, 64, "bf16", true, "ragged", "",
       tail(fixed(3, 1, 129), 100)});
  add({"h32_paged64_split3_kv1000", 32, 576, 64, "bf16", true, "paged<64, nhd>",
       "", fixed(2, 1, 1000, 3)});
  add({"h16_chunked_causal_paged64_kv150", 16, 576, 64, "bf16", false,
       "paged<64, nhd>", "causal", fixed(2, 7, 150)});
  add({"h128_paged64_varied", 128, 576, 64, "bf16", true, "paged<64, nhd>", "",
       shapeOf(4, 1, 700)});
  add(clustered({"h128_paged64_kv300", 128, 576, 64, "bf16", true,
                 "paged<64, nhd>", "", fixed(3, 1, 300)}));
  add(clustered({"h128_paged16_hnd_split3_kv1000", 128, 576, 64, "bf16", true,
                 "paged<16, hnd>", "", fixed(2, 1, 1000, 3)}));
  add(clustered({"h128_ragged_tail_kv40", 128, 576, 64, "bf16", true, "ragged",
                 "", tail(fixed(3, 1, 40), 64)}));
  // Rows the producer gathers or widens copy the request's last key.
  add({"h16_paged1_kv129", 16, 576, 64, "bf16", true, "paged<1, nhd>", "",
       fixed(3, 1, 129)});
  LatentCase fp8{"h128_fp8_paged64_kv300",
                 128,
                 576,
                 64,
                 "bf16",
                 true,
                 "paged<64, nhd>",
                 "",
                 fixed(3, 1, 300)};
  fp8.cacheElem = "f8E4M3FN";
  add(fp8);
  return all;
}

class LatentOnGpu : public ::testing::TestWithParam<LatentCase> {};

TEST_P(LatentOnGpu, MatchesReference) {
  const LatentCase &c = GetParam();
  std::string text = variantText(c);
  CompileOptions options;
  options.clusterCtas = c.clusterCtas;
  options.maxSplits = c.maxSplits;
  testing::expectMatchesReference(text, c.name + ".mlir", c.shape, c.name, text,
                                  options);
}

INSTANTIATE_TEST_SUITE_P(Latent, LatentOnGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(UnwrittenSlots, LatentOnGpu,
                         ::testing::ValuesIn(unwrittenSlotCases()),
                         [](const auto &info) { return info.param.name; });

} // namespace
} // namespace attnc
