//===- AttentionGpuTest.cpp - variants on the GPU against the reference ---===//
//
// Every case writes a variant in the attn dialect, compiles it through the
// whole pipeline (NVRTC included), runs it on random inputs with poisoned
// outputs and compares every output with the double-precision reference.
// Without a GPU each case is skipped with the reason.
//
//===----------------------------------------------------------------------===//

#include "ReferenceCheck.h"
#include "attnc/Check/Checker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string_view>

namespace attnc {
namespace {

struct Case {
  std::string name;
  int qHeads = 8, kvHeads = 8, dim = 128;
  std::string elem = "bf16";
  bool decode = false, raggedQ = false;
  std::string kv = "";    // "", "ragged", "paged<16, nhd>"
  std::string attrs = ""; // "causal", "window = #attn.window<64, 0>, sinks = 4"
  std::string region = ""; // score_mod / mask_mod text, uses %doc capture
  bool capture = false;
  RunShape shape;
  int vDim = 0; // the value head dim where it differs from `dim`
  /// An fp8 cache ("f8E4M3FN", "f8E5M2"; empty: `elem`) and the sizes of
  /// its key and value scales (0: none, 1: per tensor, kvHeads: per head).
  std::string kvElem = "";
  int kScales = 0, vScales = 0;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::string variantText(const Case &c) {
  std::string seq = c.decode ? "1" : "?";
  std::string qLayout = c.raggedQ ? ", ragged" : "";
  std::string kvLayout = c.kv.empty() ? "" : ", " + c.kv;
  int vDim = c.vDim ? c.vDim : c.dim;
  std::string kvElem = c.kvElem.empty() ? c.elem : c.kvElem;
  std::string kScale = "memref<" + std::to_string(c.kScales) + "xf32>";
  std::string vScale = "memref<" + std::to_string(c.vScales) + "xf32>";
  std::ostringstream q, kv, v, out, lse;
  q << "!attn.q<" << seq << "x" << c.qHeads << "x" << c.dim << "x" << c.elem
    << qLayout << ">";
  kv << "!attn.kv<?x" << c.kvHeads << "x" << c.dim << "x" << kvElem << kvLayout
     << ">";
  v << "!attn.kv<?x" << c.kvHeads << "x" << vDim << "x" << kvElem << kvLayout
    << ">";
  out << "!attn.out<" << seq << "x" << c.qHeads << "x" << vDim << "x" << c.elem
      << qLayout << ">";
  lse << "!attn.lse<" << seq << "x" << c.qHeads << qLayout << ">";
  std::ostringstream s;
  s << "func.func @" << c.name << "(%q: " << q.str() << ", %k: " << kv.str()
    << ", %v: " << v.str()
    << (c.kScales ? ", %ks: " + kScale + ", %vs: " + vScale : "")
    << (c.capture ? ", %doc: memref<?x?xi32>" : "") << ") -> (" << out.str()
    << ", " << lse.str() << ") {\n"
    << "  %out, %lse = attn.attention(%q, %k, %v)"
    << (c.kScales ? " kv_scales(%ks, %vs : " + kScale + ", " + vScale + ")"
                  : "")
    << (c.capture ? " captures(%doc : memref<?x?xi32>)" : "")
    << (c.attrs.empty() ? "" : " {" + c.attrs + "}") << "\n      : " << q.str()
    << ", " << kv.str() << ", " << v.str() << "\n      -> " << out.str() << ", "
    << lse.str() << "\n"
    << c.region << "  return %out, %lse : " << out.str() << ", " << lse.str()
    << "\n}\n";
  return s.str();
}

class AttentionOnGpu : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionOnGpu, MatchesReference) {
  const Case &c = GetParam();
  std::string text = variantText(c);
  testing::expectMatchesReference(text, c.name + ".mlir", c.shape, c.name,
                                  text);
}

RunShape shapeOf(int batch, int q, int kv, int splits = 0, unsigned seed = 7) {
  RunShape s;
  s.batch = batch;
  s.qLen = q;
  s.kvLen = kv;
  s.splits = splits;
  s.seed = seed;
  return s;
}

// A relative-position bias: distance from the query's aligned position
// qi + kv_len - q_len, so it holds under chunked prefill and decode.
const char *kBiasRegion =
    "      score_mod {\n"
    "      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, "
    "%ql: index, %kl: index, %ids: memref<?x?xi32>):\n"
    "        %c7 = arith.constant 7 : index\n"
    "        %end = arith.addi %i, %kl : index\n"
    "        %p = arith.subi %end, %ql : index\n"
    "        %far = arith.cmpi ugt, %p, %j : index\n"
    "        %back = arith.subi %p, %j : index\n"
    "        %ahead = arith.subi %j, %p : index\n"
    "        %d = arith.select %far, %back, %ahead : index\n"
    "        %bucket = arith.minui %d, %c7 : index\n"
    "        %di = arith.index_cast %bucket : index to i32\n"
    "        %df = arith.sitofp %di : i32 to f32\n"
    "        %w = arith.constant -0.25 : f32\n"
    "        %bias = arith.mulf %df, %w : f32\n"
    "        %r = arith.addf %s, %bias : f32\n"
    "        attn.yield %r : f32\n"
    "      }\n";
// The query's document is read at its aligned position.
const char *kDocumentMask =
    "      mask_mod {\n"
    "      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, "
    "%kl: index, %ids: memref<?x?xi32>):\n"
    "        %end = arith.addi %i, %kl : index\n"
    "        %p = arith.subi %end, %ql : index\n"
    "        %qd = memref.load %ids[%b, %p] : memref<?x?xi32>\n"
    "        %kd = memref.load %ids[%b, %j] : memref<?x?xi32>\n"
    "        %same = arith.cmpi eq, %qd, %kd : i32\n"
    "        attn.yield %same : i1\n"
    "      }\n";
// Causal written by hand: the key is at or before the query's aligned
// position. It must agree with the declarative `causal` in prefill, chunked
// prefill and decode (where a mask on qi alone would see only key 0).
const char *kCausalByHand =
    "      mask_mod {\n"
    "      ^bb0(%b: index, %h: index, %i: index, %j: index, %ql: index, "
    "%kl: index):\n"
    "        %end = arith.addi %i, %kl : index\n"
    "        %p = arith.subi %end, %ql : index\n"
    "        %seen = arith.cmpi ule, %j, %p : index\n"
    "        attn.yield %seen : i1\n"
    "      }\n";
// The math functions the issue names, kept finite for every score: the
// logarithms and roots read 1 + |s|, the exponentials bounded values.
const char *kMathScoreMod =
    "      score_mod {\n"
    "      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, "
    "%ql: index, %kl: index):\n"
    "        %one = arith.constant 1.0 : f32\n"
    "        %half = arith.constant 0.5 : f32\n"
    "        %tenth = arith.constant 0.1 : f32\n"
    "        %t = math.tanh %s : f32\n"
    "        %e = math.erf %s : f32\n"
    "        %a = math.absf %s : f32\n"
    "        %a1 = arith.addf %a, %one : f32\n"
    "        %l = math.log %a1 : f32\n"
    "        %l2 = math.log2 %a1 : f32\n"
    "        %r = math.sqrt %a : f32\n"
    "        %rs = math.rsqrt %a1 : f32\n"
    "        %p = math.powf %a1, %half : f32\n"
    "        %x = math.exp %e : f32\n"
    "        %x2 = math.exp2 %t : f32\n"
    "        %m = arith.maximumf %t, %e : f32\n"
    "        %u0 = arith.mulf %t, %half : f32\n"
    "        %u1 = arith.addf %s, %u0 : f32\n"
    "        %u2 = arith.addf %l, %l2 : f32\n"
    "        %u3 = arith.mulf %r, %rs : f32\n"
    "        %u4 = arith.subf %u3, %u2 : f32\n"
    "        %u5 = arith.addf %p, %x : f32\n"
    "        %u6 = arith.addf %u5, %x2 : f32\n"
    "        %u7 = arith.addf %u6, %m : f32\n"
    "        %u8 = arith.addf %u4, %u7 : f32\n"
    "        %u9 = arith.mulf %u8, %tenth : f32\n"
    "        %res = arith.addf %u1, %u9 : f32\n"
    "        attn.yield %res : f32\n"
    "      }\n";

std::vector<Case> cases() {
  std::vector<Case> all;
  auto add = [&](Case c) { all.push_back(c); };
  // Prefill: MHA, GQA 4/7/8, MQA; dense and ragged; masks; head dims.
  add({"mha_causal_dense_d128", 8, 8, 128, "bf16", false, false, "", "causal",
       "", false, shapeOf(2, 200, 200)});
  add({"gqa4_causal_ragged_d128", 32, 8, 128, "bf16", false, true, "ragged",
       "causal", "", false, shapeOf(3, 300, 300)});
  add({"gqa7_causal_ragged_d128", 28, 4, 128, "bf16", false, true, "ragged",
       "causal", "", false, shapeOf(2, 190, 190)});
  add({"gqa8_none_dense_d64_f16", 16, 2, 64, "f16", false, false, "", "", "",
       false, shapeOf(2, 130, 333)});
  add({"gqa1_none_ragged_d128", 4, 4, 128, "bf16", false, true, "ragged", "",
       "", false, shapeOf(2, 100, 100)});
  add({"mqa_causal_dense_d128", 8, 1, 128, "bf16", false, false, "", "causal",
       "", false, shapeOf(2, 150, 150)});
  add({"gqa4_causal_q_shorter_than_kv", 8, 2, 128, "bf16", false, false, "",
       "causal", "", false, shapeOf(2, 48, 321)});
  add({"mha_causal_d256_bf16", 4, 4, 256, "bf16", false, false, "", "causal",
       "", false, shapeOf(2, 160, 160)});
  add({"gqa2_causal_d256_f16", 4, 2, 256, "f16", false, true, "ragged",
       "causal", "", false, shapeOf(2, 130, 130)});
  add({"mha_causal_d64_f16", 8, 8, 64, "f16", false, false, "", "causal", "",
       false, shapeOf(2, 257, 257)});
  add({"gqa4_window_sinks_d64", 8, 2, 64, "bf16", false, true, "ragged",
       "causal, window = #attn.window<70, 0>, sinks = 5", "", false,
       shapeOf(2, 400, 400)});
  add({"mha_bidirectional_window", 4, 4, 128, "bf16", false, false, "",
       "window = #attn.window<40, 25>", "", false, shapeOf(2, 220, 220)});
  // Chunked prefill into a paged cache.
  add({"gqa4_causal_paged16_nhd_prefill", 16, 4, 128, "bf16", false, true,
       "paged<16, nhd>", "causal", "", false, shapeOf(2, 70, 300)});
  add({"gqa4_causal_paged64_hnd_prefill", 8, 2, 64, "f16", false, true,
       "paged<64, hnd>", "causal", "", false, shapeOf(2, 90, 400)});
  // On sm_90a the warp-specialized producer copies pages in boxes of
  // gcd(page, tile) slots: the smallest page it takes (8), pages longer
  // than the tile (256), boxes smaller than both (128 slots, 96-key tiles
  // of 192/128 head dims: 32). Pages of other sizes (1, 4, 5, 12) are
  // gathered row by row by the producer warps, every head dim's chunk
  // count among them (8, 12, 16, 24 and 32 per row).
  add({"gqa4_causal_paged8_nhd_prefill", 16, 4, 128, "bf16", false, true,
       "paged<8, nhd>", "causal", "", false, shapeOf(2, 150, 333)});
  add({"gqa2_paged256_hnd_prefill", 8, 4, 128, "bf16", false, true,
       "paged<256, hnd>", "", "", false, shapeOf(2, 200, 700)});
  add({"gqa4_causal_paged4_nhd_prefill", 16, 4, 128, "bf16", false, true,
       "paged<4, nhd>", "causal", "", false, shapeOf(2, 70, 300)});
  add({"gqa2_causal_paged1_hnd_d64_prefill", 8, 4, 64, "bf16", false, true,
       "paged<1, hnd>", "causal", "", false, shapeOf(2, 130, 290)});
  add({"gqa4_window_paged5_nhd_d96_f16_prefill", 8, 2, 96, "f16", false, true,
       "paged<5, nhd>", "causal, window = #attn.window<60, 0>, sinks = 2", "",
       false, shapeOf(3, 90, 310)});
  add({"qk192_v128_softcap_paged12_hnd_prefill", 8, 2, 192, "bf16", false, true,
       "paged<12, hnd>", "causal, softcap = 20.0 : f32", "", false,
       shapeOf(2, 140, 390), /*vDim=*/128});
  add({"mha_paged12_nhd_d256_prefill", 4, 4, 256, "bf16", false, true,
       "paged<12, nhd>", "", "", false, shapeOf(2, 100, 260)});
  // Modifiers.
  add({"softcap_causal", 8, 4, 128, "bf16", false, false, "",
       "causal, softcap = 5.0 : f32", "", false, shapeOf(2, 140, 140)});
  add({"alibi_causal", 8, 8, 128, "bf16", false, true, "ragged",
       "causal, alibi", "", false, shapeOf(2, 180, 180)});
  add({"alibi_12_heads", 12, 12, 64, "bf16", false, false, "", "causal, alibi",
       "", false, shapeOf(1, 100, 100)});
  add({"score_mod_relative_bias", 8, 8, 64, "bf16", false, false, "", "",
       kBiasRegion, true, shapeOf(2, 120, 120)});
  add({"mask_mod_document", 8, 8, 128, "bf16", false, false, "", "causal",
       kDocumentMask, true, shapeOf(2, 200, 200)});
  // Regions see the request's lengths: chunked prefill and decode.
  add({"score_mod_relative_bias_chunked_prefill", 8, 2, 64, "bf16", false, true,
       "paged<16, nhd>", "", kBiasRegion, true, shapeOf(2, 70, 300)});
  add({"mask_mod_document_chunked_prefill", 8, 8, 128, "bf16", false, true,
       "ragged", "causal", kDocumentMask, true, shapeOf(2, 60, 250)});
  add({"mask_mod_causal_prefill", 8, 8, 128, "bf16", false, false, "", "",
       kCausalByHand, false, shapeOf(2, 200, 200)});
  add({"mask_mod_causal_chunked_prefill", 16, 4, 128, "bf16", false, true,
       "paged<16, nhd>", "", kCausalByHand, false, shapeOf(2, 70, 300)});
  add({"causal_chunked_prefill_declarative", 16, 4, 128, "bf16", false, true,
       "paged<16, nhd>", "causal", "", false, shapeOf(2, 70, 300)});
  add({"mask_mod_causal_decode", 32, 8, 128, "bf16", true, false,
       "paged<16, nhd>", "", kCausalByHand, false, shapeOf(4, 1, 700)});
  add({"causal_decode_declarative", 32, 8, 128, "bf16", true, false,
       "paged<16, nhd>", "causal", "", false, shapeOf(4, 1, 700)});
  add({"score_mod_math_functions", 8, 4, 128, "bf16", false, false, "",
       "causal", kMathScoreMod, false, shapeOf(2, 150, 150)});
  add({"score_mod_math_functions_decode", 32, 8, 128, "bf16", true, false,
       "paged<16, nhd>", "", kMathScoreMod, false, shapeOf(3, 1, 500)});
  // Decode: split-KV + merge, paged page sizes and orders, GQA packing.
  add({"decode_gqa4_paged1_nhd", 32, 8, 128, "bf16", true, false,
       "paged<1, nhd>", "", "", false, shapeOf(5, 1, 300)});
  add({"decode_gqa8_paged16_hnd", 32, 4, 128, "bf16", true, false,
       "paged<16, hnd>", "", "", false, shapeOf(4, 1, 1000)});
  add({"decode_gqa7_paged64_nhd", 28, 4, 128, "bf16", true, false,
       "paged<64, nhd>", "", "", false, shapeOf(3, 1, 900)});
  add({"decode_mqa_dense", 32, 1, 128, "bf16", true, false, "", "", "", false,
       shapeOf(3, 1, 777)});
  add({"decode_mha_ragged_d64", 8, 8, 64, "f16", true, false, "ragged", "", "",
       false, shapeOf(4, 1, 500)});
  add({"decode_gqa4_d256_paged16_f16", 8, 2, 256, "f16", true, false,
       "paged<16, nhd>", "", "", false, shapeOf(3, 1, 600)});
  add({"decode_window_sinks_paged16", 16, 4, 128, "bf16", true, false,
       "paged<16, nhd>", "window = #attn.window<100, 0>, sinks = 4", "", false,
       shapeOf(3, 1, 800)});
  add({"decode_softcap_paged16", 16, 4, 128, "bf16", true, false,
       "paged<16, nhd>", "softcap = 10.0 : f32", "", false,
       shapeOf(3, 1, 500)});
  add({"decode_one_split", 32, 8, 128, "bf16", true, false, "paged<16, nhd>",
       "", "", false, shapeOf(4, 1, 700, 1)});
  add({"decode_three_splits", 32, 8, 128, "bf16", true, false, "paged<16, nhd>",
       "", "", false, shapeOf(4, 1, 700, 3)});
  add({"decode_sixteen_splits_short", 32, 8, 128, "bf16", true, false,
       "paged<16, nhd>", "", "", false, shapeOf(4, 1, 90, 16)});
  // Ragged batches whose requests take only the splits their keys need,
  // merged by the split that arrives last (one launch); the second has two
  // row blocks per request (32 query heads on one KV head).
  add({"decode_ragged_splits_per_request", 32, 8, 128, "bf16", true, false,
       "paged<16, nhd>", "", "", false, shapeOf(24, 1, 2000)});
  add({"decode_mqa32_ragged_two_row_blocks_f16", 32, 1, 128, "f16", true, false,
       "ragged", "", "", false, shapeOf(5, 1, 3000)});
  // fp8 caches, widened on load: both formats, scales per tensor and per
  // KV head (drawn apart in [0.25, 2), so a swapped or misplaced scale
  // shows), decode with splits, paged orders and chunked prefill. The
  // reference decodes the same bytes exactly and dequantizes in double, so
  // the bound is the 16-bit one: widening is exact, and the scales enter
  // in f32 (a relative error of 2^-24 per score and output).
  auto fp8 = [](Case c, const char *kvElem, int kScales, int vScales) {
    c.kvElem = kvElem;
    c.kScales = kScales;
    c.vScales = vScales;
    return c;
  };
  add(fp8({"fp8_e4m3_gqa4_paged16_decode", 32, 8, 128, "bf16", true, false,
           "paged<16, nhd>", "", "", false, shapeOf(5, 1, 1500)},
          "f8E4M3FN", 1, 8));
  add(fp8({"fp8_e5m2_mha_dense_decode_f16", 8, 8, 128, "f16", true, false, "",
           "", "", false, shapeOf(3, 1, 700)},
          "f8E5M2", 8, 1));
  add(fp8({"fp8_e4m3_mqa_paged64_hnd_decode_split", 16, 1, 128, "bf16", true,
           false, "paged<64, hnd>", "", "", false, shapeOf(2, 1, 3000, 5)},
          "f8E4M3FN", 1, 1));
  add(fp8({"fp8_e4m3_gqa7_paged1_decode_d64", 28, 4, 64, "bf16", true, false,
           "paged<1, nhd>", "", "", false, shapeOf(3, 1, 333)},
          "f8E4M3FN", 4, 4));
  add(fp8({"fp8_e5m2_gqa2_ragged_decode_d256", 8, 4, 256, "bf16", true, false,
           "ragged", "", "", false, shapeOf(2, 1, 900)},
          "f8E5M2", 4, 1));
  add(fp8({"fp8_e4m3_window_sinks_decode", 16, 4, 128, "bf16", true, false,
           "paged<16, nhd>", "window = #attn.window<300, 0>, sinks = 4", "",
           false, shapeOf(3, 1, 1000)},
          "f8E4M3FN", 1, 4));
  add(fp8({"fp8_e4m3_causal_chunked_prefill_paged16", 32, 8, 128, "bf16", false,
           true, "paged<16, hnd>", "causal", "", false, shapeOf(2, 130, 520)},
          "f8E4M3FN", 8, 8));
  add(fp8({"fp8_e5m2_prefill_ragged_d64_noscales_f16", 8, 2, 64, "f16", false,
           true, "ragged", "causal", "", false, shapeOf(2, 150, 150)},
          "f8E5M2", 0, 0));
  // Shared levels of cascade attention: a node's rows (many requests'
  // tokens, any number of them, more than its keys too) over its pages,
  // the keys split across CTAs (forced, and as the launch chooses), merged
  // by the split that arrives last.
  add({"shared_keys_gqa4_paged16", 32, 8, 128, "bf16", false, true,
       "paged<16, nhd>", "shared_keys", "", false, shapeOf(3, 64, 2000)});
  add({"shared_keys_five_splits_paged1_hnd_f16", 16, 4, 64, "f16", false, true,
       "paged<1, hnd>", "shared_keys", "", false, shapeOf(2, 40, 333, 5)});
  add({"shared_keys_more_rows_than_keys_paged64", 8, 2, 128, "bf16", false,
       true, "paged<64, hnd>", "shared_keys, softcap = 20.0 : f32", "", false,
       shapeOf(4, 300, 64)});
  add({"shared_keys_one_row_each_mha_d256", 4, 4, 256, "bf16", false, true,
       "paged<16, nhd>", "shared_keys, scale = 0.05 : f32", "", false,
       shapeOf(5, 1, 900)});
  add(fp8({"shared_keys_fp8_e4m3_gqa8_paged16", 64, 8, 128, "bf16", false, true,
           "paged<16, nhd>", "shared_keys", "", false, shapeOf(2, 24, 1500)},
          "f8E4M3FN", 1, 8));
  return all;
}

/// Head dims off the multiples of 64: every 16-column step (the swizzle of
/// rows of 2 to 30 chunks, loads that do not divide the CTA), qk != v, and
/// the plans that read queries from shared memory.
std::vector<Case> headDimCases() {
  std::vector<Case> all;
  auto add = [&](Case c) { all.push_back(c); };
  auto withV = [](Case c, int v) {
    c.vDim = v;
    return c;
  };
  // Prefill.
  add({"prefill_d16_causal_dense", 8, 8, 16, "bf16", false, false, "", "causal",
       "", false, shapeOf(2, 150, 150)});
  add({"prefill_d32_gqa4_ragged", 8, 2, 32, "f16", false, true, "ragged",
       "causal", "", false, shapeOf(2, 170, 170)});
  add({"prefill_d80_gqa4_causal_ragged", 16, 4, 80, "bf16", false, true,
       "ragged", "causal", "", false, shapeOf(3, 200, 200)});
  add({"prefill_d96_window_sinks_f16", 8, 2, 96, "f16", false, false, "",
       "causal, window = #attn.window<50, 0>, sinks = 3", "", false,
       shapeOf(2, 190, 260)});
  add({"prefill_d112_paged16_hnd", 8, 4, 112, "bf16", false, true,
       "paged<16, hnd>", "causal", "", false, shapeOf(2, 90, 300)});
  // Gathered pages at row widths of 2 and 10 chunks.
  add({"prefill_d16_paged7_hnd", 8, 2, 16, "bf16", false, true, "paged<7, hnd>",
       "causal", "", false, shapeOf(2, 110, 240)});
  add({"prefill_d80_paged3_nhd_f16", 8, 4, 80, "f16", false, true,
       "paged<3, nhd>", "", "", false, shapeOf(2, 90, 200)});
  add({"prefill_d160_mha_dense", 4, 4, 160, "bf16", false, false, "", "", "",
       false, shapeOf(2, 140, 210)});
  add(withV({"qk192_v128_causal_paged128_prefill", 16, 2, 192, "bf16", false,
             true, "paged<128, nhd>", "causal", "", false,
             shapeOf(2, 160, 420)},
            128));
  add(withV({"prefill_qk192_v128_causal_ragged", 16, 2, 192, "bf16", false,
             true, "ragged", "causal", "", false, shapeOf(2, 180, 180)},
            128));
  add(withV({"prefill_qk192_v128_paged64_nhd_f16", 8, 8, 192, "f16", false,
             true, "paged<64, nhd>", "causal", "", false, shapeOf(2, 70, 330)},
            128));
  add({"prefill_d240_gqa3_dense", 6, 2, 240, "bf16", false, false, "", "causal",
       "", false, shapeOf(2, 130, 130)});
  add(withV({"prefill_qk64_v256_ragged", 8, 4, 64, "bf16", false, true,
             "ragged", "causal", "", false, shapeOf(2, 120, 120)},
            256));
  // A region with a window: 32-key tiles, queries from shared memory.
  add({"prefill_d128_mask_mod_window", 8, 8, 128, "bf16", false, false, "",
       "causal, window = #attn.window<90, 0>", kDocumentMask, true,
       shapeOf(2, 200, 200)});
  add({"prefill_d96_score_mod_softcap", 8, 8, 96, "bf16", false, false, "",
       "softcap = 20.0 : f32", kBiasRegion, true, shapeOf(2, 120, 160)});
  // Decode: split-KV and the merge of v-dim partial states.
  add({"decode_d16_ragged", 16, 4, 16, "bf16", true, false, "ragged", "", "",
       false, shapeOf(3, 1, 500)});
  add({"decode_d32_paged3_nhd", 8, 8, 32, "f16", true, false, "paged<3, nhd>",
       "", "", false, shapeOf(3, 1, 400)});
  add({"decode_d80_paged16_nhd", 32, 8, 80, "bf16", true, false,
       "paged<16, nhd>", "", "", false, shapeOf(4, 1, 700)});
  add({"decode_d96_paged1_hnd", 28, 4, 96, "bf16", true, false, "paged<1, hnd>",
       "", "", false, shapeOf(3, 1, 333)});
  add({"decode_d112_paged64_hnd_f16", 16, 2, 112, "f16", true, false,
       "paged<64, hnd>", "", "", false, shapeOf(3, 1, 900)});
  add({"decode_d160_dense", 8, 1, 160, "bf16", true, false, "", "", "", false,
       shapeOf(2, 1, 600)});
  add(withV({"decode_qk192_v128_paged16", 32, 8, 192, "bf16", true, false,
             "paged<16, nhd>", "", "", false, shapeOf(4, 1, 800)},
            128));
  add({"decode_d256_paged16_nhd", 16, 4, 256, "bf16", true, false,
       "paged<16, nhd>", "", "", false, shapeOf(3, 1, 500)});
  // Per-score work beside wide accumulators: queries from shared memory.
  add({"decode_d240_alibi_window_paged16", 16, 4, 240, "bf16", true, false,
       "paged<16, nhd>", "alibi, window = #attn.window<200, 0>, sinks = 2", "",
       false, shapeOf(3, 1, 700)});
  add({"decode_d224_score_mod_paged16", 8, 8, 224, "bf16", true, false,
       "paged<16, nhd>", "", kBiasRegion, true, shapeOf(3, 1, 400)});
  return all;
}

/// The cases of cases() with one of `names`, in cases()'s order.
std::vector<Case> casesNamed(std::initializer_list<std::string_view> names) {
  std::vector<Case> chosen;
  for (const Case &c : cases())
    if (std::find(names.begin(), names.end(), c.name) != names.end())
      chosen.push_back(c);
  return chosen;
}

/// On sm_90a, prefill CTAs are persistent and walk work items. Capping the
/// grid at a few CTAs makes each walk many items: the K/V ring's phases and
/// the query tile's barriers carry over between items, ragged batches leave
/// items with no rows between live ones, and every item's state starts
/// clean. Prefill variants of every kind, each at 1, 3 and 7 CTAs.
std::vector<Case> persistentGridCases() {
  std::vector<Case> all;
  for (const Case &base : casesNamed({
           "gqa4_causal_ragged_d128",
           "gqa4_window_sinks_d64",
           "gqa8_none_dense_d64_f16",
           "mha_causal_d256_bf16",
           "gqa4_causal_paged16_nhd_prefill",
           "gqa2_paged256_hnd_prefill",
           "gqa2_causal_paged1_hnd_d64_prefill",
           "gqa4_window_paged5_nhd_d96_f16_prefill",
           "softcap_causal",
           "alibi_causal",
           "mask_mod_document_chunked_prefill",
           "mha_bidirectional_window",
       })) {
    if (base.decode)
      continue;
    for (int ctas : {1, 3, 7}) {
      Case c = base;
      c.name += "_grid" + std::to_string(ctas);
      c.shape.batch = 3;
      c.shape.gridCtas = ctas;
      all.push_back(c);
    }
  }
  return all;
}

/// On sm_90a a consumer with two query tiles stages its output through
/// one and stores 16-byte chunks (hopper/staged_output.h); an output that
/// is not 16-byte aligned takes element-wise stores from the staged tile
/// instead. Outputs
/// 4 bytes past their allocation's start, for prefill of a few kinds.
std::vector<Case> misalignedOutputCases() {
  std::vector<Case> all;
  for (Case c : casesNamed({
           "gqa4_causal_ragged_d128",
           "gqa8_none_dense_d64_f16",
           "alibi_causal",
           "gqa4_causal_paged16_nhd_prefill",
       })) {
    c.name += "_out_misaligned";
    c.shape.outputOffsetBytes = 4;
    all.push_back(c);
  }
  return all;
}

/// Issue 50: memory no request wrote holds NaN or +Inf (a cache from
/// torch.empty): a paged cache's slots past each request's last key in its
/// last page and its unused pages, and a ragged buffer's rows past the
/// last request. Tiles that hold a request's end load those rows (the
/// copy engine's whole boxes, sm_90a) or zero-fill them (cp.async,
/// mma.sync); their scores are masked, but 0 x NaN is NaN in P.V, so the
/// kernels zero such values. Every schedule paged keys run on (on sm_90a:
/// the warp-specialized prefill over bulk-copied and gathered pages, the
/// mma.sync decode and transposed GQA decode, the mma.sync prefill and
/// decode of fp8 caches), ragged keys with a tail, each with NaN and with
/// +Inf, at key counts that end mid-page and mid-tile (1, 129, 300),
/// split-KV among them.
std::vector<Case> unwrittenSlotCases() {
  std::vector<Case> all;
  auto add = [&](Case c) {
    for (RunShape::Unread fill :
         {RunShape::Unread::NaN, RunShape::Unread::Inf}) {
      Case poisoned = c;
      poisoned.name += fill == RunShape::Unread::NaN ? "_nan" : "_inf";
      poisoned.shape.unread = fill;
      all.push_back(poisoned);
    }
  };
  // Every request `kv` keys (and `q` queries where they vary), so that each
  // ends where the case says.
  auto fixed = [](int batch, int q, int kv, int splits = 0) {
    RunShape s = shapeOf(batch, q, kv, splits, 13);
    s.varyLengths = false;
    return s;
  };
  auto withTail = [](Case c, int rows) {
    c.shape.kvTailRows = rows;
    return c;
  };
  auto fp8 = [](Case c, const char *kvElem) {
    c.kvElem = kvElem;
    c.kScales = 1;
    c.vScales = 1;
    return c;
  };
  // Warp-specialized prefill, pages bulk-copied: a box a page (64 of a
  // 128-key tile: the box past the last page reads it again), boxes of 16,
  // a page longer than the tile, 96-key tiles in boxes of 32 (192/128).
  add({"ws_causal_paged64_nhd_kv300", 16, 4, 128, "bf16", false, true,
       "paged<64, nhd>", "causal", "", false, fixed(2, 90, 300)});
  add({"ws_paged16_hnd_kv1", 8, 2, 128, "bf16", false, true, "paged<16, hnd>",
       "", "", false, fixed(3, 1, 1)});
  add({"ws_paged256_nhd_d64_f16_kv129", 8, 4, 64, "f16", false, true,
       "paged<256, nhd>", "", "", false, fixed(2, 100, 129)});
  add({"ws_qk192_v128_causal_paged32_hnd_kv300", 8, 2, 192, "bf16", false, true,
       "paged<32, hnd>", "causal", "", false, fixed(2, 70, 300), 128});
  add({"ws_causal_paged64_d256_varied", 4, 4, 256, "bf16", false, true,
       "paged<64, nhd>", "causal", "", false, shapeOf(3, 100, 400, 0, 13)});
  add({"ws_mask_mod_paged16_kv300", 8, 8, 128, "bf16", false, true,
       "paged<16, nhd>", "", kCausalByHand, false, fixed(2, 60, 300)});
  // Pages gathered row by row (rows past the end copy the last key).
  add({"ws_causal_paged12_hnd_gathered_kv301", 8, 2, 128, "bf16", false, true,
       "paged<12, hnd>", "causal", "", false, fixed(2, 50, 301)});
  // Ragged keys whose buffer runs on past the last request.
  add(withTail({"ws_causal_ragged_tail_kv300", 8, 2, 128, "bf16", false, true,
                "ragged", "causal", "", false, fixed(3, 100, 300)},
               200));
  add(withTail({"ws_ragged_tail_d64_kv1", 8, 8, 64, "bf16", false, true,
                "ragged", "", "", false, fixed(2, 30, 1)},
               64));
  // mma.sync decode: GQA groups transposed (1, 4, 8) and not (16, and
  // MQA's 32), split-KV.
  add({"decode_gqa4_paged16_nhd_kv300", 32, 8, 128, "bf16", true, false,
       "paged<16, nhd>", "", "", false, fixed(3, 1, 300)});
  add({"decode_gqa8_paged64_hnd_split3_kv1000", 32, 4, 128, "bf16", true, false,
       "paged<64, hnd>", "", "", false, fixed(2, 1, 1000, 3)});
  add({"decode_mha_paged16_d64_kv129", 8, 8, 64, "f16", true, false,
       "paged<16, nhd>", "", "", false, fixed(3, 1, 129)});
  add({"decode_gqa16_paged16_d64_kv129", 32, 2, 64, "f16", true, false,
       "paged<16, nhd>", "", "", false, fixed(3, 1, 129)});
  add({"decode_gqa4_paged1_kv1", 32, 8, 128, "bf16", true, false,
       "paged<1, nhd>", "", "", false, fixed(3, 1, 1)});
  add(withTail({"decode_mqa32_ragged_tail_kv300", 32, 1, 128, "bf16", true,
                false, "ragged", "", "", false, fixed(3, 1, 300)},
               100));
  // fp8 caches (mma.sync on sm_90a: prefill and decode), widened on load.
  add(fp8({"fp8_prefill_causal_paged16_nhd_kv300", 16, 4, 128, "bf16", false,
           true, "paged<16, nhd>", "causal", "", false, fixed(2, 60, 300)},
          "f8E4M3FN"));
  add(fp8({"fp8_decode_gqa4_paged64_hnd_kv129", 32, 8, 128, "bf16", true, false,
           "paged<64, hnd>", "", "", false, fixed(3, 1, 129)},
          "f8E5M2"));
  add(fp8({"fp8_decode_gqa4_paged16_split3_kv1000", 32, 8, 128, "bf16", true,
           false, "paged<16, nhd>", "", "", false, fixed(2, 1, 1000, 3)},
          "f8E4M3FN"));
  return all;
}

INSTANTIATE_TEST_SUITE_P(UnwrittenSlots, AttentionOnGpu,
                         ::testing::ValuesIn(unwrittenSlotCases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(HeadDims, AttentionOnGpu,
                         ::testing::ValuesIn(headDimCases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Variants, AttentionOnGpu, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(PersistentGrids, AttentionOnGpu,
                         ::testing::ValuesIn(persistentGridCases()),
                         [](const auto &info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(MisalignedOutputs, AttentionOnGpu,
                         ::testing::ValuesIn(misalignedOutputCases()),
                         [](const auto &info) { return info.param.name; });

} // namespace
} // namespace attnc
