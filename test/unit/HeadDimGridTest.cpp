//===- HeadDimGridTest.cpp - every head dim through NVRTC, without spills -===//
//
// The contract on head dims: any query/key and value head dim that is a
// multiple of 16 from 16 to 256 (qk != v included) compiles for prefill and
// decode to a cubin whose ptxas report shows no spills, and any other head
// dim is refused by attn-plan with a diagnostic that names it. Never an
// NVRTC or ptxas error. Skipped without NVRTC.
//
//===----------------------------------------------------------------------===//

#include "CompileOutcome.h"
#include "VariantGenerator.h"
#include "jit/Nvrtc.h"

#include <gtest/gtest.h>

namespace attnc {
namespace {

using property::Outcome;

struct GridCase {
  int qk, v;
  bool decode;
  std::string elem = "bf16";
  /// Declarative masks and modifiers, and whether to add both regions.
  std::string attrs;
  bool regions = false;
  /// Slots of a page of the keys and values; 0 for the default layout.
  int pageSize = 0;

  std::string name() const {
    return std::string(decode ? "decode" : "prefill") + "_qk" +
           std::to_string(qk) + "_v" + std::to_string(v) + "_" + elem +
           (attrs.empty() && !regions ? "" : "_modified") +
           (pageSize ? "_pages" + std::to_string(pageSize) : "");
  }
};

/// Prefill of a ragged batch against ragged keys, or decode against a paged
/// cache (split-KV, so the merge kernel is compiled too); GQA 32/8. A case's
/// page size pages the keys and values of either.
std::string variantText(const GridCase &c) {
  std::string seq = c.decode ? "1" : "?";
  std::string qLayout = c.decode ? "" : ", ragged";
  std::string kvLayout =
      c.pageSize ? ", paged<" + std::to_string(c.pageSize) + ", nhd>"
      : c.decode ? ", paged<16, nhd>"
                 : ", ragged";
  auto dims = [&](int heads, int dim) {
    return std::to_string(heads) + "x" + std::to_string(dim) + "x" + c.elem;
  };
  std::string q = "!attn.q<" + seq + "x" + dims(32, c.qk) + qLayout + ">";
  std::string k = "!attn.kv<?x" + dims(8, c.qk) + kvLayout + ">";
  std::string v = "!attn.kv<?x" + dims(8, c.v) + kvLayout + ">";
  std::string out = "!attn.out<" + seq + "x" + dims(32, c.v) + qLayout + ">";
  std::string lse = "!attn.lse<" + seq + "x32" + qLayout + ">";
  // The generator's menu: a relative-position bias read from a captured
  // table and a document mask read from captured ids.
  property::RegionText regions =
      c.regions ? property::menuRegions("relative_bias", "document", 32)
                : property::RegionText();
  std::string attrs = c.attrs.empty() ? "" : " {" + c.attrs + "}";
  return "func.func @" + c.name() + "(%q: " + q + ", %k: " + k + ", %v: " + v +
         regions.functionArgs + ") -> (" + out + ", " + lse +
         ") {\n  %out, %lse = attn.attention(%q, %k, %v)" +
         regions.capturesClause + attrs + "\n      : " + q + ", " + k + ", " +
         v + "\n      -> " + out + ", " + lse + "\n" + regions.regions +
         "  return %out, %lse : " + out + ", " + lse + "\n}\n";
}

bool haveNvrtc(std::string &why) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    why = nvrtc.status().message();
  return nvrtc.ok();
}

/// Compiles every case on a few threads and checks each: a cubin with a
/// ptxas report for each kernel and no local memory.
void expectAllCompileWithoutSpills(const std::vector<GridCase> &cases,
                                   const CompileOptions &options = {}) {
  std::vector<Outcome> outcomes(cases.size());
  property::parallelFor(int(cases.size()), [&](int i) {
    outcomes[i] = property::compileAndJudge(variantText(cases[i]),
                                            cases[i].name() + ".mlir", options);
  });
  for (size_t i = 0; i < cases.size(); ++i) {
    const GridCase &c = cases[i];
    const Outcome &o = outcomes[i];
    SCOPED_TRACE(c.name());
    ASSERT_EQ(o.kind, Outcome::Kind::Compiled) << o.detail << "\n"
                                               << variantText(c);
    // One report per kernel: the attention kernel, which merges decode's
    // KV splits itself.
    size_t reports = 0;
    for (size_t at = o.detail.find("bytes spill stores");
         at != std::string::npos;
         at = o.detail.find("bytes spill stores", at + 1))
      ++reports;
    EXPECT_EQ(reports, 1u) << o.detail;
    EXPECT_TRUE(o.spills.empty()) << "local memory:\n"
                                  << o.spills.front() << "\n"
                                  << variantText(c);
    // ptxas says when it serializes wgmma (C7512, C7518, ...) or ignores
    // setmaxnreg (C7508): the warp-specialized schedule would still be
    // right, and far slower.
    EXPECT_EQ(o.detail.find("Potential Performance Loss"), std::string::npos)
        << o.detail;
    EXPECT_EQ(o.detail.find("C7508"), std::string::npos) << o.detail;
    EXPECT_TRUE(o.reliefError.ok()) << o.reliefError.toString();
    std::cout << "[ " << c.name() << " ] " << int(o.milliseconds) << " ms";
    if (o.registerRelief > 0)
      std::cout << ", register relief " << o.registerRelief;
    std::cout << "\n";
  }
}

TEST(HeadDimGrid, EveryMultipleOf16CompilesWithoutSpills) {
  std::string why;
  if (!haveNvrtc(why))
    GTEST_SKIP() << "no NVRTC: " << why;
  std::vector<GridCase> cases;
  for (bool decode : {false, true}) {
    for (int d : property::gridHeadDims())
      cases.push_back({d, d, decode});
    cases.push_back({192, 128, decode}); // DeepSeek's qk 192 / v 128
    for (auto [qk, v] : {std::pair{80, 80}, {96, 96}, {192, 128}})
      cases.push_back({qk, v, decode, "f16"});
  }
  expectAllCompileWithoutSpills(cases);
}

// Ampere (sm_80, 164 KiB of shared memory per CTA) at the dims where the
// swizzle, the loads or the tiles change shape.
TEST(HeadDimGrid, Sm80CompilesWithoutSpills) {
  std::string why;
  if (!haveNvrtc(why))
    GTEST_SKIP() << "no NVRTC: " << why;
  CompileOptions a100;
  a100.arch = "sm_80";
  a100.sms = 108;
  a100.smem = 166912;
  std::vector<GridCase> cases;
  for (bool decode : {false, true})
    for (auto [qk, v] : {std::pair{16, 16},
                         {48, 48},
                         {80, 80},
                         {96, 96},
                         {112, 112},
                         {160, 160},
                         {192, 128},
                         {240, 240},
                         {256, 256}})
      cases.push_back({qk, v, decode});
  expectAllCompileWithoutSpills(cases, a100);
}

/// Every declarative mask and modifier at once (the heaviest cases add both
/// regions).
constexpr const char *kEveryDeclarative =
    "causal, window = #attn.window<100, 0>, sinks = 4, softcap = 30.0 : f32, "
    "alibi";

// Every declarative modifier and mask plus both regions (with captured
// buffers) at once: the most registers a variant asks for, at the dims where
// the accumulators are widest or the tiles change shape.
TEST(HeadDimGrid, HeaviestVariantsCompileWithoutSpills) {
  std::string why;
  if (!haveNvrtc(why))
    GTEST_SKIP() << "no NVRTC: " << why;
  std::vector<GridCase> cases;
  for (bool decode : {false, true})
    for (auto [qk, v] : {std::pair{16, 16},
                         {64, 64},
                         {96, 96},
                         {128, 128},
                         {192, 128},
                         {240, 240},
                         {256, 256}})
      cases.push_back({qk, v, decode, "bf16", kEveryDeclarative, true});
  expectAllCompileWithoutSpills(cases);
}

// The same over pages: of one slot, which the warp-specialized producer
// gathers row by row and which keeps it more registers (a region kernel at
// head dim 256 spilled 166 bytes there before the masks' per-row key
// ranges), and of 16, which its copy engine loads.
TEST(HeadDimGrid, HeaviestPrefillOverPagesCompilesWithoutSpills) {
  std::string why;
  if (!haveNvrtc(why))
    GTEST_SKIP() << "no NVRTC: " << why;
  std::vector<GridCase> cases;
  for (int pageSize : {1, 16})
    for (auto [qk, v] : {std::pair{64, 64}, {128, 128}, {192, 128}, {256, 256}})
      cases.push_back(
          {qk, v, false, "bf16", kEveryDeclarative, true, pageSize});
  expectAllCompileWithoutSpills(cases);
}

// Head dims the kernels cannot take are refused by attn-plan, which names
// the dims and what is supported, before any C++ is printed.
TEST(HeadDimGrid, OtherHeadDimsAreRefusedByName) {
  for (auto [qk, v] : {std::pair{8, 8},
                       {24, 24},
                       {40, 40},
                       {128, 72},
                       {264, 264},
                       {512, 512},
                       {576, 512}}) {
    GridCase c{qk, v, false};
    std::string text = variantText(c);
    Outcome o =
        property::compileAndJudge(text, c.name() + ".mlir", CompileOptions());
    std::string dims = std::to_string(qk) + "/" + std::to_string(v);
    if (o.kind == Outcome::Kind::Failed &&
        o.detail.find("NVRTC is needed") != std::string::npos)
      GTEST_SKIP() << o.detail;
    ASSERT_EQ(o.kind, Outcome::Kind::Refused) << o.detail << "\n" << text;
    EXPECT_NE(o.detail.find("head dim " + dims), std::string::npos) << o.detail;
    EXPECT_NE(o.detail.find("multiple of 16 from 16 to 256"), std::string::npos)
        << o.detail;
  }
}

} // namespace
} // namespace attnc
