//===- RegisterReliefTest.cpp - a plan that spills is planned again -------===//
//
// attn-plan's register model is measured, not exact. ptxas's report of
// local memory (jit::localMemoryLines) is how the driver learns that a
// plan ran out of registers; compileVariant then plans the variant again
// with attn-plan's register-relief one step higher and keeps the first
// kernel without local memory. Skipped without NVRTC.
//
//===----------------------------------------------------------------------===//

#include "CacheTestSupport.h"

#include "attnc/Driver/Compile.h"
#include "jit/CubinCache.h"
#include "jit/DiskCache.h"
#include "jit/Nvrtc.h"

#include <gtest/gtest.h>

namespace attnc {
namespace {

// ptxas -v's report lines, as NVRTC's log carries them: only those with
// bytes count, and their bytes add up.
TEST(PtxasLog, LocalMemoryLinesAndBytes) {
  std::string log =
      "ptxas info    : Compiling entry function 'a' for 'sm_90a'\n"
      "ptxas info    : Function properties for a\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Function properties for b\n"
      "    24 bytes stack frame, 20 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Function properties for c\n"
      "    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
  std::vector<std::string> lines = jit::localMemoryLines(log);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("24 bytes stack frame"), std::string::npos);
  EXPECT_NE(lines[1].find("8 bytes stack frame"), std::string::npos);
  EXPECT_EQ(jit::localMemoryBytes(log), 24 + 20 + 16 + 8);
  EXPECT_EQ(jit::localMemoryBytes("no report at all"), 0);
}

// ptxas's own time (-v, CUDA 13), which `attnc compile --time` splits off
// NVRTC's: every report adds up, and a log without one reads 0.
TEST(PtxasLog, CompileTimes) {
  std::string log = "ptxas info    : Compile time = 590.735 ms\n"
                    "ptxas info    : Used 168 registers, used 16 barriers\n"
                    "ptxas info    : Compile time = 9.265 ms\n"
                    "ptxas info    : Compile time = ms\n"
                    "ptxas info    : Compile time = 1" +
                    std::string(400, '0') + " ms\n";
  // The last two are no times: nothing, and past double's range.
  EXPECT_DOUBLE_EQ(jit::ptxasMilliseconds(log), 600.0);
  EXPECT_EQ(jit::ptxasMilliseconds("no report at all"), 0.0);
}

// The parser reads what this NVRTC's ptxas really prints: a kernel that
// indexes a local array at run time keeps it on the stack.
TEST(PtxasLog, ReadsTheRealReport) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
  std::string stack = "extern \"C\" __global__ void k(float *x, int i) {\n"
                      "  float a[64];\n"
                      "  for (int j = 0; j < 64; ++j) a[j] = x[j];\n"
                      "  a[i & 63] += x[64];\n"
                      "  x[0] = a[(i >> 6) & 63];\n"
                      "}\n";
  std::string none = "extern \"C\" __global__ void k(float *x) {\n"
                     "  x[threadIdx.x] *= 2.0f;\n"
                     "}\n";
  StatusOr<jit::CompiledCode> spilled =
      (*nvrtc)->compile(stack, "sm_90a", /*ptx=*/false, /*driverCache=*/false);
  StatusOr<jit::CompiledCode> clean =
      (*nvrtc)->compile(none, "sm_90a", /*ptx=*/false, /*driverCache=*/false);
  ASSERT_TRUE(spilled.ok()) << spilled.status().toString();
  ASSERT_TRUE(clean.ok()) << clean.status().toString();
  EXPECT_GE(jit::localMemoryBytes(spilled->log), 256) << spilled->log;
  EXPECT_NE(clean->log.find("0 bytes stack frame"), std::string::npos)
      << clean->log;
  EXPECT_EQ(jit::localMemoryBytes(clean->log), 0) << clean->log;
  // CUDA 13's ptxas prints its time, which `attnc compile --time` splits off.
  if (std::stoi((*nvrtc)->version()) >= 13)
    EXPECT_GT(jit::ptxasMilliseconds(spilled->log), 0.0) << spilled->log;
}

// Three consumers beside ALiBi, an fp32 output and its LSE at head dim 32:
// the first plan spills on sm_90a (test/tools/attnc-compile-register-
// relief.mlir shows it from the command line).
constexpr const char *kSpillingVariant = R"(
func.func @prefill_d32_alibi(%q: !attn.q<?x8x32xf16>, %k: !attn.kv<?x1x32xf16, paged<128, nhd>>, %v: !attn.kv<?x1x32xf16, paged<128, nhd>>)
    -> (!attn.out<?x8x32xf32>, !attn.lse<?x8>) {
  %out, %lse = attn.attention(%q, %k, %v) {scale = 0.191 : f32, alibi}
      : !attn.q<?x8x32xf16>, !attn.kv<?x1x32xf16, paged<128, nhd>>, !attn.kv<?x1x32xf16, paged<128, nhd>>
      -> !attn.out<?x8x32xf32>, !attn.lse<?x8>
  return %out, %lse : !attn.out<?x8x32xf32>, !attn.lse<?x8>
}
)";

// The kernel kept has no local memory, says which relief planned it, and
// the disk cache gives back the same.
TEST(RegisterRelief, SpillingPlanIsPlannedAgainAndCachedAsKept) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
  std::string cache = test::freshDirectory();
  StatusOr<CompiledVariant> first =
      compileVariant(kSpillingVariant, "relief.mlir", CompileOptions(), cache);
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_FALSE(first->fromCache);
  EXPECT_EQ(first->registerRelief, 1);
  EXPECT_EQ(first->localMemoryBytes, 0);
  EXPECT_TRUE(jit::localMemoryLines(first->ptxasLog).empty())
      << first->ptxasLog;
  EXPECT_TRUE(first->reliefError.ok()) << first->reliefError.toString();

  // The relief that was asked for is where the planner starts.
  CompileOptions asked;
  asked.registerRelief = 1;
  StatusOr<CompiledVariant> direct =
      compileVariant(kSpillingVariant, "relief.mlir", asked, "-");
  ASSERT_TRUE(direct.ok()) << direct.status().toString();
  EXPECT_EQ(direct->registerRelief, 1);
  EXPECT_EQ(direct->cuda, first->cuda);

  forgetCompiledVariants();
  StatusOr<CompiledVariant> again =
      compileVariant(kSpillingVariant, "relief.mlir", CompileOptions(), cache);
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_TRUE(again->fromCache);
  EXPECT_EQ(again->registerRelief, 1);
  EXPECT_EQ(again->localMemoryBytes, 0);
  EXPECT_EQ(again->cubin, first->cubin);
}

// The relief walks its steps through cubin entries too: with only the
// cubins on disk (the variant's own entry gone, as when another variant
// emitted the same CUDA), the first step's cached ptxas report still says
// it spilled, and the kept step's cubin comes back, with no NVRTC.
TEST(RegisterRelief, ReliefStepsAreFoundAsCubinEntries) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
  forgetCompiledVariants();
  std::string cache = test::freshDirectory();
  StatusOr<CompiledVariant> first =
      compileVariant(kSpillingVariant, "relief.mlir", CompileOptions(), cache);
  ASSERT_TRUE(first.ok()) << first.status().toString();
  ASSERT_EQ(first->registerRelief, 1);
  jit::DiskCache disk(cache);
  StatusOr<std::vector<jit::DiskCache::Entry>> entries = disk.list();
  ASSERT_TRUE(entries.ok()) << entries.status().toString();
  int cubins = 0;
  for (const jit::DiskCache::Entry &entry : *entries) {
    std::optional<std::string> payload = disk.get(entry.key);
    ASSERT_TRUE(payload.has_value());
    if (jit::decodeCubinEntry(*payload))
      ++cubins;
    else
      ASSERT_EQ(unlink((cache + "/" + entry.key + ".entry").c_str()), 0);
  }
  EXPECT_EQ(cubins, 2) << "the spilling step's cubin and the kept one";

  forgetCompiledVariants();
  StatusOr<CompiledVariant> again =
      compileVariant(kSpillingVariant, "relief.mlir", CompileOptions(), cache);
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ(again->cubinSource, CubinSource::Disk);
  EXPECT_TRUE(again->fromCache);
  EXPECT_EQ(again->nvrtcMs, 0);
  EXPECT_GT(again->frontendMs, 0);
  EXPECT_EQ(again->registerRelief, 1);
  EXPECT_EQ(again->localMemoryBytes, 0);
  EXPECT_EQ(again->cubin, first->cubin);
  EXPECT_EQ(again->cuda, first->cuda);
}

// A plan whose kernel fits its registers is kept as planned.
TEST(RegisterRelief, PlanThatFitsIsKept) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
  const char *variant = R"(
func.func @prefill_d64(%q: !attn.q<?x16x64xbf16>, %k: !attn.kv<?x16x64xbf16>, %v: !attn.kv<?x16x64xbf16>)
    -> !attn.out<?x16x64xbf16> {
  %out = attn.attention(%q, %k, %v) {causal}
      : !attn.q<?x16x64xbf16>, !attn.kv<?x16x64xbf16>, !attn.kv<?x16x64xbf16> -> !attn.out<?x16x64xbf16>
  return %out : !attn.out<?x16x64xbf16>
}
)";
  StatusOr<CompiledVariant> compiled =
      compileVariant(variant, "fits.mlir", CompileOptions(), "-");
  ASSERT_TRUE(compiled.ok()) << compiled.status().toString();
  EXPECT_EQ(compiled->registerRelief, 0);
  EXPECT_EQ(compiled->localMemoryBytes, 0) << compiled->ptxasLog;
  EXPECT_TRUE(compiled->reliefError.ok());
}

} // namespace
} // namespace attnc
