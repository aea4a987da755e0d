//===- LaunchValuesTest.cpp - a variant's numbers are launch values -------===//
//
// Window extents, sinks, the scale and the soft-cap reach the device as
// launch values (attnc::VariantValues), not as constants of the emitted
// source: variants that differ only in them emit the same CUDA, so they
// can share one kernel, and each one's program carries its own numbers.
//
//===----------------------------------------------------------------------===//

#include "attnc/Driver/Pipeline.h"
#include "exec/Program.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace attnc {
namespace {

struct Lowered {
  std::string cuda;
  Program program;
};

/// A causal GQA attention of `qHeads` over `kvHeads` with `attributes`
/// added to its op, lowered to CUDA with its program; `queries` is its
/// query length ("?" for a prefill, "1" for a decode).
Lowered lower(const std::string &attributes, int qHeads = 32, int kvHeads = 8,
              const std::string &queries = "?") {
  std::string q =
      "!attn.q<" + queries + "x" + std::to_string(qHeads) + "x128xbf16>";
  std::string kv = "!attn.kv<?x" + std::to_string(kvHeads) + "x128xbf16>";
  std::string out =
      "!attn.out<" + queries + "x" + std::to_string(qHeads) + "x128xbf16>";
  std::string text = "func.func @f(%q: " + q + ", %k: " + kv + ", %v: " + kv +
                     ") -> " + out +
                     " {\n  %o = attn.attention(%q, %k, %v) "
                     "{causal" +
                     attributes + "}\n      : " + q + ", " + kv + ", " + kv +
                     " -> " + out + "\n  return %o : " + out + "\n}\n";
  mlir::MLIRContext context;
  registerAttncDialects(context);
  DiagnosticCollector diagnostics(context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      diagnostics.parse(text, "values.mlir");
  Lowered lowered;
  EXPECT_TRUE(module) << diagnostics.text();
  if (!module)
    return lowered;
  EXPECT_TRUE(mlir::succeeded(lowerVariant(*module, CompileOptions(),
                                           Stage::EmitC, &lowered.program)) &&
              mlir::succeeded(printCuda(*module, lowered.cuda)))
      << diagnostics.text();
  return lowered;
}

const VariantValues &attentionValues(const Lowered &lowered) {
  static const VariantValues none{};
  for (const LaunchSpec &launch : lowered.program.launches)
    if (launch.kind == LaunchSpec::Kind::Attention)
      return launch.values;
  ADD_FAILURE() << "no attention launch";
  return none;
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// Two windows, sink counts and scales: one source, two programs with the
// numbers each variant wrote.
TEST(LaunchValues, VariantsDifferingOnlyInNumbersEmitOneSource) {
  Lowered a =
      lower(", window = #attn.window<128, 0>, sinks = 4, scale = 0.125 : f32");
  Lowered b = lower(", window = #attn.window<4000, 0>, sinks = 64, "
                    "scale = 0.0883883 : f32");
  ASSERT_FALSE(a.cuda.empty());
  EXPECT_EQ(a.cuda, b.cuda);
  const VariantValues &va = attentionValues(a), &vb = attentionValues(b);
  EXPECT_EQ(va.window_left, 128);
  EXPECT_EQ(vb.window_left, 4000);
  EXPECT_EQ(va.sinks, 4);
  EXPECT_EQ(vb.sinks, 64);
  EXPECT_TRUE(sameBits(va.scale, 0.125f));
  EXPECT_TRUE(sameBits(vb.scale, 0.0883883f));
  // The factors the inner loops read, from the one definition.
  EXPECT_TRUE(sameBits(vb.scale_log2, withScoreFactors(vb).scale_log2));
  EXPECT_GT(vb.scale_log2, vb.scale);
}

// A soft-capped kernel compiles its scale and soft-cap in (its loop ran
// 2 % slower reading them, P4): two caps, two sources; its launch values
// still carry them.
TEST(LaunchValues, SoftCappedKernelsCompileTheirScoresIn) {
  Lowered a = lower(", softcap = 30.0 : f32");
  Lowered b = lower(", softcap = 50.0 : f32");
  ASSERT_FALSE(a.cuda.empty());
  EXPECT_NE(a.cuda, b.cuda);
  EXPECT_NE(a.cuda.find("kCompiledSoftcap = 30.0f"), std::string::npos);
  EXPECT_TRUE(sameBits(attentionValues(b).softcap, 50.0f));
  EXPECT_TRUE(sameBits(attentionValues(b).tanh_scale,
                       attentionValues(b).scale / 50.0f));
}

// Which numbers apply is structure: a soft-cap, a window or sinks added to
// a variant change its source.
TEST(LaunchValues, WhichNumbersApplyIsStructure) {
  std::string plain = lower("").cuda;
  ASSERT_FALSE(plain.empty());
  std::string window = lower(", window = #attn.window<128, 0>").cuda;
  EXPECT_NE(plain, lower(", softcap = 30.0 : f32").cuda);
  EXPECT_NE(plain, window);
  EXPECT_NE(window, lower(", window = #attn.window<128, 0>, sinks = 4").cuda);
  // The default scale, 1/sqrt(128), is a launch value like any other.
  EXPECT_EQ(plain, lower(", scale = 0.5 : f32").cuda);
  EXPECT_TRUE(sameBits(attentionValues(lower("")).scale,
                       float(1.0 / std::sqrt(128.0))));
}

// Head counts stay structure: as launch values they cost short requests
// 1.4 % (P8, H200: the work order's division by them per item) and more
// registers in decode; the GQA group shapes a CTA's rows either way.
TEST(LaunchValues, HeadCountsAreStructure) {
  for (const char *queries : {"?", "1"}) {
    std::string heads32 = lower("", 32, 8, queries).cuda;
    ASSERT_FALSE(heads32.empty());
    EXPECT_NE(heads32, lower("", 64, 16, queries).cuda) << queries;
  }
}

} // namespace
} // namespace attnc
